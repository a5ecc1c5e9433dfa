"""Evaluate a policy on a suite into a :class:`~.results.Results` with its metadata: :func:`evaluate_suite` plays every
entry (through the suite's kind, :meth:`~.kinds.Kind.play`: a single-agent suite's episodes all batched together,
:mod:`.episodes`; a two-player suite's matches entry by entry, :mod:`.matches`), :func:`evaluate_by_entry` one entry
after the other so finished work can be kept. Sampling is keyed either way: each episode's randomness depends on the
policy's seed and the episode alone, so the leaderboard can re-generate any episode by itself.
:func:`probe_first_prompts` sends an endpoint each entry's first prompt once before a run plays anything.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import gymnasium as gym

import agentgym_bench
from agentgym_bench.benchmark.kinds import kind_of
from agentgym_bench.benchmark.results import Results
from agentgym_bench.benchmark.suites import Suite
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.endpoint import what_to_change
from agentgym_bench.rollout.openai_compat import GenerationError
from agentgym_bench.rollout.policy import Policy
from agentgym_bench.rollout.trajectory import build_messages


def evaluate_suite(policy: Policy, suite: Suite, policy_record: dict[str, Any], *,
                   prompt: str | Mapping[str, str] | None = None, history: int | None = 0,
                   trainer: dict[str, Any] | None = None, training_compute: dict[str, Any] | None = None,
                   progress: bool = False, max_workers: int = 0, action_format: str | Mapping[str, str] | None = None
                   ) -> Results:
    """Play the whole suite with ``policy`` and return the results with their metadata.

    Args:
        policy: any generation backend.
        suite: the suite (:func:`~agentgym_bench.benchmark.suites.load_suite`).
        policy_record: ``metadata.policy`` (from :func:`~agentgym_bench.benchmark.kinds.suite_policy`).
        prompt: prompt template for every entry, or per entry name (each must be allowed by the entry); ``None`` on
            multi-agent suites.
        history: the prompt's history window (``None``: the whole conversation; ``0``: the current observation).
        trainer: ``{"algorithm": ..., "config": {...}}`` when the model was trained by a reference trainer.
        training_compute: what training cost (recorded under ``metadata.compute.training``).
        progress: report finished episodes.
        max_workers: step envs in a thread pool of this size (slow envs such as HTTP WebShop).
        action_format: ``"tool"``: the agent envs offer their actions as a ``take_actions`` tool and read tool calls
            (recorded as ``env_kwargs.action_format``); ``None`` or ``"answer"``: ``<answer>`` tags; or a mapping
            entry name -> format. Single-agent suites only.
    """
    start = time.perf_counter()
    kind = kind_of(suite)
    kind.check_options(suite, prompt, action_format)
    entries, turns = kind.play(policy, suite, prompt=prompt, history=history, progress=progress,
                               max_workers=max_workers, action_format=action_format)
    wall = time.perf_counter() - start
    completion = [turn.completion_tokens if turn.completion_tokens is not None else len(turn.token_ids)
                  for turn in turns if turn.completion_tokens is not None or turn.token_ids is not None]
    prompt_tokens = [turn.prompt_tokens for turn in turns if turn.prompt_tokens is not None]
    compute: dict[str, Any] = {
        "episodes": sum(len(e.episodes) for e in entries), "env_steps": len(turns),
        "generated_tokens": sum(completion) if completion else None,
        "prompt_tokens": sum(prompt_tokens) if prompt_tokens else None,
        "wall_time_s": round(wall, 3)}
    if training_compute:
        compute["training"] = dict(training_compute)
    metadata = {"policy": {**policy_record, "history": history}, "trainer": trainer,
                "package_version": package_version(), "git_commit": git_commit(),
                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "hardware": hardware(),
                "compute": compute}
    return Results(suite.name, suite.version, metadata, entries)


def evaluate_by_entry(policy: Policy, suite: Suite, policy_record: dict[str, Any], *, done: Results | None = None,
                      on_entry: Callable[[Results], None] | None = None,
                      prompt: str | Mapping[str, str] | None = None, **kwargs: Any) -> Results:
    """:func:`evaluate_suite`, one entry after the other, so finished work can be kept: each model call holds one
    entry's episodes (``metadata.compute.batching`` is ``"entry"``, which verification's re-generation follows).

    Args:
        done: results of entries already played (a run that stopped), kept as they are; the others are played.
        on_entry: called with the results so far (``done`` and every entry played) after each entry.
        prompt, kwargs: as for :func:`evaluate_suite`.
    """
    kind_of(suite).prompts(suite, prompt)  # a prompt mapping naming an entry the suite does not have: refused first
    results = done
    for number, entry in enumerate(suite.entries, 1):
        if done is not None and entry.name in {e.name for e in done.entries}:
            continue
        if kwargs.get("progress"):
            print(f"entry {number}/{len(suite.entries)}: {entry.name} ({entry.episodes} {kind_of(suite).name})",
                  file=sys.stderr, flush=True)
        own = {entry.name: prompt[entry.name]} if isinstance(prompt, Mapping) and entry.name in prompt else None
        one = evaluate_suite(policy, replace(suite, entries=(entry,)), policy_record,
                             prompt=own if isinstance(prompt, Mapping) else prompt, **kwargs)
        results = one if results is None else merged(results, one, suite)
        results.metadata["compute"]["batching"] = "entry"
        if on_entry is not None:
            on_entry(results)
    assert results is not None, "a suite has entries"
    return results


def merged(earlier: Results, later: Results, suite: Suite) -> Results:
    """``later``'s metadata with both runs' entries (in the suite's order) and compute (summed)."""
    a, b = earlier.metadata["compute"], later.metadata["compute"]

    def total(key: str) -> Any:
        values = [c[key] for c in (a, b) if c.get(key) is not None]
        return sum(values) if values else None

    compute = {**b, "episodes": a["episodes"] + b["episodes"], "env_steps": a["env_steps"] + b["env_steps"],
               "generated_tokens": total("generated_tokens"), "prompt_tokens": total("prompt_tokens"),
               "wall_time_s": round(a["wall_time_s"] + b["wall_time_s"], 3)}
    order = [e.name for e in suite.entries]
    entries = sorted([*earlier.entries, *later.entries], key=lambda e: order.index(e.name))
    return Results(later.suite_name, later.suite_version, {**later.metadata, "compute": compute}, entries)


def package_version() -> str:
    return agentgym_bench.__version__


def git_commit(root: Path | None = None) -> str | None:
    """The commit of the package's checkout, with ``+dirty`` if it has uncommitted changes; ``None`` where the package
    is not a checkout of its own (installed from a wheel, even into a venv inside another repository, whose commit
    says nothing about this code). ``root``: the folder holding the package (default: this one's)."""
    root = Path(__file__).resolve().parents[2] if root is None else root.resolve()
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        if Path(top).resolve() != root or not (root / "agentgym_bench" / "__init__.py").is_file():
            return None
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        # GIT_OPTIONAL_LOCKS=0: status reads the index without refreshing it, so it never takes the index's lock
        # (a `git commit` of the user's at the same moment would fail on it)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True,
                               env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"}).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def hardware() -> dict[str, Any]:
    try:
        import torch

        version, threads = torch.__version__, torch.get_num_threads()
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        version, threads, gpu = None, None, None
    return {"platform": platform.platform(), "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "torch": version, "torch_threads": threads, "gpu": gpu}


def check_entries_start(suite: Suite, prompts: dict[str, str], action_format: str | None = None) -> None:
    """Make each single-agent entry's env and reset its first seed before anything is played: an entry that cannot
    start (a custom suite's ``env_kwargs`` naming a WebShop server that is not running, a held-out split under
    another seed's range) is one line naming it, not a traceback from inside the run."""
    for entry in suite.entries:
        if entry.name not in prompts:
            continue
        try:
            env = gym.make(entry.env_id, **entry.make_kwargs(prompts[entry.name], action_format))
            try:
                env.reset(seed=entry.seed_start)
            finally:
                env.close()
        except (ValueError, TypeError, RuntimeError, OSError) as err:
            raise UserError(f"entry {entry.name} cannot start ({entry.env_id}, seed {entry.seed_start}): "
                            f"{str(err).splitlines()[0]}; nothing was played") from None


def probe_first_prompts(policy: Any, suite: Suite, prompts: dict[str, str], action_format: str | None = None, *,
                        context: int | None = None, max_new_tokens: int | None = None) -> dict[str, tuple[int, int]]:
    """Before playing, send each entry's first prompt (its first seed) to the endpoint once, with the run's reply
    budget: a prompt the model's context cannot hold, or any other refusal, ends the run here with one line, before
    any work. (A prompt that only outgrows the context later, with history, gets an empty reply and the game goes on,
    as through ``hf:``: the policy's ``overlong="empty"``; here, for the first prompts, the policy refuses.)

    ``context``: the model's context in tokens, where the endpoint reports it (``max_model_len``,
    :func:`~agentgym_bench.rollout.endpoint.check_model`): a ``max_new_tokens`` that leaves no room is refused
    before any request, and an answered prompt whose ``usage.prompt_tokens`` plus ``max_new_tokens`` exceed it (an
    endpoint that cuts or overruns rather than refusing) is refused too.

    Returns entry name -> ``(turn budget, first prompt's tokens)`` (``-1`` where the endpoint reports no usage), for
    :func:`request_budget`."""
    if context is not None and max_new_tokens is not None and max_new_tokens >= context:
        raise UserError(f"--max-new-tokens {max_new_tokens} leaves no room for a prompt in the model's context of "
                        f"{context} tokens (max_model_len at /models): lower it; nothing was played")

    probed = {}
    for entry in suite.entries:
        messages, env = first_conversation(entry, prompts[entry.name], action_format)
        overlong, policy.overlong = policy.overlong, "error"  # a first prompt that cannot fit stops the run here
        try:
            generation = policy.generate([messages], [env.unwrapped])[0]
        except GenerationError as err:
            hint = what_to_change(err)
            within = f" (the model reads {context} tokens)" if context is not None else ""
            raise UserError(f"before playing, entry {entry.name}'s first prompt: {err}{within}"
                            f"{f' — {hint}' if hint else ''}; nothing was played") from None
        finally:
            policy.overlong = overlong
        used = generation.prompt_tokens
        if context is not None and max_new_tokens is not None and used is not None and used + max_new_tokens > context:
            raise UserError(f"before playing, entry {entry.name}'s first prompt is {used} tokens, which with "
                            f"--max-new-tokens {max_new_tokens} exceeds the model's context of {context} tokens "
                            f"(max_model_len at /models) — {fit_hint(entry, prompts[entry.name], used, context)}; "
                            "nothing was played")
        probed[entry.name] = (int(env.unwrapped.max_turns), used if used is not None else -1)
    return probed


def check_first_prompts_fit(policy: Any, suite: Suite, prompts: dict[str, str], action_format: str | None = None
                            ) -> None:
    """Before playing through a local model (``hf:``, whose ``max_positions`` is known): each entry's first prompt
    (its first seed) and the reply budget must fit the model's positions, else the run ends here with one line.
    Through the run such a prompt gets an empty reply (``overlong="empty"``), so a model whose window cannot hold
    even the first prompt would score 0 on every episode, every reply empty, and its file would re-generate."""
    window = getattr(policy, "max_positions", None)
    if window is None or not hasattr(policy, "prompt_ids"):
        return
    for entry in suite.entries:
        messages, env = first_conversation(entry, prompts[entry.name], action_format)
        length = len(policy.prompt_ids([messages], [env.unwrapped])[0])
        if length + policy.max_new_tokens > window:
            raise UserError(f"before playing, entry {entry.name}'s first prompt is {length} tokens, which with "
                            f"--max-new-tokens {policy.max_new_tokens} exceeds the model's {window} positions "
                            f"(max_position_embeddings) — {fit_hint(entry, prompts[entry.name], length, window)}; "
                            "nothing was played")


def first_conversation(entry: Any, prompt: str, action_format: str | None) -> tuple[list[Any], gym.Env]:
    """The messages of an entry's first turn on its first seed, and the (closed) env that wrote them."""
    env = gym.make(entry.env_id, **entry.make_kwargs(prompt, action_format))
    try:
        observation, info = env.reset(seed=entry.seed_start)
    finally:
        env.close()
    return build_messages(str(info.get("system_prompt", "")), [], [], observation, None), env


def fit_hint(entry: Any, prompt: str, length: int, window: int) -> str:
    """What would let a first prompt of ``length`` tokens (template ``prompt``) and its reply fit ``window``."""
    ways = ["--prompt compact, a shorter prompt"] if prompt != "compact" and "compact" in entry.prompts else []
    if length < window:
        ways.append(f"--max-new-tokens {window - length} or less")
    return "; or ".join([*ways, "a model with a longer context"])


def request_budget(suite: Suite, probed: dict[str, tuple[int, int]], max_new_tokens: int) -> str:
    """What a run through an endpoint may ask of it, from :func:`probe_first_prompts`: requests at most (every
    episode playing its whole turn budget), reply tokens at most, and the first prompts' sizes (later prompts grow
    with the history the run keeps)."""
    requests = sum(entry.episodes * probed[entry.name][0] for entry in suite.entries)
    sizes = [tokens for _, tokens in probed.values() if tokens >= 0]
    first = f"; first prompts {min(sizes)}-{max(sizes)} tokens (later ones grow with the history)" if sizes else ""
    return (f"at most {requests:,} requests (every episode using its whole turn budget) and "
            f"{requests * max_new_tokens:,} reply tokens{first}")

