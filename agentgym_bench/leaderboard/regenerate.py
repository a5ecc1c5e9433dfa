"""Re-generation of a local model's replies (check 7 of :func:`~agentgym_bench.leaderboard.verify.verify`) and its
cost cap.

Every reply the file's model wrote is generated again from the published weights (the model folder the file names,
found and hash-checked by :func:`regeneration_blocker`), from the replayed observations, with the recorded sampling
settings and history window, under the evaluation's keys and in the evaluation's batches
(:func:`evaluation_batches`), and compared in text and tokens; :func:`regenerate_all` tolerates a few differing
replies, each (with its episode's later ones) a keyed draw of the weights (:func:`check_draws`), and refuses the file
past :func:`allowed_differences`. Every reply is re-generated, none sampled, so nothing the submitter
controls decides what is checked; and since a reply's last logit bits depend on the rows batched with it, the same
batches make an honest file's replies come back identical on the machine that evaluated it.

The work is metered as it is done (2 x parameters x tokens forward-pass FLOPs, the parameters read from the weight
files: :func:`parameter_count`) and stops once it passes the cap (:data:`REGENERATION_CAP`). Before anything is
generated, the cap is checked against the suite's first prompts only (:func:`prompt_tokens`,
:func:`regeneration_cost_blocker`): their number and text are the suite's and the envs', so nothing the file holds
moves that line; past them, each call reads only replies that earlier calls re-generated identically.

A model-free policy's replies (check 6) are re-generated during replay (:meth:`~agentgym_bench.benchmark.kinds.Kind.
replay`, which :mod:`agentgym_bench.leaderboard.verify` asks for).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym_bench.benchmark.kinds import kind_of, policy_turns, suite_policy
from agentgym_bench.benchmark.replay import EpisodeText, Move, same_reply
from agentgym_bench.benchmark.results import Results, ResultsError
from agentgym_bench.benchmark.suites import Suite
from agentgym_bench.paths import is_machine_path, published_board
from agentgym_bench.progress import progress as progress_bar
from agentgym_bench.rollout.specs import WEIGHT_SUFFIXES, locate_model, model_sha256, sampling_of
from agentgym_bench.rollout.tokens import encode_many, render_many


def model_folder(model: str | None, root: str | os.PathLike | None = None,
                 models: str | os.PathLike | None = None) -> tuple[str | None, str | None]:
    """``(folder, None)``: the local model folder a file's ``metadata.policy.model`` names, found without reading
    anything a file could point elsewhere; or ``(None, why not)``.

    The name is never expanded (``~``, ``$``). On a published board (``models``: its ``models/`` folder) it must be a
    path relative to the repository root ``root`` that stays, symbolic links resolved, inside the ``models/`` folder
    of a published board of the repository (:func:`published_model_roots`: this board's or a sibling's, so that a
    model published with one board's files is re-generated on the others' too). Elsewhere (a
    private board, the machine's own) it is looked up as ``eval`` records it
    (:func:`~agentgym_bench.rollout.specs.locate_model`: relative to ``root``, a name under the home's ``models/``,
    or an absolute path). Either way the folder must be a Hugging Face model folder (``config.json``) before its
    weights are hashed."""
    if not model:
        return None, "no model is recorded"
    if "~" in model or "$" in model:
        return None, f"model {model} names a path with ~ or $, which is not expanded here"
    if models is not None:
        if is_machine_path(model):
            return None, f"model {model} is a path of the machine that evaluated it"
        folder = (Path(root if root is not None else Path.cwd()) / model).resolve()
        if _published_owner(folder, models) is None:
            return None, (f"model {model} is not in the models/ folder of this board or of another published board "
                          "of this repository, so its weights are not published here")
        path = str(folder) if folder.is_dir() else None
    else:
        path = locate_model(model, root)
    if path is None:
        return None, f"model {model} is not on this machine"
    if not Path(path, "config.json").is_file():
        return None, f"model {model} is not a Hugging Face model folder here (no config.json)"
    return path, None


def regeneration_blocker(results: Results, root: str | os.PathLike | None = None,
                         models: str | os.PathLike | None = None) -> tuple[str | None, str | None]:
    """``(model folder, None)`` if the file's replies can be re-generated here (check 7), else ``(None, why not)``;
    ``root`` and ``models``: where the model may be (:func:`model_folder`).

    A file that names weights found here is bound to them: a :class:`~agentgym_bench.benchmark.results.ResultsError`
    refuses it if their hash matches but it leaves a reply without ``token_ids`` (a model's file that was not
    sampled with keyed draws is refused before, by :func:`~agentgym_bench.leaderboard.verify.check_reply_claims`).
    ``eval`` writes neither, and such a file could only be replayed while the board showed the model's name beside
    it (:func:`check_published_name` binds a published board's names and hashes)."""
    policy = results.metadata["policy"]
    kind, model = policy["kind"], policy["model"]
    if kind != "hf":
        return None, (f"policy kind {kind}: replies are not re-generated here (only model-free policies and local hf "
                      "model folders are)")
    path, why = model_folder(model, root, models)
    if path is None:
        return None, why
    recorded = policy["model_sha256"]
    if recorded is None or model_sha256(path) != recorded:
        return None, f"the weights of model {model} here do not match the recorded model_sha256"
    untokened = next((where for where, turn in policy_turns(results) if turn.token_ids is None), None)
    if untokened is not None:
        raise ResultsError(f"{untokened} records no token_ids, but eval records them for every reply of a model; "
                           f"the file names the weights of {model}, which are here, and so is re-generated token for "
                           "token")
    return path, None


def published_model_roots(models: str | os.PathLike) -> list[Path]:
    """The ``models/`` folders of every published board beside the one whose ``models/`` folder is ``models`` (the
    boards of one ``leaderboards/`` folder, this one's first), resolved: where a published board's files may name a
    model, and whose weights no other file may claim."""
    inside = Path(models).resolve()
    boards = inside.parent.parent  # leaderboards/, not there yet when the first board in it is being made
    siblings = sorted(b / "models" for b in boards.iterdir() if (b / "models").is_dir()) if boards.is_dir() else []
    return [inside, *(m.resolve() for m in siblings if m.resolve() != inside)]


def _published_owner(folder: Path, models: str | os.PathLike) -> Path | None:
    """The published model folder (a folder of one of :func:`published_model_roots`) that resolved ``folder`` is or
    lies in, ``None`` if it lies in none."""
    for root in published_model_roots(models):
        if folder.is_relative_to(root) and folder != root:
            return root / folder.relative_to(root).parts[0]
    return None


def published_weights(models: str | os.PathLike) -> dict[str, Path]:
    """``{weights hash: folder}`` of every published model (:func:`published_model_roots`' folders that hold a
    Hugging Face model, ``config.json``, and stay inside their root, links resolved)."""
    folders = [(f.resolve(), root) for root in published_model_roots(models) if root.is_dir()
               for f in sorted(root.iterdir())]
    return {model_sha256(f): f for f, root in folders if f.is_relative_to(root) and (f / "config.json").is_file()}


def check_published_name(results: Results, root: str | os.PathLike | None, models: str | os.PathLike | None) -> None:
    """On a published board (``models``: its ``models/`` folder), a file that names a published model (a path into
    a folder of :func:`published_model_roots`, that folder or below it) or claims the hash of one of their weights
    must be an ``hf`` evaluation of that very folder, named by its path, with its hash, so that it is re-generated:
    a :class:`~agentgym_bench.benchmark.results.ResultsError` otherwise. Else a file of another kind (``vllm``, an
    endpoint), a made-up subfolder, no name at all or a sibling board's model could stand, *replayed*, beside a
    published model's hash and training. A folder of ``models/`` that does not exist yet (an outside team's, whose
    weights the maintainers add after its pull request) is not a published model: its file stays *replayed* until
    they do."""
    if models is None:
        return
    policy = results.metadata["policy"]
    kind, model, recorded = policy["kind"], policy["model"], policy["model_sha256"]
    if model and is_machine_path(model):
        return  # the board refuses a machine path unless the file is already on it (board.check_model_name)
    published = published_weights(models)
    # no name names no folder here, and a published hash still binds it
    folder = (Path(root if root is not None else Path.cwd()) / model).resolve() if model else None
    owner = None if folder is None else _published_owner(folder, models)
    if owner not in published.values() and recorded not in published:
        return
    where = f"model {model}" if owner in published.values() else f"model_sha256 {recorded[:12]}..."
    if kind != "hf" or folder is None or published.get(recorded) != folder:  # that very folder, by its weights' hash
        served = ("; `serve PATH` names the model by its path: serve it with --name NAME for a file of your own"
                  if kind != "hf" else "")
        raise ResultsError(f"metadata.policy names a model this repository's boards publish ({where}); such a file "
                           "must be an hf evaluation of that model's folder, named by its path, with its weights' "
                           f"model_sha256, so that it is re-generated here (this file: kind {kind}, model {model}"
                           f"{served})")


def evaluation_batches(results: Results, suite: Suite, texts: dict[str, dict[int, EpisodeText]]) -> list[list[Move]]:
    """The model's ``generate`` calls that the evaluation made, rebuilt from the file, each call's moves in its order.

    The suite's kind knows the calls its play makes (:meth:`~agentgym_bench.benchmark.kinds.Kind.calls`). ``eval`` of
    a single-agent suite plays every entry at once (:func:`~agentgym_bench.benchmark.episodes.play_suite_episodes`):
    call ``t`` holds turn ``t`` of every episode that lasted that long, entries in the suite's order, seeds ascending;
    or, if ``metadata.compute.batching`` is ``"entry"`` (:func:`~agentgym_bench.benchmark.evaluate.
    evaluate_by_entry`, what the ``eval`` command does), one entry after the other, each as a suite of its own. A
    two-player suite is played entry by entry (:func:`~agentgym_bench.benchmark.matches.play_suite_matches`, all
    matches in lockstep): call ``j`` of an entry holds move ``j`` of every match where the policy made it (every
    match in self-play), seeds ascending. A model's reply can depend on the batch around it (other rows change the
    last bits of its logits), so re-generation makes the same calls, and an honest file's replies come back
    identical on the machine that evaluated it, whatever the batch."""
    history = results.metadata["policy"]["history"]
    by_name = {e.name: e for e in results.entries}
    entries = [by_name[e.name] for e in suite.entries]
    kind = kind_of(suite)
    if results.metadata["compute"].get("batching") == "entry":
        return [call for entry in entries for call in kind.calls([entry], texts, history)]
    return kind.calls(entries, texts, history)


ALLOWED_DIFFERENCES = (2, 0.01)
"""Most replies re-generation may find different and still call the file the named model's (marked *replayed*,
saying so): 2, or 1% of the replies re-generated, whichever is more. Another machine's last logit bits flip a
sampled token rarely (measured: 2 of 3,100 replies between batch shapes on one CPU); more differences than this
refuse the file: its replies are not the named weights' under the recorded sampling. Each tolerated reply must still
be a keyed draw of the weights to within :data:`DRAW_TOLERANCE` (:func:`check_draws`), and so must every later reply
of its episode."""


def allowed_differences(regenerated: int) -> int:
    """Differing replies :func:`regenerate_all` tolerates among ``regenerated`` (:data:`ALLOWED_DIFFERENCES`)."""
    least, share = ALLOWED_DIFFERENCES
    return max(least, int(share * regenerated))


@contextmanager
def evaluation_threads(recorded: Any) -> Iterator[None]:
    """torch's CPU threads set to the evaluation's (``metadata.hardware.torch_threads``, at most the cores here) while
    re-generating, and restored after; unchanged for a file that does not record them. A CPU's matrix products round
    their last bits by the thread count: re-generated on two threads, a file evaluated on one had 1 of its 10,572
    replies flip (2026-12-03), and the entry was *replayed*, not *reproduced*. The count is the file's word, bounded
    by the machine: it can only make re-generation slower, and the FLOP cap meters the work either way."""
    import torch  # noqa: PLC0415 - heavy: only where a model is re-generated

    before = torch.get_num_threads()
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 1:
        torch.set_num_threads(min(recorded, os.cpu_count() or 1))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def regenerate_all(results: Results, suite: Suite, texts: dict[str, dict[int, EpisodeText]], model: str,
                   progress: bool = False, cap: float = math.inf) -> str | None:
    """Re-generate every reply of the file's model in the evaluation's batches (:func:`evaluation_batches`), call by
    call, and compare; ``None`` if all are identical, else why the file is not *reproduced*; a
    :class:`~agentgym_bench.benchmark.results.ResultsError` if more replies differ than a machine's last bits explain
    (:func:`allowed_differences`, checked after every call).

    ``model``: the folder :func:`regeneration_blocker` found, built as ``eval`` builds it
    (:func:`~agentgym_bench.benchmark.kinds.suite_policy`: the recorded sampling settings, the same chunks of
    conversations per forward pass), each reply under the key the evaluation used. A prompt longer than the model
    reads gets an empty reply, as in evaluation. Replies are compared with :func:`same_reply` (text and tokens).

    A reply that differs, and every later reply of its episode (whose prompts read it), is bound by
    :func:`check_draws` instead: each of its tokens must be what the evaluation's key draws from the named weights
    given the recorded tokens before it, to within a machine's last bits. So a tolerated difference is a sampled
    token that another machine's rounding flipped, never a reply or an episode of the submitter's choosing.
    Re-generation stops after the call whose work passes ``cap`` FLOPs (2 x the parameters of the weight files x the
    prompt and reply tokens of every row the model ran; rows too long to run cost nothing): the work done is what
    the model itself costs on these episodes, and nothing a file holds (padded replies, claimed lengths) makes it
    more.
    """
    policy, _ = suite_policy(f"hf:{model}", suite, sampling_of(results.metadata["policy"]))
    calls = evaluation_batches(results, suite, texts)
    parameters = parameter_count(model) if cap < math.inf else 0
    total = sum(len(c) for c in calls)
    flops, done, differing, diverged = 0.0, 0, [], set()
    with (evaluation_threads(results.metadata["hardware"].get("torch_threads")),
          progress_bar(total, "re-generation", "turn", enabled=progress) as bar):
        for i, whole in enumerate(calls):
            call = [m for m in whole if m.episode not in diverged]
            later = [m for m in whole if m.episode in diverged]
            offered = [_Offers(m.tools) for m in call]  # what generate reads of an env: the tools it offers
            generations = (policy.generate([m.messages for m in call], offered, keys=[m.key for m in call])
                           if call else [])
            flops += 2.0 * parameters * sum((g.prompt_tokens or 0) + len(g.token_ids) for g in generations
                                            if g.token_ids)
            wrong = [move for move, g in zip(call, generations, strict=True)
                     if not same_reply(g.text, g.token_ids, move.turn.reply, move.turn.token_ids)]
            differing += wrong
            diverged |= {m.episode for m in wrong}
            flops += 2.0 * parameters * check_draws(policy, wrong + later)
            done += len(call)
            bar.update(len(whole))
            allowed = allowed_differences(done)
            if len(differing) > allowed:
                raise ResultsError(
                    f"re-generation: {len(differing)} of the {done} replies re-generated so far differ (by generate "
                    f"call {i + 1} of {len(calls)}; the first, {differing[0].where}), more than a machine's last "
                    f"logit bits explain (at most {allowed}): the replies are not the named weights' under the "
                    "recorded sampling")
            if flops > cap and i + 1 < len(calls):
                return (f"re-generation stopped at this verifier's cap of {cap:.1e} FLOPs (submit "
                        f"--regeneration-cap) after {i + 1} of {len(calls)} generate calls, about {flops:.1e} FLOPs: "
                        f"{done} of {total} replies re-generated, {_differ_text(differing)}; re-generate it in full "
                        "with `agentgym-bench reproduce` on a GPU")
    if not differing:
        return None
    return (f"re-generation failed: {len(differing)} of the {done} replies re-generated, in "
            f"{len({m.episode for m in differing})} episodes, differ (at most {allowed_differences(done)} may, for "
            f"a machine's last logit bits); the first, {differing[0].where}: the re-generated reply differs from the "
            "recorded text and token_ids. Each such reply, and its episode's later ones, is still what the "
            f"evaluation's key draws from these weights to within {DRAW_TOLERANCE:g} of probability mass a token")


DRAW_TOLERANCE = 1e-4
"""Most probability mass a recorded token may lie from where the evaluation's key draws (:func:`~agentgym_bench.
rollout.draws.token_distance`) and still count as drawn there. Honest flips (a file re-generated in other batches,
whose logits' last bits differ as another machine's do) lie within 4e-8 (`benchmarks/draw_distances.md`); a token a
submitter chose lies a visible share of the mass away (0.22 or more for each of 64 single-token changes to the
published model's replies, 2026-12-02; another near-uniform model's replies under the same key, 0.004)."""


def check_draws(policy: Any, moves: list[Move]) -> int:
    """Refuse, with a :class:`~agentgym_bench.benchmark.results.ResultsError` naming the first, any of ``moves``
    whose recorded reply is not a keyed draw of ``policy`` given its prompt (:func:`~agentgym_bench.rollout.draws.
    draw_distances` above :data:`DRAW_TOLERANCE`); returns the prompt and reply tokens the check ran through the
    model."""
    if not moves:
        return 0
    from agentgym_bench.rollout.draws import draw_distances  # noqa: PLC0415 - brings torch

    measured = draw_distances(policy, [m.messages for m in moves], [m.turn.token_ids or [] for m in moves],
                              [m.key for m in moves], [_Offers(m.tools) for m in moves])
    for move, (distance, _) in zip(moves, measured, strict=True):
        if distance > DRAW_TOLERANCE:
            why = ("sampling cannot write it (a stop token inside it, none at its end short of the reply budget, or "
                   "any reply to a prompt that leaves no room for the budget in the model's positions, which is "
                   "answered empty)" if math.isinf(distance) else
                   f"a token of it lies {distance:.2g} of probability mass from what the evaluation's key draws "
                   f"there, where a machine's last logit bits move it by at most {DRAW_TOLERANCE:g}")
            raise ResultsError(f"re-generation: {move.where}: the recorded reply differs from the re-generated one "
                               f"and is not a draw of the named weights under the recorded sampling: {why}")
    return sum(prompt + len(m.turn.token_ids or []) for m, (_, prompt) in zip(moves, measured, strict=True))


def _differ_text(differing: list[Move]) -> str:
    return "all identical" if not differing else f"{len(differing)} differing (the first, {differing[0].where})"


@dataclass(frozen=True)
class _Offers:
    """Stands for a replayed env where a policy is asked for a reply: the ``tools`` it offered
    (:func:`~agentgym_bench.agent.tools.offered_tools` reads nothing else of an env)."""

    tools: list[dict[str, Any]]


REGENERATION_CAP = 5e13
"""Most work check 7 takes on, in forward-pass FLOPs: a file whose first turns alone would cost more
(:func:`regeneration_cost_blocker`) is not re-generated, and re-generation stops once its work passes it
(:func:`regenerate_all`); either way the file stays *replayed*, the board saying why. The published default model +
SFT's agentgym-v2 file costs about 2.1e12 in full, its first turns 3.5e11 (docs/leaderboard.md has the measured
times); a 0.5B-parameter model's first turns alone are about 1.4e14, hours on a CPU."""
SAFETENSORS_HEADER_BYTES = 16 << 20
"""Largest ``.safetensors`` header :func:`parameter_count` reads (real ones are kilobytes to a few MB)."""


def parameter_count(folder: str | os.PathLike) -> int:
    """The parameters of the weight files in a model folder (those :func:`~agentgym_bench.rollout.specs.
    model_sha256` hashes), read without loading them: a ``.safetensors`` file's header lists its tensors' shapes;
    any other weight file (``.bin``, ``.pt``, ``.gguf``, or a header that cannot be read or claims more than its
    bytes hold) counts as its size in bytes / 2, as 16-bit weights (32-bit ones are counted twice over, which errs
    towards not re-generating)."""
    root = Path(folder)
    total = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES)):
        counted = _safetensors_parameters(path) if path.name.endswith(".safetensors") else None
        total += counted if counted is not None else path.stat().st_size // 2
    return total


def _safetensors_parameters(path: Path) -> int | None:
    """The element count of every tensor a ``.safetensors`` header lists; ``None`` if the header is not one, or if
    a tensor claims more elements than its bytes hold (``data_offsets`` inside the file's data, at least half a byte
    an element: the narrowest dtype is 4 bits), so that a header cannot claim parameters its file does not have."""
    size = path.stat().st_size
    try:
        with path.open("rb") as f:
            length = int.from_bytes(f.read(8), "little")
            if not 2 <= length <= min(SAFETENSORS_HEADER_BYTES, size - 8):
                return None
            header = json.loads(f.read(length))
        tensors = [t for name, t in header.items() if name != "__metadata__"]
        shapes, spans = [t["shape"] for t in tensors], [t["data_offsets"] for t in tensors]
        numbers = [n for shape in shapes for n in shape] + [n for span in spans for n in span]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
            return None
        data = size - 8 - length
        if not all(len(span) == 2 and span[0] <= span[1] <= data and math.prod(shape) <= 2 * (span[1] - span[0])
                   for shape, span in zip(shapes, spans, strict=True)):
            return None
        return sum(math.prod(shape) for shape in shapes)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def prompt_tokens(results: Results, suite: Suite, texts: dict[str, dict[int, EpisodeText]], tokenizer: Any,
                  first_turns: bool = False) -> int:
    """The prompt tokens of every reply of the file's model (``first_turns``: of each episode's first turn only; of
    a match, each seat's first move), rendered with the model's chat template and tokenised as ``generate`` does
    (:func:`~agentgym_bench.rollout.tokens.render_many`, :func:`~agentgym_bench.rollout.tokens.encode_many`). The
    first turns' number is the suite's and their text the env's (they read no reply), so nothing the file holds
    changes that count, which re-generation reads at least; every later prompt reads the file's own replies, so the
    whole count is what evaluating those replies read (``metadata.compute.prompt_tokens``)."""
    moves = [move for call in evaluation_batches(results, suite, texts) for move in call
             if not first_turns or move.key[-1] == 0]  # the key's last element: the turn (a seat's move) it samples
    prompts = render_many(tokenizer, [m.messages for m in moves], [m.tools or None for m in moves])
    encoded = encode_many(tokenizer, prompts)
    return sum(len(encoded[p]) for p in prompts)


def regeneration_cost_blocker(results: Results, suite: Suite, texts: dict[str, dict[int, EpisodeText]],
                              folder: str, tokenizer: Any, cap: float = REGENERATION_CAP) -> str | None:
    """Why check 7 is not attempted here, or ``None``: the first turns' prompts alone (:func:`prompt_tokens`,
    read once by a forward pass of ``2 x parameters`` FLOPs a token, parameters from the weight files here) are
    above ``cap`` FLOPs. Everything comes from the suite's episodes and the verifier's copy of the model; nothing the
    file claims (its replies, ``metadata.compute``) enters. Work past the first turns is metered while it is done
    (:func:`regenerate_all`)."""
    parameters = parameter_count(folder)
    tokens = prompt_tokens(results, suite, texts, tokenizer, first_turns=True)
    flops = 2.0 * parameters * tokens
    if flops <= cap:
        return None
    return (f"not re-generated here: a model of {parameters:,} parameters reading the {tokens:,} prompt tokens of "
            f"the first turns alone is about {flops:.1e} FLOPs, above this verifier's re-generation cap of {cap:.1e} "
            "(submit --regeneration-cap); re-generate it with `agentgym-bench reproduce` on a GPU")


def published_models(board: str | os.PathLike | None) -> Path | None:
    """The ``models/`` folder of a published board (the only place its files' models may be), ``None`` for a
    private board or none."""
    return Path(board) / "models" if board is not None and published_board(board) else None
