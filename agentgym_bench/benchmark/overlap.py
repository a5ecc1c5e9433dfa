"""How much of a suite's test content also occurs in training and validation episodes (0 is the goal).

An episode's *content* is what a model could memorise from it: the first observation of the core game (a Sokoban
room with its start positions, a FrozenLake map with start, holes and goal), what WebShop's goal asks for (its
instruction without the opening words, :func:`~agentgym_bench.envs.webshop.catalog.requirements`), a Bargain deal
(pool and both players' values, seats unordered). Bandit has none: every episode is the same two arms and the seed only
draws the rewards. :func:`overlap` plays the first turn of each seed of a suite entry and of the training and
validation seeds, and counts the test episodes whose content also occurs there. ``benchmarks/content_overlap.py``
runs it over whole suites; the splits themselves are :mod:`agentgym_bench.seeds`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import gymnasium as gym

import agentgym_bench  # noqa: F401 - registers the ids
from agentgym_bench.benchmark.suites import SuiteEntry
from agentgym_bench.envs.bandit import BanditGame
from agentgym_bench.envs.webshop.catalog import load_catalog, requirements
from agentgym_bench.envs.webshop.game import WebShopGame
from agentgym_bench.multiagent.bargain import BARGAIN_IDS, BargainEnv
from agentgym_bench.multiagent.bargain_rules import deal_text
from agentgym_bench.seeds import TRAIN_SEED_START, VALIDATION_SEED_START, seed_split


@dataclass(frozen=True)
class Overlap:
    """One suite entry's test episodes against ``train`` training and ``validation`` validation episodes."""

    entry: str
    env_id: str
    test: int
    distinct_test: int
    train: int
    validation: int
    in_train: int
    in_validation: int

    @property
    def share_in_train(self) -> float:
        return self.in_train / self.test

    @property
    def share_in_validation(self) -> float:
        return self.in_validation / self.test


def content_reader(entry: SuiteEntry):
    """A function ``seed -> content text`` for ``entry``'s env, or ``None`` if the env generates no content."""
    if entry.opponent is not None:
        if entry.env_id not in BARGAIN_IDS:
            return None
        env = BargainEnv(**entry.env_kwargs)

        def deal(seed: int) -> str:
            env.reset(seed=seed)
            return deal_text(env.counts, *env.values.values())
        return deal

    game = gym.make(entry.env_id, **entry.make_kwargs()).unwrapped.game.unwrapped
    if isinstance(game, BanditGame):
        return None
    if isinstance(game, WebShopGame):  # training and validation seeds play the default split (agentgym-v1's: "test")
        by_seed, goals = WebShopGame(), load_catalog().goals

        def goal(seed: int) -> str:  # what the goal asks for: a twin in other opening words is the same content
            player = game if seed_split(seed) == "test" else by_seed
            return requirements(goals[player.reset(seed=seed)[1]["goal_index"]])
        return goal
    return lambda seed: game.reset(seed=seed)[0]


def overlap(entry: SuiteEntry, train: int, validation: int, test_seeds: Iterable[int] | None = None) -> Overlap | None:
    """The test episodes of ``entry`` (its seeds, or ``test_seeds``) whose content occurs among the first ``train``
    training seeds and the first ``validation`` validation seeds; ``None`` for an env without generated content."""
    read = content_reader(entry)
    if read is None:
        return None
    test = [read(s) for s in (entry.seeds if test_seeds is None else test_seeds)]
    seen_train = {read(s) for s in range(TRAIN_SEED_START, TRAIN_SEED_START + train)}
    seen_validation = {read(s) for s in range(VALIDATION_SEED_START, VALIDATION_SEED_START + validation)}
    return Overlap(entry.name, entry.env_id, len(test), len(set(test)), train, validation,
                   sum(c in seen_train for c in test), sum(c in seen_validation for c in test))
