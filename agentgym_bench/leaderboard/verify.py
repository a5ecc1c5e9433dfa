"""Verify a results file before it goes on a board: the checks, replay of every entry (as its kind replays it), and
:func:`verify`.

:func:`verify` runs, in this order, each failing with a :class:`~agentgym_bench.benchmark.results.ResultsError`
that names what is wrong:

1. size limits, JSON Schema, no NaN or infinite numbers (:func:`agentgym_bench.benchmark.results.loads`);
2. the suite: name and version equal to the suite given (by default the bundled suite the file names);
3. the entries: exactly the suite's names, each with the entry's env id, ``env_kwargs`` equal to the entry's fixed
   ones plus a ``prompt`` among the entry's ``prompts`` and, optionally, an ``action_format`` among
   :data:`~agentgym_bench.agent.tools.ACTION_FORMATS` (``"tool"``: ``eval --action-format tool``; absent means
   ``"answer"``). Like the prompt it is the submission's choice on every single-agent entry: the episodes, budgets
   and penalties are the same in either format (a match entry has neither);
4. the seeds: exactly the entry's seeds, no missing, foreign or duplicated seed (a quick check of a part of the
   suite, ``eval --episodes`` / ``--entries``, says so in ``metadata.quick_check`` and is refused first); and what
   the file claims of its replies (:func:`check_reply_claims`): a model-free policy's turns record no
   ``token_ids``, and a reply's ``token_ids`` are at most the file's own ``max_new_tokens``; a model's sampling is
   keyed, as ``eval`` records it for every model; and no entry holds
   more successes (or, against the random bargainer, payoff) than any policy reaches without knowing the env's
   random draws (:func:`check_within_reach`);
5. **replay** (:func:`~agentgym_bench.benchmark.kinds.replay_entry`, as the entry's kind replays it): every
   episode's raw replies are fed, in order, to one fresh ``gym.make(env_id, **env_kwargs)`` per entry, reset with the
   episode's seed. Each turn's observation hash, parsed and executed actions and reward (within
   :data:`~agentgym_bench.benchmark.replay.REWARD_TOLERANCE`), the number of turns, the final observation hash, the
   return and the success must equal the recorded ones. A file written by another package version is
   accepted only if it replays (the envs' behaviour is what counts); if it does not, the message says the versions
   differ;
6. **re-generation of model-free policies** (:data:`MODEL_FREE`: ``oracle``, ``random``, ``scripted``): the policy
   the file names is rebuilt with its recorded seed (:func:`model_free_policy`, the same construction as ``eval``)
   and, during replay, asked for every turn of every episode from the replayed env, under the key evaluation used
   (keyed sampling, where the policy samples: the file's ``sampling.keyed`` must be what ``eval`` records for it;
   no model, weights, training or sampling setting but the seed may be claimed: :func:`check_model_free_claims`).
   Once an episode has replayed (its replay checks come first), each of its replies must be string-identical to the
   re-generated one (these policies record no tokens); the first that is not rejects the file, naming the entry,
   seed and turn. It costs what evaluating the policy costs (the full agentgym-v1 oracle file: 7.5-10 s on one core,
   against about 1 s for replay alone);
7. **re-generation of a local model** (:mod:`agentgym_bench.leaderboard.regenerate`, which has the details), for
   ``hf`` policies where it can run here: the model folder is found (:func:`~agentgym_bench.rollout.specs.
   locate_model`: a relative path under the repository root ``root``; on a published board, inside its ``models/``
   folder) with the recorded weights hash (:func:`~agentgym_bench.leaderboard.regenerate.regeneration_blocker`,
   which refuses a file naming weights found here that leaves a reply without ``token_ids``, and one
   naming a published model with other weights). Then every reply must be the
   decoding of its tokens under the model's tokenizer (:func:`check_decoding`; else the file is **rejected**, naming
   the turn), so the text replay plays and the tokens re-generation compares are one reply, and
   ``metadata.compute.prompt_tokens`` must be what the replies' prompts hold under that tokenizer
   (:func:`check_prompt_tokens`; else **rejected**). Every reply of the file
   is then re-generated from the replayed observations in the evaluation's batches and compared in text and tokens
   (:func:`~agentgym_bench.leaderboard.regenerate.regenerate_all`; a few differing replies are tolerated, each of
   them and every later reply of its episode a keyed draw of the weights, more reject the file). It is
   capped at ``regeneration_cap`` FLOPs (:data:`~agentgym_bench.leaderboard.regenerate.REGENERATION_CAP`): not
   attempted when the suite's first prompts alone cost more (:func:`~agentgym_bench.leaderboard.regenerate.
   regeneration_cost_blocker`), and stopped when its metered work passes the cap; the file then stays *replayed*,
   the board saying why.

After replay (and before any model is re-generated), what the file claims of its cost must be what its episodes count
(:func:`check_compute`). A file that passes 1-5 is *replayed*; one that also passes 6 or 7 is *reproduced*. A failed
check 6 rejects the file: a model-free policy has no hardware-dependent logits, so a difference means the replies are
not that policy's. A re-generation in check 7 that differs in a few replies (at most
:func:`~agentgym_bench.leaderboard.regenerate.allowed_differences`, each still a keyed draw of the named weights:
other hardware can change the last bit of a logit, and with it a sampled token) keeps the mark *replayed*, the
reason shown on the board; more differences, or one that is not such a draw, reject the file, as does a reply whose
text is not its tokens' decoding (decoding has no hardware to blame). Re-generation is what
catches a file whose replies came from another policy or model than the one its metadata names.

Match entries (multi-agent suites) are checked the same way, with what a match adds
(:func:`~agentgym_bench.benchmark.matches.replay_matches`): check 3 also requires the entry's opponent and check 4
the suite's seat for each seed (``player_{i % 2}`` in match ``i``, so both seats are played equally); replay feeds
both seats' recorded replies, in the recorded order, through a fresh env per match, except that a fixed opponent's
(``random``, ``scripted``) replies are re-generated by the suite's opponent and must equal the recorded ones, so a
file cannot pair its policy with a weaker opponent than the suite's; the payoffs, outcome, deal, win and the
learner's payoff must equal the recorded ones. Check 6 plays the recorded model-free policy in the learner's seat
(both seats in self-play); check 7 covers a model's moves (both seats' in self-play).

Files compared without going on a board (``compare-results``) are read by :func:`read_checked`: checks 1-4, no
replay.

Submission names (:func:`check_name`) are 1-64 characters of ``[A-Za-z0-9 ._+-]``: no path separators, no markup.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym_bench.benchmark import results as results_file
from agentgym_bench.benchmark.evaluate import package_version
from agentgym_bench.benchmark.kinds import check_entries, kind_of, policy_turns, replay_entry, suite_policy
from agentgym_bench.benchmark.replay import EpisodeText, ModelFree, ReplayMismatch
from agentgym_bench.benchmark.results import Results, ResultsError, loads, read_results
from agentgym_bench.benchmark.suites import (
    Suite,
    available_suites,
    load_suite,
    match_ceiling,
    quick_check,
    quick_text,
)
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.regenerate import (
    REGENERATION_CAP,
    check_published_name,
    prompt_tokens,
    published_models,
    regenerate_all,
    regeneration_blocker,
    regeneration_cost_blocker,
)
from agentgym_bench.progress import progress as progress_bar
from agentgym_bench.rollout.specs import Sampling, sampling_of
from agentgym_bench.stats import most_successes

NAME_PATTERN = re.compile(r"[A-Za-z0-9 ._+-]{1,64}")
REPLAYED, REPRODUCED = "replayed", "reproduced"
MODEL_FREE = ("oracle", "random", "scripted")
"""Policy kinds that need no model: cheap to re-run, so every reply of their files is re-generated (check 6)."""


def check_name(name: str) -> str:
    """``name`` stripped, if it is a valid submission name; else a :class:`ResultsError` saying why."""
    stripped = name.strip()
    if not NAME_PATTERN.fullmatch(stripped) or not any(c.isalnum() for c in stripped):
        raise ResultsError(f"submission name {name!r} is not allowed: use 1-64 characters of letters, digits, "
                           "space and . _ + - (no path separators, no markup), with at least one letter or digit")
    return stripped


@dataclass
class Verified:
    """A results file that passed :func:`verify`.

    Attributes:
        results: the parsed file.
        suite: the suite it was checked against.
        raw: the file's bytes, exactly as given (what a board stores).
        sha256: hex SHA-256 of ``raw``.
        mark: :data:`REPLAYED` or :data:`REPRODUCED`.
        regeneration: one line: why the file was not re-generated, or what re-generation found.
        episodes: episodes replayed.
        notes: what else the board should show (a file from another package version that replays).
    """

    results: Results
    suite: Suite
    raw: bytes
    sha256: str
    mark: str
    regeneration: str
    episodes: int
    notes: list[str] = field(default_factory=list)


def check_reply_claims(results: Results) -> None:
    """What a file may claim of its policy's replies (check 4b): a model-free policy writes text, so its turns record
    no ``token_ids``; a reply's ``token_ids`` are at most the file's own ``sampling.max_new_tokens``; a model's
    replies are keyed draws (``sampling.keyed``), as ``eval`` records for every model. A :class:`ResultsError` names
    the first turn (or the field) that breaks one."""
    policy = results.metadata["policy"]
    kind, budget = policy["kind"], policy["sampling"]["max_new_tokens"]
    if kind not in MODEL_FREE and not policy["sampling"]["keyed"]:
        raise ResultsError("metadata.policy.sampling.keyed is false, but eval samples a model with keyed draws "
                           "(rollout.specs.policy_record): only the oracle and scripted policies record false, and "
                           "re-generation needs the evaluation's keys")
    for where, turn in policy_turns(results):
        if turn.token_ids is None:
            continue
        if kind in MODEL_FREE:
            raise ResultsError(f"{where}: the {kind} policy writes text, not tokens, and the file records token_ids")
        if len(turn.token_ids) > budget:
            raise ResultsError(f"{where}: the reply has {len(turn.token_ids)} token ids, more than the file's own "
                               f"max_new_tokens={budget} allows")


def check_compute(results: Results) -> None:
    """What a file claims of its evaluation's cost, where its episodes say it (check 4d): ``metadata.compute``'s
    ``episodes`` and ``env_steps`` (every turn of every episode, both seats' of a match) are the file's counts, and
    ``generated_tokens`` the sum of its replies' ``token_ids`` where every reply of the policy records them (``None``
    for a model-free policy, which writes text). Elsewhere (an endpoint's usage counts, the wall time, training) the
    board shows the file's own report as such. A :class:`ResultsError` names the first field that differs."""
    compute, kind = results.metadata["compute"], results.metadata["policy"]["kind"]
    turns = [turn for _, turn in policy_turns(results)]
    counted = {"episodes": sum(len(e.episodes) for e in results.entries),
               "env_steps": sum(len(ep.turns) for e in results.entries for ep in e.episodes)}
    if kind in MODEL_FREE:
        counted["generated_tokens"] = None
    elif all(turn.token_ids is not None for turn in turns):
        counted["generated_tokens"] = sum(len(turn.token_ids) for turn in turns)
    for key, count in counted.items():
        if compute.get(key) != count:
            raise ResultsError(f"metadata.compute.{key} is {json.dumps(compute.get(key))}, but the file's episodes "
                               f"count {json.dumps(count)}")


CHANCE = 1e-6
"""The chance below which :func:`check_within_reach` calls an entry's successes out of any policy's reach."""


def check_within_reach(results: Results, suite: Suite) -> None:
    """Refuse successes or payoffs that no policy reaches without knowing the env's random draws in advance (check
    4c): an entry whose ceiling (``oracle_success``: the optimal policy's success probability on its episodes,
    exact) is below 1 may hold at most :func:`~agentgym_bench.stats.most_successes` successes, more having a chance
    below :data:`CHANCE` for every policy. The suite's seeds fix each episode's draws (slippery ice's slips, the
    random bargainer's demands), so a file whose moves were searched against them replays; this bounds what such a
    file can claim. A match entry with an exact ceiling (:func:`~agentgym_bench.benchmark.suites.match_ceiling`:
    Bargain against random demands) is bounded the same way on the sum of the learner's payoffs (each in [0, 1], so
    Hoeffding's bound holds): a sum of ``most + 1`` or more has a chance below :data:`CHANCE`. The other match
    entries have none and are not checked. A :class:`ResultsError` names the entry."""
    by_name = {e.name: e for e in suite.entries}
    for entry in results.entries:
        spec, n = by_name[entry.name], len(entry.episodes)
        if spec.opponent is not None:
            ceiling = match_ceiling(spec)
            if ceiling is None:
                continue
            total, most = float(kind_of(spec).outcomes(entry).sum()), most_successes(ceiling, n, CHANCE)
            if total >= most + 1:
                raise ResultsError(f"entry {entry.name}: mean payoff {total / n:.3f} over {n} matches, where the most "
                                   f"a policy that sees only its own values can expect against the {spec.opponent} "
                                   f"opponent is {ceiling:.3f}: a mean of {(most + 1) / n:.3f} or more has a chance "
                                   f"below {CHANCE:g} for any policy that does not know the opponent's draws in "
                                   "advance")
            continue
        ceiling = spec.oracle_success
        if ceiling is None or ceiling >= 1:
            continue
        successes, most = sum(bool(ep.success) for ep in entry.episodes), most_successes(ceiling, n, CHANCE)
        if successes > most:
            raise ResultsError(f"entry {entry.name}: {successes} successes in {n} episodes, where the optimal "
                               f"policy's success probability is {ceiling:.3f}: more than {most} has a chance below "
                               f"{CHANCE:g} for any policy that does not know the env's random draws in advance")


def check_decoding(results: Results, tokenizer: Any, stop_ids: Sequence[int]) -> None:
    """Every reply of the file's model is the decoding of its ``token_ids`` (ids of the model's vocabulary) under
    the model's tokenizer
    (:func:`~agentgym_bench.rollout.hf.decode_reply`, how evaluation wrote it); else a :class:`ResultsError` naming
    the first turn whose text and tokens disagree. Replay plays the text and re-generation compares the tokens, so
    this is what makes both checks speak of one reply."""
    from agentgym_bench.rollout.hf import decode_reply  # noqa: PLC0415 - brings torch

    stops, vocabulary = set(stop_ids), len(tokenizer)
    for where, turn in policy_turns(results):
        foreign = next((i for i in turn.token_ids or [] if i >= vocabulary), None)
        if foreign is not None:
            raise ResultsError(f"{where}: token id {foreign} is not in the model's vocabulary of {vocabulary:,}")
        decoded = decode_reply(tokenizer, stops, turn.token_ids or [])
        if decoded != turn.reply:
            raise ResultsError(f"{where}: the reply text is not the decoding of its token_ids under the model's "
                               f"tokenizer (the text {turn.reply[:80]!r}, the tokens {decoded[:80]!r}); a reply's "
                               "text and tokens must agree")


def check_prompt_tokens(results: Results, suite: Suite, texts: dict[str, dict[int, EpisodeText]],
                        tokenizer: Any) -> None:
    """``metadata.compute.prompt_tokens`` of a local model's file is what its replies' prompts hold, rendered and
    tokenised by the model's own tokenizer (:func:`~agentgym_bench.leaderboard.regenerate.prompt_tokens`: the
    replayed observations and the file's replies, as evaluation read them); else a :class:`ResultsError`. ``null``
    (a file that does not report it) is accepted."""
    claimed = results.metadata["compute"].get("prompt_tokens")
    if claimed is None:
        return
    counted = prompt_tokens(results, suite, texts, tokenizer)
    if claimed != counted:
        raise ResultsError(f"metadata.compute.prompt_tokens is {json.dumps(claimed)}, but the prompts of the file's "
                           f"replies hold {counted} tokens under the model's tokenizer")


def model_free_policy(results: Results, suite: Suite) -> ModelFree | None:
    """The model-free policy ``results`` names (``None`` for a model), built by
    :func:`~agentgym_bench.benchmark.kinds.suite_policy` with the recorded sampling settings and seed; a
    :class:`ResultsError` naming ``metadata.policy.kind`` if the suite has no such policy (``oracle`` on a
    two-player suite, ``scripted`` on a single-agent one)."""

    record = results.metadata["policy"]
    kind, s = record["kind"], record["sampling"]
    if kind not in MODEL_FREE:
        return None
    try:
        policy, ours = suite_policy(kind, suite, sampling_of(record))
    except UserError as e:
        raise ResultsError(f"metadata.policy.kind {kind!r} cannot be re-generated on suite {suite.name}: "
                           f"{e}") from None
    keyed = ours["sampling"]["keyed"]
    if s["keyed"] != keyed:
        raise ResultsError(f"metadata.policy.sampling.keyed is {json.dumps(s['keyed'])}, but the {kind} policy "
                           + ("samples with keyed draws" if keyed else "draws nothing") + f" (eval records "
                           f"{json.dumps(keyed)}): how a model-free policy is re-generated is the policy's, not the "
                           "file's to choose")
    check_model_free_claims(results)
    name = f"the {kind} policy" + (f" (seed {s['seed']})" if kind == "random" else "")
    return ModelFree(policy, keyed, record["history"], name)


def check_model_free_claims(results: Results) -> None:
    """A model-free policy's file claims no model, weights or training, and sampling settings the policy does not
    read stay at what ``eval`` records (:class:`~agentgym_bench.rollout.specs.Sampling`'s defaults; the seed is the
    policy's): re-generation binds the replies, and this binds what would make the record another policy's, so a
    *reproduced* random file cannot present itself as a trained model or take another model's weights hash. Left to
    the file: ``history`` (the prompt window, which these policies never read) and the seed, whose replies
    re-generation binds. A :class:`ResultsError` names the first field."""
    meta, defaults = results.metadata, Sampling()
    policy, kind = meta["policy"], meta["policy"]["kind"]
    expected = {"metadata.policy.model": (policy["model"], None),
                "metadata.policy.model_sha256": (policy["model_sha256"], None),
                "metadata.trainer": (meta["trainer"], None),
                "metadata.compute.training": (meta["compute"].get("training"), None)}
    for key in ("temperature", "top_p", "max_new_tokens"):
        expected[f"metadata.policy.sampling.{key}"] = (policy["sampling"][key], getattr(defaults, key))
    for name, (value, wanted) in expected.items():
        if value != wanted:
            raise ResultsError(f"{name} is {json.dumps(value)[:80]}, but the {kind} policy has no model, weights, "
                               f"training or sampling setting but its seed, and eval records {json.dumps(wanted)} "
                               "there")


def read_source(source: str | os.PathLike | bytes) -> bytes:
    """The bytes of a results file given as bytes or a path: a regular file, never a symbolic link (its target
    could be any file, another entry's among them), at most :data:`~agentgym_bench.benchmark.results.
    MAX_FILE_BYTES` (checked before reading, and while reading)."""
    limit = results_file.MAX_FILE_BYTES  # read when called: tests lower the limit
    if isinstance(source, bytes):
        return source
    path = Path(source)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ResultsError(f"results file {path} does not exist") from None
    except IsADirectoryError:
        raise ResultsError(f"results file {path} is a folder") from None
    except OSError as e:
        if path.is_symlink():
            raise ResultsError(f"results file {path} is a symbolic link; give the file itself") from None
        raise ResultsError(f"results file {path} cannot be read: {e.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ResultsError(f"results file {path} is not a regular file")
    with os.fdopen(fd, "rb") as f:
        if info.st_size > limit:
            raise ResultsError(f"results file {path} is {info.st_size:,} bytes; the limit is {limit:,}")
        raw = f.read(limit + 1)
    if len(raw) > limit:
        raise ResultsError(f"results file {path} is more than {limit:,} bytes")
    return raw


def check_submittable(results: Results) -> None:
    """Refuse a quick check (``eval --episodes`` / ``--entries``: ``metadata.quick_check``), a part of the suite."""
    quick = results.metadata.get("quick_check")
    if quick is not None:
        raise ResultsError(f"results file is a quick check ({quick_text(quick)}), not for a board: evaluate the whole "
                           "suite (eval without --episodes and --entries) to submit")


def check_suite(results: Results, suite: Suite | None) -> Suite:
    """The suite ``results`` must match (``suite``, or the bundled one it names); raises if name or version
    differ."""
    if suite is None:
        if results.suite_name not in available_suites():
            raise ResultsError(f"results are for suite {results.suite_name!r}, which is not a bundled suite "
                               f"({', '.join(available_suites())}): give its suite file (--suite FILE)")
        suite = load_suite(results.suite_name)
    if results.suite_name != suite.name:
        raise ResultsError(f"results are for suite {results.suite_name!r}, not the suite {suite.name!r} they are "
                           "checked against")
    if results.suite_version != suite.version:
        raise ResultsError(f"results are for {suite.name} version {results.suite_version}; "
                           f"the suite is version {suite.version}")
    return suite


def read_checked(path: str, suite: Suite | None, base: Results | None = None) -> tuple[Results, Suite]:
    """A results file and the suite (or the part of it a quick check played) it is compared on, checked like a
    submission's (checks 1-4 of :func:`verify`; not replayed); a :class:`UserError` naming the file otherwise.
    ``base``: the file it is compared with, which must have played the same episodes (the same
    ``metadata.quick_check``), or the whole suite, which the caller cuts to this file's part."""
    try:
        results = read_results(path)
    except ResultsError as error:
        raise UserError(str(error)) from None
    mine = results.metadata.get("quick_check")
    theirs = None if base is None else base.metadata.get("quick_check")
    if base is not None and mine != theirs and not (theirs is None and mine is not None):
        raise UserError(f"{path} is {played_text(mine)}, the base is {played_text(theirs)}: compare files that "
                        "played the same episodes")
    try:
        suite = check_suite(results, suite)
        if mine is not None:
            suite = quick_check(suite, mine["episodes"], mine["entries"])[0]
        check_entries(results, suite)
        check_reply_claims(results)
        check_within_reach(results, suite)
    except ResultsError as error:
        raise UserError(f"{path}: {error}") from None
    return results, suite


def played_text(quick: dict[str, Any] | None) -> str:
    """What a file played: the whole suite, or the part a quick check (``metadata.quick_check``) names."""
    return "the whole suite" if quick is None else f"a quick check ({quick_text(quick)})"


def verify(source: str | os.PathLike | bytes, suite: Suite | None = None, *,
           regenerate: bool = True, progress: bool = False, root: str | os.PathLike | None = None,
           board: str | os.PathLike | Callable[[Suite], Path] | None = None,
           regeneration_cap: float = REGENERATION_CAP,
           screen: Callable[[Results, str], None] | None = None) -> Verified:
    """Check a results file (a path or its bytes) against ``suite`` (default: the bundled suite it names); see the
    module docstring for the checks. Raises :class:`ResultsError` (a ``UserError``) with the reason.

    Args:
        regenerate: re-generate every reply of a local hf model (check 7; ``False``: it stays *replayed*).
            Model-free policies are always re-generated in full (check 6).
        root: the repository root a relative model path resolves against (default: the current directory).
        board: the board the file is for (or a function of the suite giving it): on a published board
            (:func:`~agentgym_bench.paths.published_board`) models are looked for in its ``models/`` folder
            only (:func:`~agentgym_bench.leaderboard.regenerate.model_folder`); ``None``: no board, as a private one.
        regeneration_cap: most estimated FLOPs check 7 may take (:data:`~agentgym_bench.leaderboard.regenerate.
            REGENERATION_CAP`, :func:`~agentgym_bench.leaderboard.regenerate.regeneration_cost_blocker`); a file
            above it stays *replayed*, saying so.
        screen: called with the results and the file's SHA-256 after replay and the file's own checks, before any
            reply is re-generated (what takes minutes) and whatever the mark; raises to refuse it (``submit``: a copy
            of a board's entry is refused in seconds, before a score table is printed).
    """
    from agentgym_bench.rollout.hf import load_tokenizer  # noqa: PLC0415 - brings torch

    raw = read_source(source)
    digest = hashlib.sha256(raw).hexdigest()
    results = loads(raw)
    check_submittable(results)
    suite = check_suite(results, suite)
    check_entries(results, suite)
    check_reply_claims(results)
    check_within_reach(results, suite)
    model_free = model_free_policy(results, suite)
    models = published_models(board(suite) if callable(board) else board)
    check_published_name(results, root, models)
    folder, blocker = None, None
    if model_free is None:
        folder, blocker = (regeneration_blocker(results, root, models) if regenerate
                           else (None, "re-generation was not asked for"))
    keep_texts = blocker is None and model_free is None
    recorded_version, ours = results.metadata["package_version"], package_version()
    total = sum(len(e.episodes) for e in results.entries)
    texts: dict[str, dict[int, EpisodeText]] = {}
    what = "replay" if model_free is None else "replay and re-generation"
    with progress_bar(total, what, "episode", enabled=progress) as bar:
        for entry in results.entries:
            try:
                keep = {ep.seed for ep in entry.episodes} if keep_texts else set()
                texts[entry.name] = replay_entry(entry, keep=keep, bar=bar, model_free=model_free)
            except ReplayMismatch as e:
                if recorded_version != ours:
                    raise type(e)(f"the file was written by agentgym-bench {recorded_version}, this is {ours}, and "
                                  f"the versions differ in behaviour: {e}") from None
                raise
    if model_free is None and blocker is None:
        tokenizer, stop_ids = load_tokenizer(folder)
        check_decoding(results, tokenizer, stop_ids)
        check_prompt_tokens(results, suite, texts, tokenizer)
    check_compute(results)
    if screen is not None:  # whatever follows (nothing, or minutes of re-generation), before it is said
        screen(results, digest)
    notes = [] if recorded_version == ours else [
        f"written by agentgym-bench {recorded_version}; replays identically under {ours}"]
    if model_free is not None:
        return Verified(results, suite, raw, digest, REPRODUCED,
                        f"all {total} episodes re-generated by {model_free.name}: every reply identical", total, notes)
    if blocker is not None:
        return Verified(results, suite, raw, digest, REPLAYED, blocker, total, notes)
    assert folder is not None
    too_costly = regeneration_cost_blocker(results, suite, texts, folder, tokenizer, regeneration_cap)
    if too_costly is not None:
        return Verified(results, suite, raw, digest, REPLAYED, too_costly, total, notes)
    difference = regenerate_all(results, suite, texts, folder, progress, regeneration_cap)
    if difference is None:
        return Verified(results, suite, raw, digest, REPRODUCED,
                        f"all {total} episodes re-generated token for token in the evaluation's batches", total, notes)
    return Verified(results, suite, raw, digest, REPLAYED, difference, total, notes)
