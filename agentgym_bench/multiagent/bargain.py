"""``BargainEnv``: two LLM agents split a pool of items they value privately, demanding at the same time."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from agentgym_bench.agent.parsing import format_reply
from agentgym_bench.multiagent import bargain_rules as rules
from agentgym_bench.multiagent.seats import (
    DEFAULT_MAX_OBSERVATION_LENGTH,
    action_space,
    format_hint,
    observation,
    observation_space,
    read_move,
)
from agentgym_bench.seeds import seed_content_split

AGENTS = ("player_0", "player_1")


class BargainEnv(ParallelEnv):
    """Bargain: a repeated Nash demand game with private values, for two LLM agents (Parallel API).

    Description:
        A pool holds 1-4 books, hats and balls. Each player values the item types privately (integers; the whole
        pool is worth 10 to each) and only knows its own values. Each round both players state at the same time
        which bundle they want. If the two bundles fit in the pool together, each gets its bundle and the game
        ends; otherwise both see the two demands and a new round starts. After ``max_rounds`` rounds without a
        deal both get nothing. Deals need each player to infer from the other's demands what it cares about and to
        concede what it values little: private information, simultaneous moves and general-sum payoffs, which is
        why this is a PettingZoo env and not a single-agent Gymnasium one (the opponent is a learner too). The
        rules are :mod:`~agentgym_bench.multiagent.bargain_rules`; its deal format follows Lewis et al. 2017,
        "Deal or No Deal?" (arXiv 1706.05125), with simultaneous demands (Nash, 1953) instead of alternating
        offers so that both seats act every round.

    Action Space:
        The model's raw reply (``Text``; any string accepted). The move is the first action inside
        ``<answer>...</answer>`` (the single-agent parser): three integers, books hats balls, e.g.
        ``<think>...</think><answer>2 1 0</answer>``. A reply without such a move, or a bundle larger than the
        pool, is no demand: that round cannot make a deal (``info["valid_demand"] = False``).

    Observation Space:
        ``Dict({"text": Text})``, private to each player. ``player_0`` after ``reset(seed=0)`` reads (lines
        wrapped here)::

            Bargain: you and the other player split a pool of 3 books, 2 hats, 2 balls.
            Your values: book 2, hat 0, ball 2 (the whole pool is worth 10 to you). The other player's values are
            private and may differ.
            Each round you both state at the same time how many of each item you want. If the two demands fit in
            the pool together, you each get what you asked for and the game ends; otherwise the next round starts.
            With no deal after round 5 you both get nothing. Your reward is the worth of what you get over 10.

            Round 1 of 5. Answer with three numbers, books hats balls, e.g. <answer>1 0 1</answer>.
            Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text.

        Later rounds read ``Round 1: you asked for 1 book, 0 hats, 1 ball; they asked for ...: no deal.`` and
        the next round's request. With ``restate_deal=True`` (``Bargain-v1``) they begin with the deal again,
        ``Pool: 3 books, 2 hats, 2 balls. Your values: book 2, hat 0, ball 2.``, so that a prompt holding only the
        current observation (history 0) still says what each item is worth to the seat.

    Rewards:
        0 until the end; then each player's bundle value over 10 (in [0, 1]), 0 for both without a deal.

    Episode End:
        Both agents terminate at a deal or after ``max_rounds`` rounds (the round count is in the prompt, so the
        end is part of the game, not a truncation). With ``max_cycles`` below ``max_rounds``, both agents are
        truncated after ``max_cycles`` rounds without a deal (PettingZoo's cycle limit; the prompt does not show
        it), and both get nothing.

    Info:
        Each agent, every call: ``state_key`` (round and the last two demands: equal keys within a seed group mean
        equal states, for GiGPO anchors), ``round``; after a step also ``format_valid``, ``actions``,
        ``dropped_actions``, ``demand`` (the bundle, or ``None``), ``valid_demand``; at the end ``deal`` (bool)
        and ``outcome`` (``"win"``/``"loss"``/``"draw"`` by comparing the two payoffs).

    Arguments:
        max_rounds: rounds before the game ends without a deal (>= 1).
        max_cycles: PettingZoo's step limit: truncate both agents after this many rounds (``None``: no limit but
            ``max_rounds``). The module's ``parallel_env(**kwargs)`` and ``env(**kwargs)`` (its AEC form) take it
            too, as PettingZoo's own envs do, so ``pettingzoo.test.max_cycles_test(bargain)`` runs.
        enable_think: require ``<think>...</think>`` before ``<answer>``.
        restate_deal: begin every observation after the first with the pool and the seat's values (``Bargain-v1``).
        max_observation_length: size of the observation's text space.
        render_mode: ``"ansi"`` (both players' views) or ``None``.

    Scripted opponent:
        :func:`scripted_reply` (:func:`~agentgym_bench.multiagent.bargain_rules.scripted_demand`): asks for all it
        values, then concedes towards half the pool's worth, taking any fitting bundle that meets its aspiration.
        Two of them reach a deal in at least 95% of seeds 0-299 (290 of 300; tested); against uniformly random
        demands it wins 0.570 [0.521, 0.618] of 400 validation matches (``docs/multiagent.md``, with the command).

    Splits:
        A deal (pool and both value vectors, seats unordered; :func:`~agentgym_bench.multiagent.bargain_rules.
        deal_text`) belongs to one content split by its hash (:func:`agentgym_bench.seeds.content_split`): 10% of
        deals are test deals, 10% validation deals, 80% training deals, and a seed draws only deals of its own
        split (held-out test seeds: test deals; validation seeds 0..9,999: validation deals; the rest: training
        deals). ``reset()`` without a seed keeps the split of the last seeded reset. agentgym-ma-v1's retired test
        seeds (from 1,000,000,000) draw any deal, as all seeds did before.

    Version History:
        * v1 (``Bargain-v1``, ``restate_deal=True``): every observation after the first restates the pool and the
          seat's values. In v0 only the first observation shows them, so with history 0 a seat bargained from round
          2 on without knowing what the items are worth to it.
        * v0: initial version; deals were made content-disjoint by split (before, every seed drew any deal, and
          the space is small: agentgym-ma-v1's test deals also occurred among training seeds).
    """

    metadata = {"name": "bargain_v0", "render_modes": ["ansi"]}

    def __init__(self, *, max_rounds: int = 5, max_cycles: int | None = None, enable_think: bool = True,
                 restate_deal: bool = False, max_observation_length: int = DEFAULT_MAX_OBSERVATION_LENGTH,
                 render_mode: str | None = None):
        if not isinstance(max_rounds, int) or max_rounds < 1:
            raise ValueError(f"max_rounds={max_rounds!r} must be a positive integer")
        if max_cycles is not None and (not isinstance(max_cycles, int) or max_cycles < 1):
            raise ValueError(f"max_cycles={max_cycles!r} must be a positive integer or None")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode={render_mode!r} must be None or 'ansi'")
        self.max_rounds, self.max_cycles, self.enable_think = max_rounds, max_cycles, enable_think
        self.restate_deal = bool(restate_deal)
        if self.restate_deal:
            self.metadata = {**self.metadata, "name": "bargain_v1"}
        self.max_observation_length, self.render_mode = max_observation_length, render_mode
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self._observation_space, self._action_space = observation_space(max_observation_length), action_space()
        self._seeds = np.random.default_rng()
        self.content_split: str | None = "train"  # the split of the deals reset draws (seeds.seed_content_split)
        self.counts: rules.Bundle = (0, 0, 0)
        self.values: dict[str, rules.Bundle] = {}
        self.history: list[dict[str, rules.Bundle | None]] = []
        self.final: dict[str, rules.Bundle] | None = None
        self.done = True
        self.truncated = False

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    # -- text ------------------------------------------------------------------------------------------------------

    def _own_values(self, agent: str) -> str:
        return ", ".join(f"{item} {v}" for item, v in zip(rules.ITEMS, self.values[agent], strict=True))

    def _intro(self, agent: str) -> str:
        own = self._own_values(agent)
        return (f"Bargain: you and the other player split a pool of {rules.describe(self.counts)}.\n"
                f"Your values: {own} (the whole pool is worth {rules.TOTAL_VALUE} to you). The other player's values "
                "are private and may differ.\n"
                "Each round you both state at the same time how many of each item you want. If the two demands fit "
                "in the pool together, you each get what you asked for and the game ends; otherwise the next round "
                f"starts. With no deal after round {self.max_rounds} you both get nothing. Your reward is the worth "
                f"of what you get over {rules.TOTAL_VALUE}.\n")

    def _text(self, agent: str) -> str:
        other = AGENTS[1 - AGENTS.index(agent)]
        lines = [self._intro(agent)] if not self.history else []
        if self.history and self.restate_deal:
            lines.append(f"Pool: {rules.describe(self.counts)}. Your values: {self._own_values(agent)}.")
        for r, demands in enumerate(self.history[-1:], start=len(self.history)):
            mine, theirs = (demands[agent], demands[other])
            said = lambda b: rules.describe(b) if b is not None else "nothing readable"  # noqa: E731
            lines.append(f"Round {r}: you asked for {said(mine)}; they asked for {said(theirs)}: "
                         + ("deal." if self.final else "no deal."))
        if self.final is not None:
            got = self.final[agent]
            lines.append(f"Deal: you get {rules.describe(got)}, worth {rules.value(got, self.values[agent])}.")
        elif self.truncated:
            lines.append(f"Stopped after round {len(self.history)} (the cycle limit): you both get nothing.")
        elif self.done:
            lines.append(f"No deal after {self.max_rounds} rounds: you both get nothing.")
        else:
            lines.append(f"Round {len(self.history) + 1} of {self.max_rounds}. Answer with three numbers, books hats "
                         "balls, e.g. <answer>1 0 1</answer>.\n" + format_hint(self.enable_think))
        return "\n".join(lines)

    def _state_key(self, agent: str) -> str:
        other = AGENTS[1 - AGENTS.index(agent)]
        last = self.history[-1] if self.history else {agent: None, other: None}
        return f"round={len(self.history)};mine={last[agent]};theirs={last[other]};done={self.done}"

    def _observations(self) -> dict[str, dict[str, str]]:
        return {a: observation(self._text(a), self.max_observation_length) for a in self.agents}

    def _base_info(self, agent: str) -> dict[str, Any]:
        return {"state_key": self._state_key(agent), "round": len(self.history)}

    # -- PettingZoo API --------------------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
        """Deal a new pool and values: ``seed`` fixes them (``None``: drawn from a generator seeded by the last
        seed)."""
        if seed is not None:
            self._seeds = np.random.default_rng(seed)
        self.content_split = seed_content_split(seed, self.content_split)
        rng = np.random.default_rng(self._seeds.integers(2**63)) if seed is None else np.random.default_rng(seed)
        self.counts, values_0, values_1 = rules.sample_deal(rng, self.content_split, remember=seed is not None)
        self.values = {AGENTS[0]: values_0, AGENTS[1]: values_1}
        self.history, self.final, self.done, self.truncated = [], None, False, False
        self.agents = list(AGENTS)
        return self._observations(), {a: self._base_info(a) for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if self.done:
            started = "after the game ended" if self.values else "before any game started"
            raise RuntimeError(f"step() called {started}; call reset() first")
        missing = sorted(set(self.agents) - set(actions))
        if missing:
            raise ValueError(f"step() needs an action for every live agent; missing {missing}")
        reads, demands = {}, {}
        for agent in self.agents:
            move, reads[agent] = read_move(actions[agent], enable_think=self.enable_think)
            demands[agent] = rules.read_demand(move, self.counts)
        self.history.append(demands)
        a, b = demands[AGENTS[0]], demands[AGENTS[1]]
        if a is not None and b is not None and rules.fits(a, b, self.counts):
            self.final = {AGENTS[0]: a, AGENTS[1]: b}
        self.done = self.final is not None or len(self.history) >= self.max_rounds
        if not self.done and self.max_cycles is not None and len(self.history) >= self.max_cycles:
            self.done = self.truncated = True
        payoffs = {agent: rules.payoff(self.final[agent], self.values[agent]) if self.final else 0.0
                   for agent in self.agents}
        rewards = payoffs if self.done else dict.fromkeys(self.agents, 0.0)
        observations = self._observations()
        infos = {}
        for agent in self.agents:
            infos[agent] = {**self._base_info(agent), **reads[agent], "demand": demands[agent],
                            "valid_demand": demands[agent] is not None}
            if self.done:
                other = AGENTS[1 - AGENTS.index(agent)]
                diff = payoffs[agent] - payoffs[other]
                infos[agent].update(deal=self.final is not None,
                                    outcome="win" if diff > 0 else "loss" if diff < 0 else "draw")
        terminations = dict.fromkeys(self.agents, self.done and not self.truncated)
        truncations = dict.fromkeys(self.agents, self.truncated)
        if self.done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return "\n\n".join(f"[{a}]\n{self._text(a)}" for a in AGENTS if self.values)

    def close(self) -> None:
        pass

    def value_against_random(self, agent: str) -> float:
        """The most payoff ``agent`` can expect in this game (after ``reset``) against uniformly random demands,
        seeing only its own values: :func:`~agentgym_bench.multiagent.bargain_rules.best_against_random` of the pool,
        its values and ``max_rounds`` (exact; the verifier's ceiling of a suite's entry against random demands)."""
        return rules.best_against_random(self.counts, self.values[agent], self.max_rounds)


BARGAIN_IDS: dict[str, Callable[..., BargainEnv]] = {"Bargain-v0": BargainEnv,
                                                     "Bargain-v1": partial(BargainEnv, restate_deal=True)}
"""Bargain's two-player env ids (``v1`` restates the deal every round: :class:`BargainEnv`'s version history)."""


def parallel_env(**kwargs: Any) -> BargainEnv:
    """``BargainEnv(**kwargs)``: PettingZoo's module-level constructor of the Parallel form."""
    return BargainEnv(**kwargs)


def env(**kwargs: Any) -> AECEnv:
    """The AEC form (``parallel_to_aec``), PettingZoo's module-level ``env()``."""
    return parallel_to_aec(BargainEnv(**kwargs))


def scripted_reply(env: BargainEnv, agent: str) -> str:
    """The scripted bargainer's reply for ``agent`` now (reads the true game; no model)."""
    other = AGENTS[1 - AGENTS.index(agent)]
    their_last = env.history[-1][other] if env.history else None
    demand = rules.scripted_demand(env.counts, env.values[agent], len(env.history), env.max_rounds, their_last)
    return format_reply([" ".join(map(str, demand))], enable_think=env.enable_think)


def random_reply(env: BargainEnv, agent: str, rng: np.random.Generator) -> str:
    """A uniformly random bundle within the pool, well formatted."""
    demand = [int(rng.integers(0, c + 1)) for c in env.counts]
    return format_reply([" ".join(map(str, demand))], enable_think=env.enable_think)
