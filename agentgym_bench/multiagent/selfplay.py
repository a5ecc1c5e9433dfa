"""Matches between two policies on a two-player env: one seat's turns as :class:`Trajectory` objects, and scores.

:func:`play_matches` plays ``len(seeds)`` matches in lockstep. Each tick it asks every live match whose turn it is,
groups the seats by policy, and calls each policy's batched ``generate(conversations, envs)`` once (once in all
when the opponent *is* the learner: self-play). Every seat's conversation is its own observations and replies
(:func:`~agentgym_bench.rollout.trajectory.build_messages`, with the ``history`` window), so a seat's
:class:`~agentgym_bench.rollout.trajectory.Trajectory` is exactly what a single-agent trainer consumes: turns with
observation, reply, parsed actions, ``state_key`` and reward. A turn's reward is what the seat received between
its move and its next observation (PettingZoo's cumulative reward), so the end-of-game reward lands on the seat's
last turn; a turn's ``info`` is the env's info before the move, what was read from the reply, then what the env
reported after the move (as a single-agent step's info: Bargain's ``valid_demand``), and the last turn's also
``outcome``, the seat's ``"win"``/``"draw"``/``"loss"``. Parallel envs are driven through PettingZoo's
``parallel_to_aec``.

Policies that need no model read the game: the ``envs`` they get are :class:`Seat` objects (the match's AEC env
and the agent to move). :class:`ScriptedBargainPolicy` and :class:`RandomBargainPolicy` are Bargain's opponents.

:func:`score` turns results into win/draw/loss rates with 95% Wilson intervals.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from agentgym_bench.errors import UserError
from agentgym_bench.multiagent.bargain import BARGAIN_IDS, BargainEnv, random_reply, scripted_reply
from agentgym_bench.multiagent.seats import read_move
from agentgym_bench.multiagent.textarena_aec import TextArenaAECEnv
from agentgym_bench.progress import progress as progress_bar
from agentgym_bench.rollout.policy import Generation, Message, Policy, key_seed
from agentgym_bench.rollout.specs import Sampling, Scripted, policy_from_spec
from agentgym_bench.rollout.trajectory import Trajectory, Turn, build_messages, json_safe
from agentgym_bench.stats import wilson_interval


def _make_textarena(game: str, **kwargs: Any) -> AECEnv:
    return TextArenaAECEnv(game, **kwargs)


MULTIAGENT_ENVS: dict[str, Callable[..., AECEnv | ParallelEnv]] = dict(BARGAIN_IDS)
"""Two-player env ids: Bargain's (:data:`BARGAIN_IDS`), and ``"TextArena/<id>"`` for any two-player TextArena id."""


def make_multiagent_env(env_id: str, **kwargs: Any) -> AECEnv | ParallelEnv:
    """Build one of Bargain's ids (:data:`~agentgym_bench.multiagent.bargain.BARGAIN_IDS`, e.g. ``"Bargain-v1"``) or
    ``"TextArena/TicTacToe-v0"`` (any two-player TextArena id) with ``kwargs``."""
    if env_id.startswith("TextArena/"):
        return _make_textarena(env_id.removeprefix("TextArena/"), **kwargs)
    if env_id not in MULTIAGENT_ENVS:
        raise ValueError(f"env_id={env_id!r} is not a multi-agent env: use one of {sorted(MULTIAGENT_ENVS)} or "
                         "'TextArena/<two-player TextArena id>'")
    return MULTIAGENT_ENVS[env_id](**kwargs)


@dataclass(frozen=True)
class Seat:
    """Who is to move: a match's AEC env and the agent. Model-free policies read the game through it."""

    env: AECEnv
    agent: str


@dataclass
class MatchResult:
    """One match.

    Attributes:
        seed: the reset seed.
        learner: the learner's agent name (``"player_0"`` or ``"player_1"``).
        trajectories: each seat's trajectory, by agent name (``trajectories[learner]`` is the one to train on).
        rewards: each agent's total reward (also when it never moved, so its trajectory has no turns).
        outcome: the learner's ``"win"``, ``"draw"`` or ``"loss"`` (its total reward above, equal to or below the
            opponent's).
        truncated: the env cut the match short.
        order: the agent of every move, in play order (the seats' turns interleaved).
        final_infos: each agent's ``info`` when its game ended (JSON-safe; Bargain's has ``deal`` and ``outcome``).
    """

    seed: int
    learner: str
    trajectories: dict[str, Trajectory]
    rewards: dict[str, float]
    outcome: str
    truncated: bool
    order: list[str] = field(default_factory=list)
    final_infos: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def learner_trajectory(self) -> Trajectory:
        return self.trajectories[self.learner]


@dataclass
class _Match:
    env: AECEnv
    seed: int
    learner: str
    trajectories: dict[str, Trajectory]
    observations: dict[str, str] = field(default_factory=dict)
    state_keys: dict[str, str] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)
    truncated: bool = False
    order: list[str] = field(default_factory=list)
    final_infos: dict[str, dict[str, Any]] = field(default_factory=dict)


def play_matches(env_id: str, seeds: Sequence[int], learner: Policy, opponent: Policy, *,
                 env_kwargs: Mapping[str, Any] | None = None, learner_seats: str | Sequence[str] = "alternate",
                 history: int | None = None, group_size: int = 1, max_ticks: int = 10_000,
                 key_tag: int | None = None, progress: bool = False) -> list[MatchResult]:
    """Play one match per seed between ``learner`` and ``opponent``; return them in seed order.

    Args:
        env_id: see :func:`make_multiagent_env`.
        seeds: one match per entry; entries ``k * group_size .. (k + 1) * group_size - 1`` form group ``k`` (give
            them the same seed for group-relative advantages).
        learner: the policy whose seat is recorded for training.
        opponent: the other seat's policy; pass ``learner`` itself for self-play.
        env_kwargs: keyword arguments of the env.
        learner_seats: ``"alternate"`` (``player_0`` in even matches, ``player_1`` in odd ones), one agent name for
            every match, or one name per match.
        history: the prompts' history window (see :mod:`agentgym_bench.rollout.trajectory`).
        group_size: matches per group (``Trajectory.group`` = match index // group_size).
        max_ticks: a deadline on policy rounds; a match still running then raises ``RuntimeError``.
        key_tag: keyed sampling (see :mod:`agentgym_bench.rollout.policy`): every ``generate`` call gets
            ``keys=(key_tag, seed, agent index, the seat's turn)`` per conversation, so a match's replies depend on
            that match alone and it can be re-generated by itself. ``None``: no keys.
        progress: report finished matches (a bar on a terminal, a line every few seconds otherwise).
    """
    env_kwargs = dict(env_kwargs or {})
    seats = _learner_seats(learner_seats, len(seeds))
    matches = []
    for i, (seed, seat) in enumerate(zip(seeds, seats, strict=True)):
        env = make_multiagent_env(env_id, **env_kwargs)
        env = parallel_to_aec(env) if isinstance(env, ParallelEnv) else env
        env.reset(seed=int(seed))
        trajectories = {a: Trajectory(env_id=env_id, env_kwargs=dict(env_kwargs), tag=env_id, seed=int(seed),
                                      group=i // group_size, system_prompt="", history=history)
                        for a in env.possible_agents}
        if seat not in trajectories:
            raise ValueError(f"learner seat {seat!r} is not an agent of {env_id}: {env.possible_agents}")
        matches.append(_Match(env, int(seed), seat, trajectories))
    with progress_bar(len(matches), "matches", "match", enabled=progress, leave=False) as bar:
        finished = 0
        for tick in range(max_ticks):
            waiting = [m for m in matches if _advance(m)]
            bar.update(len(matches) - len(waiting) - finished)
            finished = len(matches) - len(waiting)
            if not waiting:
                return [_result(m) for m in matches]
            bar.set_postfix_str(f"round {tick + 1}, {len(waiting)} playing")  # matches run in lockstep: all end late
            _act(waiting, learner, opponent, history, key_tag)
    raise RuntimeError(f"matches of {env_id} still running after max_ticks={max_ticks} policy rounds")


def _learner_seats(learner_seats: str | Sequence[str], n: int) -> list[str]:
    if learner_seats == "alternate":
        return [f"player_{i % 2}" for i in range(n)]
    if isinstance(learner_seats, str):
        return [learner_seats] * n
    if len(learner_seats) != n:
        raise ValueError(f"learner_seats has {len(learner_seats)} entries for {n} seeds")
    return list(learner_seats)


def _advance(match: _Match) -> bool:
    """Step finished agents out and credit rewards until a live agent must move; False when the match is over."""
    env = match.env
    while env.agents:
        agent = env.agent_selection
        obs, reward, terminated, truncated, info = env.last()
        match.totals[agent] = match.totals.get(agent, 0.0) + float(reward)
        turns = match.trajectories[agent].turns
        if turns:  # a seat that never moved (the other lost by invalid moves first) keeps its reward in totals only
            turns[-1].reward += float(reward)
            turns[-1].info.update(json_safe(info))  # what the env reported after the move, as a single-agent step
        if terminated or truncated:
            trajectory = match.trajectories[agent]
            trajectory.final_observation = obs["text"]
            trajectory.success = info.get("outcome") == "win"
            trajectory.terminated, trajectory.truncated = bool(terminated), bool(truncated)
            match.final_infos[agent] = json_safe(info)
            match.truncated = match.truncated or bool(truncated)
            env.step(None)
            continue
        match.observations[agent], match.state_keys[agent] = obs["text"], str(info.get("state_key", obs["text"]))
        return True
    return False


def _messages(match: _Match, agent: str, history: int | None) -> list[Message]:
    trajectory = match.trajectories[agent]
    return build_messages("", [t.observation for t in trajectory.turns], [t.reply for t in trajectory.turns],
                          match.observations[agent], history)


def _act(waiting: list[_Match], learner: Policy, opponent: Policy, history: int | None,
         key_tag: int | None = None) -> None:
    """One batched ``generate`` per policy over the waiting matches, then step each match with its reply."""
    buckets: dict[int, list[_Match]] = {}
    policies = {id(learner): learner, id(opponent): opponent}
    for match in waiting:
        policy = learner if match.env.agent_selection == match.learner else opponent
        buckets.setdefault(id(policy), []).append(match)
    for key, group in buckets.items():
        seats = [Seat(m.env, m.env.agent_selection) for m in group]
        conversations = [_messages(m, s.agent, history) for m, s in zip(group, seats, strict=True)]
        if key_tag is None:
            generations = policies[key].generate(conversations, seats)
        else:
            keys = [(key_tag, m.seed, m.env.possible_agents.index(s.agent), len(m.trajectories[s.agent].turns))
                    for m, s in zip(group, seats, strict=True)]
            generations = policies[key].generate(conversations, seats, keys=keys)
        if len(generations) != len(group):
            raise RuntimeError(f"the policy returned {len(generations)} replies for {len(group)} conversations")
        for match, seat, generation in zip(group, seats, generations, strict=True):
            info = match.env.infos[seat.agent]
            move, read = read_move(generation.text, enable_think=match.env.unwrapped.enable_think)
            match.trajectories[seat.agent].turns.append(Turn(
                observation=match.observations[seat.agent], state_key=match.state_keys[seat.agent],
                reply=generation.text, actions=read["actions"], executed_actions=[move] if move else [],
                reward=0.0, info=json_safe({**info, **read}), token_ids=generation.token_ids,
                logprobs=generation.logprobs))
            match.order.append(seat.agent)
            match.env.step(generation.text)


def _outcome(rewards: Mapping[str, float], agent: str) -> str:
    mine, theirs = rewards[agent], max(r for a, r in rewards.items() if a != agent)
    return "win" if mine > theirs else "loss" if mine < theirs else "draw"


def _result(match: _Match) -> MatchResult:
    rewards = {a: match.totals.get(a, 0.0) for a in match.trajectories}
    for agent, trajectory in match.trajectories.items():
        if trajectory.turns:
            trajectory.turns[-1].info["outcome"] = _outcome(rewards, agent)
    return MatchResult(match.seed, match.learner, match.trajectories, rewards, _outcome(rewards, match.learner),
                       match.truncated, match.order, match.final_infos)


def score(results: Sequence[MatchResult]) -> dict[str, Any]:
    """Win/draw/loss counts and rates of the learner with 95% Wilson intervals, and its mean reward.

    Returns ``{"matches", "wins", "draws", "losses", "win_rate", "win_ci", "draw_rate", "draw_ci", "loss_rate",
    "loss_ci", "mean_reward", "truncated"}``.
    """
    n = len(results)
    out: dict[str, Any] = {"matches": n}
    for name, key in (("win", "wins"), ("draw", "draws"), ("loss", "losses")):
        k = sum(r.outcome == name for r in results)
        out[key] = k
        out[f"{name}_rate"] = k / n if n else 0.0
        out[f"{name}_ci"] = wilson_interval(k, n)
    out["mean_reward"] = float(np.mean([r.rewards[r.learner] for r in results])) if n else 0.0
    out["truncated"] = sum(r.truncated for r in results)
    return out


class ScriptedBargainPolicy:
    """Bargain's scripted bargainer (:func:`~agentgym_bench.multiagent.bargain.scripted_reply`) as a policy."""

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[Seat] | None = None,
                 keys: Sequence[tuple[int, ...]] | None = None) -> list[Generation]:
        """``keys`` are ignored: the scripted bargainer is deterministic."""
        return [Generation(scripted_reply(_bargain(seat), seat.agent)) for seat in _seats(envs, conversations)]


class RandomBargainPolicy:
    """Uniformly random Bargain demands, from a generator seeded at construction; with ``keys``, each conversation
    draws from its own generator seeded by ``key_seed(seed, key)`` (keyed sampling)."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[Seat] | None = None,
                 keys: Sequence[tuple[int, ...]] | None = None) -> list[Generation]:
        seats = _seats(envs, conversations)
        if keys is not None and len(keys) != len(seats):
            raise ValueError(f"{len(keys)} keys for {len(seats)} conversations")
        rngs = ([self.rng] * len(seats) if keys is None
                else [np.random.default_rng(key_seed(self.seed, k)) for k in keys])
        return [Generation(random_reply(_bargain(seat), seat.agent, rng))
                for seat, rng in zip(seats, rngs, strict=True)]


def _seats(envs: Sequence[Seat] | None, conversations: Sequence[list[Message]]) -> Sequence[Seat]:
    if envs is None or len(envs) != len(conversations) or not all(isinstance(s, Seat) for s in envs):
        raise ValueError("this policy reads the game: call it from play_matches, which passes a Seat per conversation")
    return envs


def _bargain(seat: Seat) -> BargainEnv:
    game = seat.env.unwrapped
    if not isinstance(game, BargainEnv):
        raise ValueError(f"this policy plays Bargain only, not {type(game).__name__}")
    return game


SCRIPTED: Mapping[str, Scripted] = {"random": Scripted(lambda s: RandomBargainPolicy(s.seed), keyed=True),
                                    "scripted": Scripted(lambda s: ScriptedBargainPolicy(), keyed=False)}
"""Bargain's model-free policies by name, for :func:`~agentgym_bench.rollout.specs.policy_from_spec`."""


def _policy(name: str, seed: int) -> Policy:
    """``"scripted"``, ``"random"`` or a model folder (``hf:`` implied; at temperature 1, 32-token replies)."""
    spec = name if name in SCRIPTED else f"hf:{name}"
    return policy_from_spec(spec, Sampling(max_new_tokens=32, seed=seed), scripted=SCRIPTED, max_batch_size=None)[0]


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of matches (an integer >= 1)")
    return int(text)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """``python -m agentgym_bench.multiagent.selfplay --learner scripted --opponent random --matches 200``."""
    parser = argparse.ArgumentParser(description="Win/draw/loss of a learner against an opponent on Bargain, on "
                                                 "validation seeds 0..matches-1, seats alternating, history 0.")
    parser.add_argument("--env", default="Bargain-v1", choices=sorted(BARGAIN_IDS),
                        help="Bargain's version (v1 restates the deal every round; the model-free policies play "
                        "both alike) (default: %(default)s)")
    parser.add_argument("--learner", default="scripted", help="scripted, random or a model folder")
    parser.add_argument("--opponent", default="random", help="scripted, random, self or a model folder")
    parser.add_argument("--matches", type=_positive, default=200, help="matches to play (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the policies' generators")
    args = parser.parse_args(argv)
    try:
        learner = _policy(args.learner, args.seed)
        opponent = learner if args.opponent == "self" else _policy(args.opponent, args.seed + 1)
    except UserError as err:  # one line, as agentgym-bench's own commands give it
        parser.error(f"{err} (--learner and --opponent take scripted, random or a model folder; --opponent also "
                     "self)")
    stats = score(play_matches(args.env, range(args.matches), learner, opponent, history=0))
    print(json.dumps({"learner": args.learner, "opponent": args.opponent, **stats}))
    return stats


if __name__ == "__main__":
    main()
