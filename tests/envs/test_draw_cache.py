"""The accepted-draw cache (agentgym_bench/envs/draw_cache.py) on the real envs that reject draws: a replayed
held-out seed gives the same episode as a cold, a warm or a disabled cache, in any order and in another process;
a replay runs one draw; the bound holds, least recently used first; threads share it; training seeds are not
remembered. Run as a script (``python test_draw_cache.py ORDER``) it prints every env's episodes as JSON, which the
cross-process test compares with its own."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pytest

from agentgym_bench.envs.draw_cache import CACHE, Draws, StaleDrawError
from agentgym_bench.envs.frozen_lake import FrozenLakeGame
from agentgym_bench.envs.sokoban.game import SokobanGame
from agentgym_bench.multiagent.bargain import BargainEnv
from agentgym_bench.seeds import TEST_SEEDS, TRAIN_SEED_START, V1_TEST_SEEDS

VALIDATION = list(range(8))
TEST = [TEST_SEEDS.start + i for i in range(8)]
SEEDS = VALIDATION + TEST + [TRAIN_SEED_START, TRAIN_SEED_START + 1, V1_TEST_SEEDS.start]
FROZEN_LAKE_ACTIONS = ("Down", "Right", "Down", "Right", "Up", "Left", "Down", "Right")


def frozen_lake_episode(env: FrozenLakeGame, seed: int) -> list[Any]:
    """The map, the oracle's plan and a fixed action sequence's trace (slippery moves draw from the env's
    generator after reset, so this also checks where reset left it)."""
    obs, _ = env.reset(seed=seed)
    out: list[Any] = [obs, list(env.desc), list(env.pos), env.oracle_turn(3, 10, 4)]
    for action in FROZEN_LAKE_ACTIONS:
        obs, reward, terminated, _, _ = env.step(action)
        out.append([obs, reward, terminated])
    return out


def sokoban_episode(env: SokobanGame, seed: int) -> list[Any]:
    """The grid (walls, targets, boxes, player) and the oracle's plan."""
    obs, _ = env.reset(seed=seed)
    return [obs, env.oracle_turn(5, 10, 10)]


def bargain_episode(env: BargainEnv, seed: int) -> list[Any]:
    observations, _ = env.reset(seed=seed)
    return [observations["player_0"]["text"], list(env.counts), [list(v) for v in env.values.values()]]


ENVS: dict[str, tuple[Callable[[], Any], Callable[[Any, int], list[Any]]]] = {
    "frozenlake": (FrozenLakeGame, frozen_lake_episode),
    "frozenlake-noslip": (lambda: FrozenLakeGame(is_slippery=False), frozen_lake_episode),
    "sokoban-6x6": (SokobanGame, sokoban_episode),
    "sokoban-8x8-2box": (lambda: SokobanGame(dim_room=(8, 8), num_boxes=2, search_depth=10), sokoban_episode),
    "bargain": (lambda: BargainEnv(max_rounds=5), bargain_episode),
}


def episodes(name: str, seeds: Iterable[int]) -> dict[int, list[Any]]:
    """``{seed: episode}`` from one env of kind ``name``, reset on ``seeds`` in that order."""
    make, play = ENVS[name]
    env = make()
    return {seed: play(env, seed) for seed in seeds}


def shuffled(seeds: list[int], salt: int) -> list[int]:
    out = list(seeds)
    random.Random(salt).shuffle(out)  # a local Random: the global one stays untouched
    return out


def draws_of(reset: Callable[[], Any]) -> int:
    """Attempts the draw cache counted during ``reset()``."""
    before = CACHE.stats()["draws"]
    reset()
    return CACHE.stats()["draws"] - before


@pytest.fixture
def cache():
    """The process's cache, emptied, its bound restored afterwards."""
    size = CACHE.max_entries
    CACHE.clear()
    yield CACHE
    CACHE.resize(size)
    CACHE.clear()


def global_rng_states() -> tuple[Any, ...]:
    """Python's and numpy's global generator states, comparable with ``==``."""
    kind, key, *rest = np.random.get_state()
    return random.getstate(), kind, key.tobytes(), rest


@pytest.fixture(scope="module")
def other_process() -> dict[str, dict[str, list[Any]]]:
    """Every env's episodes computed in a fresh process (a cold cache), seeds in reverse order, as JSON (seeds as
    strings, tuples as lists)."""
    out = subprocess.run([sys.executable, __file__, "reverse"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", sorted(ENVS))
def test_same_episodes_with_a_cold_a_warm_or_no_cache_in_any_order_and_process(name, cache, other_process):
    global_rngs = global_rng_states()
    cold = episodes(name, SEEDS)
    warm = episodes(name, shuffled(SEEDS + VALIDATION[:3], salt=1))  # some seeds twice in this pass
    assert cache.stats()["entries"] > 0
    cache.resize(0)
    disabled = episodes(name, shuffled(SEEDS, salt=2))
    assert cache.stats()["entries"] == 0
    assert cold == warm == disabled
    assert json.loads(json.dumps(cold)) == other_process[name]
    assert global_rng_states() == global_rngs


@pytest.mark.parametrize("name", sorted(ENVS))
def test_a_replayed_held_out_seed_draws_once(name, cache):
    make, play = ENVS[name]
    env = make()
    held_out = VALIDATION + TEST
    cold = [draws_of(lambda s=seed: play(env, s)) for seed in held_out]
    assert sum(cold) > 2 * len(held_out)  # about 10 draws a seed: rejection happened
    replays = cache.stats()["replays"]
    warm = [draws_of(lambda s=seed: play(env, s)) for seed in held_out]
    assert warm == [1] * len(held_out)
    assert cache.stats()["replays"] - replays == len(held_out)


def test_training_and_retired_seeds_and_unseeded_resets_are_not_remembered(cache):
    env = FrozenLakeGame()
    not_held_out = [TRAIN_SEED_START + i for i in range(10)] + [V1_TEST_SEEDS.start + i for i in range(10)]
    first = [draws_of(lambda s=seed: env.reset(seed=s)) for seed in not_held_out]
    env.reset(seed=0)  # a validation seed: one entry; the unseeded resets after it draw validation maps
    unseeded = [env.reset()[0] for _ in range(5)]
    assert cache.stats()["entries"] == 1
    again = [draws_of(lambda s=seed: env.reset(seed=s)) for seed in not_held_out]
    assert again == first and sum(first) > len(first)
    env.reset(seed=0)
    assert [env.reset()[0] for _ in range(5)] == unseeded
    assert cache.stats()["entries"] == 1


def test_the_bound_holds_and_the_least_recently_used_key_goes_first(cache):
    env = FrozenLakeGame()
    cold = {seed: draws_of(lambda s=seed: env.reset(seed=s)) for seed in range(6)}
    assert len(cache) == 6
    cache.resize(3)  # keeps 3, 4, 5
    assert len(cache) == 3 and cache.stats()["entries"] == 3
    assert draws_of(lambda: env.reset(seed=3)) == 1  # 3 is now the most recently used: 4 goes next
    env.reset(seed=6)
    assert len(cache) == 3
    assert draws_of(lambda: env.reset(seed=5)) == 1 and draws_of(lambda: env.reset(seed=3)) == 1
    assert draws_of(lambda: env.reset(seed=4)) == cold[4]  # evicted: drawn in full again (and stored, evicting 6)
    assert draws_of(lambda: env.reset(seed=0)) == cold[0]
    assert len(cache) == 3
    cache.resize(0)
    assert len(cache) == 0 and draws_of(lambda: env.reset(seed=0)) == cold[0] and len(cache) == 0
    with pytest.raises(ValueError, match="max_entries"):
        cache.resize(-1)


def test_two_threads_resetting_at_once_get_the_same_episodes(cache):
    seeds = list(range(40)) + [TEST_SEEDS.start + i for i in range(40)]
    cache.resize(0)
    expected = {name: episodes(name, seeds) for name in ("frozenlake", "sokoban-6x6")}
    cache.resize(24)  # below the seeds played: evictions while both threads store and look up
    results: dict[tuple[str, int], dict[int, list[Any]]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work(name: str, salt: int) -> None:
        try:
            start.wait()
            order = shuffled(seeds, salt) + shuffled(seeds, salt + 10)
            make, play = ENVS[name]
            env = make()
            got: dict[int, list[Any]] = {}
            for seed in order:
                episode = play(env, seed)
                assert got.setdefault(seed, episode) == episode
            results[name, salt] = got
        except BaseException as error:  # noqa: B036 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(name, salt)) for name in expected for salt in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(cache) <= 24
    for (name, _), got in results.items():
        assert got == expected[name]


def test_a_replay_that_is_rejected_raises_instead_of_playing_another_draw(cache):
    def sample(rng: np.random.Generator, below: float) -> float:
        draws = Draws(rng, ("test.sample",), "test", remember=True)  # the key misses `below`, on purpose
        for _ in draws.attempts(1000):
            x = float(rng.random())
            if x < below:
                draws.accept()
                return x
        raise AssertionError("no draw accepted")

    seed = next(s for s in range(1000) if 0.05 <= sample(np.random.default_rng(s), 0.1))
    with pytest.raises(StaleDrawError, match="rejected on replay"):
        sample(np.random.default_rng(seed), 0.05)
    assert sample(np.random.default_rng(seed), 0.05) < 0.05  # the stale entry was dropped: drawn in full


if __name__ == "__main__":
    order = list(reversed(SEEDS)) if sys.argv[1:] == ["reverse"] else SEEDS
    print(json.dumps({name: episodes(name, order) for name in ENVS}))
