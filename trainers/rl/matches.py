"""Two-player rollouts for the trainers: :class:`MatchGroups`, the rollout engine's ``EnvGroups`` for a PettingZoo env.

An env manager with an ``opponent`` (``trainers.rl.config.EnvManager``) rolls out matches instead of single-agent
episodes: ``num_env_groups x group_size`` matches of one two-player env (``Bargain-v0``, ``TextArena/<id>``), all
members of a group on the group's seed and the learner on the same seat, played in lockstep by
:func:`agentgym_bench.multiagent.selfplay.play_matches` (one batched ``generate`` per policy per tick). Only the
learner seat's turns come back, as ordinary :class:`~agentgym_bench.rollout.trajectory.Trajectory` objects, so
the loop, the samples, the advantages (GiGPO anchors from the env's ``state_key``) and the metrics are the
single-agent ones. ``rollout`` has ``EnvGroups.rollout``'s signature and seed rule: group ``j`` of rollout ``k``
resets with ``seed + k * num_env_groups + j`` (``fixed_seeds``: ``seed + j`` every time).

Opponents (:data:`OPPONENTS`):

- ``random`` / ``scripted``: Bargain's fixed policies (uniformly random demands; the scripted bargainer).
- ``self``: the learner's own policy on both seats (one batched call for both); only its learner-seat turns train.
- ``snapshot``: a frozen copy of the learner (its weights, tokenizer and sampling settings), copied from the
  learner before rollout 0 and then every ``snapshot_every`` rollouts; between copies it does not change. It
  needs a policy holding its model (the ``hf`` backend).

Seats: ``alternate`` puts the learner on ``player_{g % 2}`` in global group ``g`` (every member of a group on the same
seat, so a group compares like with like), or one agent name for every match.

Randomness: the opponent's sampling stream (``random``, ``snapshot``) restarts each rollout from
``(opponent_seed, rollout index)``, so a rollout depends only on the learner and its index (a resumed run replays
the same opponent draws) and every validation pass meets the same opponent draws (paired comparisons).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from agentgym_bench.multiagent.bargain import BARGAIN_IDS
from agentgym_bench.multiagent.selfplay import SCRIPTED, RandomBargainPolicy, make_multiagent_env, play_matches
from agentgym_bench.rollout.engine import first_group_seed, shard_groups
from agentgym_bench.rollout.policy import Policy
from agentgym_bench.rollout.specs import Sampling
from agentgym_bench.rollout.trajectory import Trajectory

OPPONENTS = ("random", "scripted", "self", "snapshot")
"""What an env manager's ``opponent`` may name."""
FIXED_OPPONENTS = ("random", "scripted")
"""Opponents that do not learn: the ones validation may use."""
BARGAIN_ONLY = ("random", "scripted")
"""Opponents that read Bargain's game state."""


def learner_seat(learner_seats: str, group: int) -> str:
    """The learner's agent in global group ``group``: ``player_{group % 2}`` for ``alternate``, else the name."""
    return f"player_{group % 2}" if learner_seats == "alternate" else learner_seats


class MatchGroups:
    """``num_env_groups x group_size`` matches of a two-player env against ``opponent``; the learner's trajectories.

    Arguments:
        env_id: a two-player env id (:func:`~agentgym_bench.multiagent.selfplay.make_multiagent_env`).
        num_env_groups: groups of the global batch (all processes).
        group_size: matches per group, same seed and learner seat.
        opponent: one of :data:`OPPONENTS`.
        env_kwargs: keyword arguments of the env.
        learner_seats: ``alternate`` or an agent name (``player_0``).
        seed: the first seed (module docstring).
        fixed_seeds: the same seeds every rollout (validation).
        shard: ``(rank, world_size)``: play only this process's contiguous share of the groups (they must divide
            evenly); seeds, groups and seats stay those of the global batch.
        opponent_seed: seeds the opponent's sampling stream (module docstring).
        snapshot_every: rollouts between refreshes of the ``snapshot`` opponent (>= 1).

    Attributes:
        iteration: rollouts done so far (restore it to resume a run's seeds; a ``snapshot`` opponent is then copied
            from the learner at the first rollout, exact when ``iteration`` is a multiple of ``snapshot_every``).
        snapshot_iteration: the rollout at which the snapshot was last copied (``None``: not yet).
    """

    def __init__(self, env_id: str, num_env_groups: int, group_size: int = 1, *, opponent: str,
                 env_kwargs: Mapping[str, Any] | None = None, learner_seats: str = "alternate", seed: int = 0,
                 fixed_seeds: bool = False, shard: tuple[int, int] = (0, 1), opponent_seed: int = 0,
                 snapshot_every: int = 1):
        if opponent not in OPPONENTS:
            raise ValueError(f"opponent={opponent!r} is not one of {', '.join(OPPONENTS)}")
        if opponent in BARGAIN_ONLY and env_id not in BARGAIN_IDS:
            raise ValueError(f"opponent={opponent!r} plays Bargain only; for {env_id} use self or snapshot")
        for name, value in (("num_env_groups", num_env_groups), ("group_size", group_size),
                            ("snapshot_every", snapshot_every)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        owned = shard_groups(num_env_groups, shard, "match groups")
        self.env_kwargs = dict(env_kwargs or {})
        env = make_multiagent_env(env_id, **self.env_kwargs)  # the check that env_id and env_kwargs build
        agents = list(env.possible_agents)
        env.close()
        if learner_seats != "alternate" and learner_seats not in agents:
            raise ValueError(f"learner_seats={learner_seats!r} must be 'alternate' or an agent of {env_id}: {agents}")
        if learner_seats == "alternate" and agents != ["player_0", "player_1"]:
            raise ValueError(f"learner_seats='alternate' needs agents player_0 and player_1, {env_id} has {agents}")
        self.env_id, self.tags = env_id, [env_id]
        self.num_env_groups, self.group_size = num_env_groups, group_size
        self.opponent, self.learner_seats = opponent, learner_seats
        self.seed, self.fixed_seeds, self.opponent_seed = seed, fixed_seeds, opponent_seed
        self.snapshot_every = snapshot_every
        self.groups = owned
        self.iteration = 0
        self.snapshot: Any = None
        self.snapshot_iteration: int | None = None
        self._fixed: Policy | None = SCRIPTED[opponent].build(Sampling(seed=0)) if opponent in SCRIPTED else None

    def group_seeds(self) -> list[int]:
        """The seed of each owned group in the next rollout."""
        base = first_group_seed(self.seed, self.iteration, self.num_env_groups, self.fixed_seeds)
        return [base + g for g in self.groups]

    def rollout(self, policy: Policy, *, history: int | None = None, progress: bool = False,
                prompt_fits: Callable[[list[dict[str, str]]], bool] | None = None,
                keyed: bool = False) -> list[Trajectory]:
        """Play one match per owned member against the opponent; the learner seat's trajectories, group-major.
        ``progress`` and ``keyed`` are accepted for ``EnvGroups.rollout``'s interface; ``progress`` is ignored.

        Raises:
            ValueError: ``prompt_fits`` is given (a length cap is not implemented for matches) or ``keyed`` (keyed
                sampling is not either), or a ``snapshot`` opponent with a policy that does not hold its model.
        """
        if prompt_fits is not None or keyed:
            raise ValueError("a length cap (sequence_length) and keyed sampling are not implemented for two-player "
                             "rollouts")
        opponent = self._opponent(policy)
        seeds = [s for s in self.group_seeds() for _ in range(self.group_size)]
        seats = [learner_seat(self.learner_seats, g) for g in self.groups for _ in range(self.group_size)]
        results = play_matches(self.env_id, seeds, policy, opponent, env_kwargs=self.env_kwargs,
                               learner_seats=seats, history=history, group_size=self.group_size)
        trajectories = [r.learner_trajectory for r in results]
        for i, trajectory in enumerate(trajectories):
            trajectory.group = self.groups[i // self.group_size]
        if not self.fixed_seeds:
            self.iteration += 1
        return trajectories

    def _opponent(self, policy: Policy) -> Policy:
        """This rollout's opponent, its stream restarted (module docstring); refreshes a due snapshot first."""
        stream = int(np.random.SeedSequence([self.opponent_seed, self.iteration]).generate_state(1)[0])
        if self.opponent == "self":
            return policy
        if self.opponent == "snapshot":
            due = self.snapshot_iteration is None or self.iteration - self.snapshot_iteration >= self.snapshot_every
            if due:
                self.refresh_snapshot(policy)
            self.snapshot.generator.manual_seed(stream)
            return self.snapshot
        if isinstance(self._fixed, RandomBargainPolicy):
            self._fixed.rng = np.random.default_rng(stream)
        return self._fixed  # type: ignore[return-value]

    def refresh_snapshot(self, policy: Policy) -> None:
        """Copy the learner's current weights into the snapshot opponent (built from the learner the first time)."""
        model = getattr(policy, "model", None)
        if model is None or not hasattr(policy, "generator"):
            raise ValueError(f"opponent='snapshot' copies the learner's model, which a {type(policy).__name__} "
                             "does not hold: use generation_backend hf")
        if self.snapshot is None:
            self.snapshot = copy.copy(policy)  # the sampling settings; model and generator replaced below
            self.snapshot.model = copy.deepcopy(model).eval().requires_grad_(False)
            self.snapshot.generator = copy.deepcopy(policy.generator)
        else:
            self.snapshot.model.load_state_dict(model.state_dict())
        self.snapshot_iteration = self.iteration

    def close(self) -> None:
        """Nothing to release (each rollout builds and drops its envs); the same interface as ``EnvGroups``."""

    def __enter__(self) -> MatchGroups:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
