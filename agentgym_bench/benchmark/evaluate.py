"""Evaluate a policy: :func:`play_episodes` plays a set of episodes and tallies success per env (the suite's
evaluation below, the trainers' validation, the warm start's tables and ``demo`` all play through it);
:func:`evaluate` plays a suite, every entry's episodes batched, into a :class:`~.results.Results`.

All entries run together in one :class:`~agentgym_bench.rollout.engine.EnvGroups` (one group of one env per seed,
fixed seeds), so a model policy makes one batched call per turn for the whole suite. Sampling is keyed: each
episode's randomness depends on the policy's seed and the episode alone, so the leaderboard can re-generate any
episode by itself and compare it token for token.

Multi-agent suites (match entries) are played entry by entry by :func:`agentgym_bench.benchmark.matches.play_suite`
(all matches of an entry in lockstep, one batched call per policy per move), with keyed sampling too.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentgym_bench import stats
from agentgym_bench.benchmark.results import EntryResults, EpisodeRecord, Results, TurnRecord, sha256_text
from agentgym_bench.benchmark.suites import Suite, SuiteEntry
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.policy import Policy
from agentgym_bench.rollout.trajectory import Trajectory


@dataclass(frozen=True)
class Played:
    """Episodes played with one policy (:func:`play_episodes`): the trajectories, in play order, and success per
    env."""

    trajectories: list[Trajectory]

    def of(self, env: str) -> list[Trajectory]:
        """The episodes of one env (its tag: the env id unless the groups were given other tags)."""
        return [t for t in self.trajectories if t.tag == env]

    @property
    def success(self) -> dict[str, stats.Rate]:
        """Each env's success rate with its 95% Wilson interval, by tag in sorted order."""
        return {tag: stats.success_rate([t.success for t in self.of(tag)])
                for tag in sorted({t.tag for t in self.trajectories})}


def play_episodes(groups: EnvGroups, policy: Policy, *, history: int | None = None, keyed: bool = False,
                  progress: bool = False, prompt_fits: Callable[[list[dict[str, str]]], bool] | None = None,
                  gather: Callable[[list[Trajectory]], list[list[Trajectory]]] | None = None) -> Played:
    """Play one episode in every env of ``groups`` (or the trainers' two-player ``MatchGroups``) with ``policy``.

    Args:
        history, progress, prompt_fits, keyed: as for :meth:`EnvGroups.rollout` (``keyed``: each episode's sampling
            depends on the policy's seed and the episode alone, as the leaderboard re-generates it).
        gather: joins every process's share in process order (a distributed trainer's ``Dist.gather``); ``None``:
            this process plays them all.
    """
    mine = groups.rollout(policy, history=history, progress=progress, prompt_fits=prompt_fits, keyed=keyed)
    return Played(mine if gather is None else [t for part in gather(mine) for t in part])


def entry_prompts(suite: Suite, prompt: str | Mapping[str, str] | None) -> dict[str, str]:
    """The prompt of every entry: one name for all, a mapping entry name -> name, or ``None`` (each entry's
    default)."""
    if prompt is None or isinstance(prompt, str):
        return {e.name: prompt or e.prompts[0] for e in suite.entries}
    unknown = sorted(set(prompt) - {e.name for e in suite.entries})
    if unknown:
        raise ValueError(f"prompts name entries {unknown} that suite {suite.name} does not have")
    return {e.name: prompt.get(e.name, e.prompts[0]) for e in suite.entries}


def play_suite(policy: Policy, suite: Suite, *, prompt: str | Mapping[str, str] | None = None,
               history: int | None = 0, entries: list[str] | None = None, progress: bool = False,
               max_workers: int = 0, action_format: str | Mapping[str, str] | None = None
               ) -> dict[str, list[Trajectory]]:
    """Play every episode of the suite (or of the named ``entries``) with ``policy``; entry name -> trajectories in
    seed order. ``action_format`` (for every entry, or per entry name): ``"tool"`` plays the entry's agent env in its
    tool format (recorded in the entry's ``env_kwargs``); ``None`` or ``"answer"``: ``<answer>`` tags."""
    chosen: list[SuiteEntry] = [suite.entry(n) for n in entries] if entries else list(suite.entries)
    prompts = entry_prompts(suite, prompt)
    formats = {e.name: action_format.get(e.name) if isinstance(action_format, Mapping) else action_format
               for e in chosen}
    tag_kwargs = {e.env_id: e.make_kwargs(prompts[e.name], formats[e.name]) for e in chosen}
    groups = EnvGroups([e.env_id for e in chosen], [e.episodes for e in chosen], 1, tag_kwargs=tag_kwargs,
                       seed=suite.seed_start, fixed_seeds=True, max_workers=max_workers)
    with groups:
        trajectories = play_episodes(groups, policy, history=history, progress=progress, keyed=True).trajectories
    by_tag: dict[str, list[Trajectory]] = {e.env_id: [] for e in chosen}
    for t in trajectories:
        by_tag[t.tag].append(t)
    return {e.name: sorted(by_tag[e.env_id], key=lambda t: t.seed) for e in chosen}


def entry_results(entry: SuiteEntry, trajectories: list[Trajectory]) -> EntryResults:
    """The results record of one entry's trajectories."""
    return EntryResults(
        name=entry.name, env_id=entry.env_id, env_kwargs=dict(trajectories[0].env_kwargs),
        episodes=[EpisodeRecord(
            seed=t.seed, success=t.success, return_=t.episode_reward,
            final_observation_sha256=sha256_text(t.final_observation),
            turns=[TurnRecord(sha256_text(turn.observation), turn.reply, list(turn.actions),
                              list(turn.executed_actions), turn.reward, turn.token_ids) for turn in t.turns])
            for t in trajectories])


def evaluate(policy: Policy, suite: Suite, policy_record: dict[str, Any], *,
             prompt: str | Mapping[str, str] | None = None, history: int | None = 0,
             trainer: dict[str, Any] | None = None, training_compute: dict[str, Any] | None = None,
             progress: bool = False, max_workers: int = 0, action_format: str | Mapping[str, str] | None = None
             ) -> Results:
    """Play the whole suite with ``policy`` and return the results with their metadata.

    Args:
        policy: any generation backend.
        suite: the suite (:func:`~agentgym_bench.benchmark.suites.load_suite`).
        policy_record: ``metadata.policy`` (from :func:`~agentgym_bench.rollout.specs.policy_from_spec`).
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
    if suite.multiagent:
        from agentgym_bench.benchmark import matches

        if prompt is not None:
            raise UserError(f"{suite.name} is a two-player suite: its games write their own text, there is no prompt "
                            "template to choose")
        if (set(action_format.values()) if isinstance(action_format, Mapping) else {action_format}) - {None, "answer"}:
            raise UserError(f"{suite.name} is a two-player suite: its games read their own replies, there is no "
                            "action format to choose")
        played_matches = matches.play_suite(policy, suite, history=history, progress=progress)
        entries = [e for e, _ in played_matches]
        turns = [turn for _, results in played_matches for r in results for t in r.trajectories.values()
                 for turn in t.turns]
    else:
        played = play_suite(policy, suite, prompt=prompt, history=history, progress=progress,
                            max_workers=max_workers, action_format=action_format)
        entries = [entry_results(suite.entry(name), trajectories) for name, trajectories in played.items()]
        turns = [turn for ts in played.values() for t in ts for turn in t.turns]
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
    """:func:`evaluate`, one entry after the other, so finished work can be kept: each model call holds one entry's
    episodes (``metadata.compute.batching`` is ``"entry"``, which verification's re-generation follows).

    Args:
        done: results of entries already played (a run that stopped), kept as they are; the others are played.
        on_entry: called with the results so far (``done`` and every entry played) after each entry.
        prompt, kwargs: as for :func:`evaluate`.
    """
    if not suite.multiagent:
        entry_prompts(suite, prompt)  # a prompt mapping naming an entry the suite does not have: refused before play
    results = done
    for entry in suite.entries:
        if done is not None and entry.name in {e.name for e in done.entries}:
            continue
        own = {entry.name: prompt[entry.name]} if isinstance(prompt, Mapping) and entry.name in prompt else None
        one = evaluate(policy, replace(suite, entries=(entry,)), policy_record,
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
    import agentgym_bench

    return agentgym_bench.__version__


def git_commit() -> str | None:
    """The commit of the package's checkout, with ``+dirty`` if it has uncommitted changes; ``None`` outside git."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def hardware() -> dict[str, Any]:
    try:
        import torch

        version = torch.__version__
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        version, gpu = None, None
    return {"platform": platform.platform(), "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "torch": version, "gpu": gpu}
