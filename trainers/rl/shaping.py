"""Progress rewards for Sokoban: success, plus each turn's change in the distance to a solution.

``TrainConfig.train_reward: progress``. The rewards of :func:`~trainers.rl.samples.success_rewards` (1 on the last
turn of a won episode, every turn's format penalty), and on each turn of a Sokoban episode
``weight * (phi(s') - phi(s))``, where ``s`` and ``s'`` are the rooms before and after the turn's executed actions and

    phi(s) = -min(d(s), D) / D

with ``d(s)`` the length of a shortest solution of the room (:func:`agentgym_bench.envs.sokoban.solver.solve`, a
breadth-first search cut at ``D`` moves; a room with none within ``D``, dead or far, counts ``D``) and ``D`` the
env's action budget (``max_actions_per_episode``, 10 for RAGEN's budgets, the depth our Sokoban rooms are generated
within). A turn that brings the room two moves nearer a solution earns ``0.2 * weight`` at ``D = 10``; one that
pushes a box into a corner loses up to ``weight``.

This is potential-based shaping (Ng, Harada & Russell, ICML 1999): over an episode the shaping sums to
``weight * (phi(s_T) - phi(s_0))``, and every member of a group starts from the same room. It is not
policy-invariant as their theorem is, since the last room's potential differs between lost episodes: a lost episode
keeps partial credit for ending nearer a solution (what RAGEN's +1 a box on target and -1 a box off it also give,
measured here in moves rather than boxes). It gives an all-fail group reward variance, and a turn its own credit, where
success alone gives neither: the diagnosis of issue 59 (most of Sokoban 8x8/2's groups carry no signal,
``docs/lab/2026-11-28-rl-signal.md``). Other envs get the success rewards unchanged.

The rooms are re-made from the trajectory (its env id, kwargs and seed reset a fresh env, whose room is the one the
policy saw, since a seed gives the same episode always) and its turns' ``executed_actions`` applied with the pure
rules (:func:`agentgym_bench.envs.sokoban.rules.move`). The search costs about 0.1 ms a room on 8x8 with two boxes.
"""

from __future__ import annotations

import json
from dataclasses import replace

import gymnasium as gym

import agentgym_bench  # noqa: F401  (registers the envs)
from agentgym_bench.envs.sokoban.rules import Room, move
from agentgym_bench.envs.sokoban.solver import solve
from agentgym_bench.registration import AGENT_ENVS
from agentgym_bench.rollout.trajectory import Trajectory
from trainers.rl.samples import success_rewards


def distance(room: Room, horizon: int) -> int:
    """The length of a shortest solution of ``room``, or ``horizon`` if it has none within ``horizon`` moves."""
    solution = solve(room, max_depth=horizon)
    return horizon if solution is None else len(solution)


def progress_rewards(trajectories: list[Trajectory], weight: float) -> list[Trajectory]:
    """Copies of ``trajectories`` with the success rewards plus, on Sokoban, ``weight`` times each turn's change in
    potential (module docstring). The order and everything but the turn rewards are kept."""
    envs: dict[str, gym.Env] = {}
    try:
        return [_with_progress(success_rewards(t), weight, envs) for t in trajectories]
    finally:
        for env in envs.values():
            env.close()


def _with_progress(trajectory: Trajectory, weight: float, envs: dict[str, gym.Env]) -> Trajectory:
    spec = AGENT_ENVS.get(trajectory.env_id)
    if spec is None or spec.game != "Sokoban" or not trajectory.turns:
        return trajectory
    key = json.dumps([trajectory.env_id, trajectory.env_kwargs], sort_keys=True, default=str)
    if key not in envs:
        envs[key] = gym.make(trajectory.env_id, **trajectory.env_kwargs)
    env = envs[key]
    env.reset(seed=trajectory.seed)
    room, horizon = env.unwrapped.game.room, env.unwrapped.max_actions_per_episode
    before = distance(room, horizon)
    turns = []
    for turn in trajectory.turns:
        for action in turn.executed_actions:
            room = move(room, action)
        after = distance(room, horizon)
        turns.append(replace(turn, reward=turn.reward + weight * (before - after) / horizon))
        before = after
    return replace(trajectory, turns=turns)
