"""The episode kind (:mod:`.kinds`): a single-agent entry plays one episode of an agent env per seed, scored by
success.

:func:`play_episodes` plays a set of episodes and tallies success per env (a suite's entries below, the trainers'
validation, the warm start's tables and ``demo`` all play through it); :func:`play_suite_episodes` plays every
episode of a single-agent suite, all entries in one :class:`~agentgym_bench.rollout.engine.EnvGroups` (one group of
one env per seed, fixed seeds), so a model policy makes one batched call per turn for the whole suite. Sampling is
keyed: each episode's randomness depends on the policy's seed and the episode alone, so the leaderboard can
re-generate any episode by itself and compare it token for token.

:data:`EPISODES` is the kind: what it plays and records (:func:`entry_results`), how a recorded entry replays
(:func:`replay_episodes`), the replies a re-generation must reproduce (:func:`episode_calls`), and what the score
averages (success, with its Wilson interval: a binary outcome, so two files are paired by McNemar's exact test).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

import agentgym_bench  # noqa: F401 - registers the ids
from agentgym_bench import stats
from agentgym_bench.agent.tools import ACTION_FORMATS
from agentgym_bench.benchmark.replay import (
    REWARD_TOLERANCE,
    EpisodeText,
    ModelFree,
    Move,
    ReplayMismatch,
    check_regenerated,
)
from agentgym_bench.benchmark.results import EntryResults, EpisodeRecord, ResultsError, TurnRecord, sha256_text
from agentgym_bench.benchmark.suites import Suite, SuiteEntry
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.engine import EnvGroups, tag_hash
from agentgym_bench.rollout.policy import Policy
from agentgym_bench.rollout.specs import policy_from_spec
from agentgym_bench.rollout.trajectory import Trajectory, Turn, build_messages


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
        raise UserError(f"prompts name entries {unknown} that suite {suite.name} does not have (its entries: "
                        f"{', '.join(e.name for e in suite.entries)})")
    return {e.name: prompt.get(e.name, e.prompts[0]) for e in suite.entries}


def play_suite_episodes(policy: Policy, suite: Suite, *, prompt: str | Mapping[str, str] | None = None,
                        history: int | None = 0, entries: list[str] | None = None, progress: bool = False,
                        max_workers: int = 0, action_format: str | Mapping[str, str] | None = None
                        ) -> dict[str, list[Trajectory]]:
    """Play every episode of a single-agent suite (or of the named ``entries``) with ``policy``; entry name ->
    trajectories in seed order. ``action_format`` (for every entry, or per entry name): ``"tool"`` plays the entry's
    agent env in its tool format (recorded in the entry's ``env_kwargs``); ``None`` or ``"answer"``: ``<answer>``
    tags."""
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


def replay_episodes(recorded: EntryResults, *, keep: set[int] | frozenset[int] = frozenset(),
                    bar: Any = None, model_free: ModelFree | None = None) -> dict[int, EpisodeText]:
    """Replay every episode of ``recorded`` through one ``gym.make(env_id, **env_kwargs)``, reset per episode.

    Raises :class:`~.replay.ReplayMismatch` naming the entry, seed, turn and field at the first difference. With
    ``model_free``, that policy also re-generates each turn's reply from the replayed env before the recorded reply
    is stepped, under the key the evaluation used (``(tag hash, seed, member 0, turn)``); once an episode has
    replayed, its re-generated replies must equal the recorded ones (:class:`~.replay.RegenerationMismatch` at the
    first that does not). Returns the texts of the episodes whose seeds are in ``keep`` (what the board's
    transcripts and re-generation need).
    """
    env = gym.make(recorded.env_id, **recorded.env_kwargs).unwrapped
    tag = tag_hash(recorded.env_id)
    texts: dict[int, EpisodeText] = {}
    try:
        for episode in recorded.episodes:
            where = f"entry {recorded.name}, seed {episode.seed}"
            observation, info = env.reset(seed=episode.seed)
            system_prompt = str(info.get("system_prompt", ""))
            tools = info.get("tools") or []
            observations: list[str] = []
            regenerated: dict[int, str] = {}
            done, total = False, 0.0
            for t, turn in enumerate(episode.turns):
                here = f"{where}, turn {t + 1}"
                if done:
                    raise ReplayMismatch(f"{where}: the episode ends after {t} turns on replay, the file records "
                                         f"{len(episode.turns)}")
                if sha256_text(observation) != turn.observation_sha256:
                    raise ReplayMismatch(f"{here}: the observation differs from the recorded one (hash)")
                if model_free is not None:
                    conversation = build_messages(system_prompt, observations, [u.reply for u in episode.turns[:t]],
                                                  observation, model_free.history)
                    key = [(tag, episode.seed, 0, t)] if model_free.keyed else None
                    regenerated[t] = model_free.policy.generate([conversation], [env], keys=key)[0].text
                observations.append(observation)
                new_observation, reward, terminated, truncated, step_info = env.step(turn.reply)
                if list(step_info["actions"]) != turn.actions:
                    raise ReplayMismatch(f"{here}: the reply parses to actions {step_info['actions']}, the file "
                                         f"records {turn.actions}")
                if list(step_info["executed_actions"]) != turn.executed_actions:
                    raise ReplayMismatch(f"{here}: executed actions {step_info['executed_actions']}, the file "
                                         f"records {turn.executed_actions}")
                if abs(float(reward) - turn.reward) > REWARD_TOLERANCE:
                    raise ReplayMismatch(f"{here}: reward {float(reward)!r}, the file records {turn.reward!r}")
                total += float(reward)
                observation, info, done = new_observation, step_info, bool(terminated or truncated)
            if not done:
                raise ReplayMismatch(f"{where}: the episode is not over after the {len(episode.turns)} recorded "
                                     "turns")
            if sha256_text(observation) != episode.final_observation_sha256:
                raise ReplayMismatch(f"{where}: the final observation differs from the recorded one (hash)")
            if abs(total - episode.return_) > REWARD_TOLERANCE:
                raise ReplayMismatch(f"{where}: return {total!r}, the file records {episode.return_!r}")
            if bool(info.get("success", False)) != episode.success:
                raise ReplayMismatch(f"{where}: success is {bool(info.get('success', False))} on replay, the file "
                                     f"records {episode.success}")
            if model_free is not None:
                check_regenerated(where, model_free, regenerated, episode.turns)
            if episode.seed in keep:
                texts[episode.seed] = EpisodeText(system_prompt, observations, observation, list(tools))
            if bar is not None:
                bar.update(1)
    finally:
        env.close()
    return texts


def episode_calls(entries: Sequence[EntryResults], texts: Mapping[str, Mapping[int, EpisodeText]],
                  history: int | None) -> list[list[Move]]:
    """The model's ``generate`` calls that playing ``entries`` together made (:func:`play_suite_episodes`), each
    call's moves in its order: call ``t`` holds turn ``t`` of every episode that lasted that long, entries in the
    order given, seeds ascending. Each turn's prompt is rebuilt from the replayed ``texts`` (entry name -> seed ->
    texts) and the recorded replies, with the ``history`` window."""
    calls: dict[int, list[Move]] = {}
    for entry in entries:
        for episode in sorted(entry.episodes, key=lambda ep: ep.seed):
            text = texts[entry.name][episode.seed]
            replies = [u.reply for u in episode.turns]
            for t, turn in enumerate(episode.turns):
                messages = build_messages(text.system_prompt, text.observations[:t], replies[:t],
                                          text.observations[t], history)
                calls.setdefault(t, []).append(Move(messages, (tag_hash(entry.env_id), episode.seed, 0, t),
                                                    f"entry {entry.name}, seed {episode.seed}, turn {t + 1}", turn,
                                                    (entry.name, episode.seed), text.tools))
    return [calls[t] for t in sorted(calls)]


class Episodes:
    """The episode kind (see the module docstring and :class:`~.kinds.Kind`, which documents each member)."""

    name = "episodes"
    unit = "turn"
    outcome = "success"
    outcome_is_return = False
    paired_test = True
    score_text = "mean over entries of success / oracle success"
    options = ("prompt", "action_format")

    def policy(self, spec: str, suite: Suite, sampling: Any, **kwargs: Any) -> tuple[Policy, dict[str, Any]]:
        if spec == "scripted":
            raise UserError(f"policy 'scripted' plays the two-player suites; {suite.name} is single-agent: use oracle")
        return policy_from_spec(spec, sampling, **kwargs)

    def prompts(self, suite: Suite, prompt: str | Mapping[str, str] | None) -> dict[str, str]:
        return entry_prompts(suite, prompt)

    def check_options(self, suite: Suite, prompt: str | Mapping[str, str] | None,
                      action_format: str | Mapping[str, str] | None, action_format_name: str = "action format"
                      ) -> None:
        """Every prompt and action format may be chosen (each is checked against the entry when it is played)."""

    def play(self, policy: Policy, suite: Suite, *, prompt: str | Mapping[str, str] | None = None,
             history: int | None = 0, progress: bool = False, max_workers: int = 0,
             action_format: str | Mapping[str, str] | None = None) -> tuple[list[EntryResults], list[Turn]]:
        played = play_suite_episodes(policy, suite, prompt=prompt, history=history, progress=progress,
                                     max_workers=max_workers, action_format=action_format)
        entries = [entry_results(suite.entry(name), trajectories) for name, trajectories in played.items()]
        return entries, [turn for ts in played.values() for t in ts for turn in t.turns]

    def check_recorded(self, where: str, recorded: EntryResults, entry: SuiteEntry, prompt: str | None,
                       action_format: str | None) -> None:
        if prompt not in entry.prompts:
            raise ResultsError(f"{where}: prompt {prompt!r} is not one of the entry's {list(entry.prompts)}")
        if action_format is not None and action_format not in ACTION_FORMATS:
            raise ResultsError(f"{where}: action_format {action_format!r} is not one of {list(ACTION_FORMATS)}")

    def replay(self, recorded: EntryResults, *, keep: set[int] | frozenset[int] = frozenset(), bar: Any = None,
               model_free: ModelFree | None = None) -> dict[int, EpisodeText]:
        return replay_episodes(recorded, keep=keep, bar=bar, model_free=model_free)

    def wrote(self, entry: EntryResults, episode: EpisodeRecord, turn: TurnRecord) -> bool:
        return True

    def calls(self, entries: Sequence[EntryResults], texts: Mapping[str, Mapping[int, EpisodeText]],
              history: int | None) -> list[list[Move]]:
        return episode_calls(entries, texts, history)

    def outcomes(self, entry: EntryResults) -> np.ndarray:
        return entry.successes()

    def interval(self, outcomes: np.ndarray) -> tuple[float, float, float]:
        r = stats.success_rate(outcomes)
        return r.rate, r.low, r.high

    def details(self, entry: EntryResults) -> None:
        return None

    def summary_lines(self, entries: Sequence[Any]) -> list[str]:
        width = max(len(e.name) for e in entries)
        lines = [f"{'entry':<{width}}  {'prompt':<7}  {'success [95% CI]':<22}  {'return':>7}  {'/oracle':>7}"]
        for e in entries:
            lines.append(f"{e.name:<{width}}  {e.prompt:<7}  {e.success}    "
                         f"{e.mean_return[0]:>7.3f}  {e.normalised:>7.3f}")
        return lines


EPISODES = Episodes()
"""The episode kind."""
