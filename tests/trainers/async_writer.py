"""A stand-in rollout worker for tests/trainers/test_async_rollout.py, in a module light to spawn (no transformers):
it writes batches of several MB with the worker's own writer (:class:`trainers.rl.async_rollout.BatchFiles`)."""

import itertools
import time
from pathlib import Path

from agentgym_bench.rollout.trajectory import Trajectory, Turn
from trainers.rl.async_rollout import BatchFiles, RolloutBatch

EPISODES, TURNS, TOKENS = 512, 10, 64
"""A batch of 512 episodes of 10 turns of 64 tokens: about 5 MB pickled (some 75 pipe buffers of 64 KiB), written in
tens of milliseconds."""


def big_batch(iteration: int) -> RolloutBatch:
    """Batch ``iteration``: every turn's log-probs say where they belong, so :func:`whole` can check them all."""
    episodes = []
    for e in range(EPISODES):
        turns = [Turn(f"observation {e} {t} " * 8, f"s{t}", "<answer>Left</answer>", ["Left"], ["Left"], 0.0,
                      {"success": False}, token_ids=list(range(TOKENS)), logprobs=_logprobs(iteration, e, t))
                 for t in range(TURNS)]
        episodes.append(Trajectory("AgentFrozenLake-v0", {}, "t", e, e, "", 0, turns=turns))
    return RolloutBatch(iteration, iteration - 1, episodes, b"state", 0.5)


def _logprobs(iteration: int, episode: int, turn: int) -> list[float]:
    return [-(iteration + (episode * TURNS + turn) * 1e-3 + i * 1e-6) for i in range(TOKENS)]


def whole(batch: RolloutBatch, iteration: int) -> bool:
    """``batch`` is batch ``iteration`` as written, to the last log-prob."""
    return (batch.iteration == iteration and len(batch.trajectories) == EPISODES
            and all(len(t.turns) == TURNS for t in batch.trajectories)
            and all(turn.logprobs == _logprobs(iteration, e, k)
                    for e, t in enumerate(batch.trajectories) for k, turn in enumerate(t.turns)))


def write_batches(folder: str) -> None:
    """Write batches 1, 2, ... into ``folder``, batch k once batch k - 2 was taken (the pace ``max_staleness: 1``
    sets the real worker), until killed."""
    batches = BatchFiles(Path(folder))
    for k in itertools.count(1):
        batch = big_batch(k)
        while k > 2 and batches.path(k - 2).exists():
            time.sleep(0.001)
        batches.put(batch)
