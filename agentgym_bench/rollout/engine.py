"""The rollout engine: env groups played in lockstep with one batched policy call per turn.

:class:`EnvGroups` holds ``num_env_groups x group_size`` agent envs (RAGEN's ``es_manager``, ROLL's env manager).
Groups are split across env ids by ``tags`` and ``num_groups_partition`` (several ids in one batch); every member
of a group resets with the same seed, so members start in the same state and, taking the same actions, see the same
outcomes (RAGEN semantics; stochastic transitions come from the env's seeded ``np_random``).

Seeds (ranges: :mod:`agentgym_bench.seeds`). The ``j``-th group of a tag (counting within the tag) resets with
``seed + iteration * num_env_groups + j``; ``iteration`` advances after each :meth:`EnvGroups.rollout` unless
``fixed_seeds`` (set it to resume a run's sequence). Training starts at
``TRAIN_SEED_START``; validation (:meth:`EnvGroups.validation`) uses seeds ``0 .. N-1`` per env id, fixed.

Sharding. Under data parallelism each process plays a contiguous share of the *global* groups (``shard=(rank,
world_size)``) with the seeds one process would give them, so N processes play exactly the episodes of one.

Each turn :meth:`EnvGroups.rollout` gathers the messages of every live env (:func:`build_messages` with the history
window) into one ``policy.generate`` call, steps each env with its reply, and drops finished envs. Stepping and
resetting may run in a thread pool (``max_workers``) for slow envs such as HTTP WebShop.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import gymnasium as gym

from agentgym_bench.progress import progress as progress_bar
from agentgym_bench.registration import OWN_ENV_HINT, registered
from agentgym_bench.rollout.policy import Generation, Policy
from agentgym_bench.rollout.trajectory import Trajectory, Turn, build_messages, json_safe
from agentgym_bench.seeds import TRAIN_SEED_START, VALIDATION_SEED_START


def tag_hash(tag: str) -> int:
    """A stable 32-bit number for an env tag (part of keyed-sampling keys)."""
    return int.from_bytes(hashlib.sha256(tag.encode()).digest()[:4], "little")


def first_group_seed(seed: int, iteration: int, num_env_groups: int, fixed_seeds: bool) -> int:
    """The seed of global group 0 in rollout ``iteration`` (module docstring): ``seed + iteration * num_env_groups``,
    or ``seed`` every time with ``fixed_seeds``; group ``j`` adds ``j``. Two-player match groups use it too."""
    return seed + (0 if fixed_seeds else iteration * num_env_groups)


def shard_groups(total: int, shard: tuple[int, int], what: str = "env groups") -> list[int]:
    """The global group indices process ``rank`` of ``world_size`` (``shard``) plays: a contiguous share.

    Raises:
        ValueError: the rank is out of range or ``total`` does not divide evenly over the processes.
    """
    rank, world = shard
    if not 0 <= rank < world or total % world:
        raise ValueError(f"{total} {what} cannot be split evenly over {world} processes (shard={shard})")
    per = total // world
    return list(range(rank * per, (rank + 1) * per))


def even_partition(num_env_groups: int, num_tags: int) -> list[int]:
    """Groups per tag when none is given: an even split, the first tags one more when it does not divide."""
    return [num_env_groups // num_tags + (1 if i < num_env_groups % num_tags else 0) for i in range(num_tags)]

T = TypeVar("T")


class EnvGroups:
    """``num_env_groups x group_size`` agent envs, grouped and seeded for group-relative RL.

    Arguments:
        tags: registered agent env ids (``"AgentFrozenLake-v0"`` ...), one per partition entry.
        num_groups_partition: how many groups each tag gets (ROLL's ``num_groups_partition``; RAGEN's ``n_groups``).
        group_size: envs per group, all reset with the group's seed (ROLL/RAGEN ``group_size``).
        env_kwargs: ``gym.make`` keyword arguments for every tag, e.g. ``{"prompt": "compact"}``.
        tag_kwargs: per-tag keyword arguments, overriding ``env_kwargs``.
        seed: the first seed (see the module docstring).
        fixed_seeds: reuse the same seeds every rollout (validation).
        max_workers: step and reset envs in a thread pool of this size (``0``: in the calling thread).
        shard: ``(rank, world_size)``: hold only this process's contiguous share of the global groups (their count
            must divide evenly); seeds and group indices stay those of the global batch.

    Attributes:
        envs: this process's envs, group-major: member ``i % group_size`` of owned group ``i // group_size``.
        env_tags: the tag of each env.
        groups: the global index of each owned group.
        iteration: rollouts done so far (restore it to resume a run's seed sequence).
    """

    def __init__(self, tags: Sequence[str], num_groups_partition: Sequence[int], group_size: int = 1, *,
                 env_kwargs: Mapping[str, Any] | None = None,
                 tag_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
                 seed: int = TRAIN_SEED_START, fixed_seeds: bool = False, max_workers: int = 0,
                 shard: tuple[int, int] = (0, 1)):
        if isinstance(tags, str) or not isinstance(num_groups_partition, Sequence):
            raise ValueError(f"tags={tags!r} and num_groups_partition={num_groups_partition!r} must be lists, one "
                             "entry per env id: EnvGroups(['AgentFrozenLake-v0'], [4], group_size=8) plays 4 groups "
                             "of 8")
        tags, partition = list(tags), list(num_groups_partition)
        if not tags or len(tags) != len(partition):
            raise ValueError(f"tags={tags} and num_groups_partition={partition} must be non-empty and the same length")
        if len(set(tags)) != len(tags):
            raise ValueError(f"tags={tags} repeats an id")
        if any(not isinstance(n, int) or n < 1 for n in partition):
            raise ValueError(f"num_groups_partition={partition} must hold positive integers")
        if not isinstance(group_size, int) or group_size < 1:
            raise ValueError(f"group_size={group_size!r} must be a positive integer")
        unknown = [t for t in tags if not registered(t)]
        if unknown:
            raise ValueError(f"tags {unknown} are not registered env ids (did you `import agentgym_bench`? "
                             f"{OWN_ENV_HINT})")
        unknown = sorted(set(tag_kwargs or {}) - set(tags))
        if unknown:
            raise ValueError(f"tag_kwargs names {unknown}, which are not in tags={tags}")
        if max_workers < 0:
            raise ValueError(f"max_workers={max_workers} must be >= 0")
        owned = shard_groups(sum(partition), shard)
        self.tags, self.num_groups_partition, self.group_size = tags, partition, group_size
        self.kwargs = {t: {**(env_kwargs or {}), **((tag_kwargs or {}).get(t, {}))} for t in tags}
        self.seed, self.fixed_seeds, self.max_workers = seed, fixed_seeds, max_workers
        self.iteration = 0
        all_tags = [t for t, n in zip(tags, partition, strict=True) for _ in range(n)]
        all_offsets = [j for n in partition for j in range(n)]
        self.total_groups = len(all_tags)
        self.groups = owned
        self.group_tags = [all_tags[g] for g in self.groups]
        self.group_offsets = [all_offsets[g] for g in self.groups]
        self.env_tags = [t for t in self.group_tags for _ in range(group_size)]
        self.envs = [gym.make(t, **self.kwargs[t]) for t in self.env_tags]
        self._pool = ThreadPoolExecutor(max_workers) if max_workers else None

    @classmethod
    def validation(cls, tags: Sequence[str], episodes: Sequence[int], **kwargs: Any) -> EnvGroups:
        """The validation set: ``episodes[k]`` groups of size 1 for ``tags[k]``, fixed seeds ``0 .. episodes[k]-1``."""
        return cls(tags, episodes, 1, seed=VALIDATION_SEED_START, fixed_seeds=True, **kwargs)

    @property
    def num_env_groups(self) -> int:
        """Groups of the global batch (all processes)."""
        return self.total_groups

    def group_seeds(self) -> list[int]:
        """The seed of each owned group in the next rollout."""
        base = first_group_seed(self.seed, self.iteration, self.num_env_groups, self.fixed_seeds)
        return [base + j for j in self.group_offsets]

    def _map(self, fn: Callable[[int], T], indices: Sequence[int]) -> list[T]:
        if self._pool is None:
            return [fn(i) for i in indices]
        return list(self._pool.map(fn, indices))

    def rollout(self, policy: Policy, *, history: int | None = None, progress: bool = False,
                prompt_fits: Callable[[list[dict[str, str]]], bool] | None = None,
                keyed: bool = False) -> list[Trajectory]:
        """Play one episode in every env and return the trajectories (env order).

        Args:
            policy: the generation backend; called once per turn with all live envs' messages.
            history: the history window of the prompts (see :mod:`agentgym_bench.rollout.trajectory`).
            progress: report finished episodes (a bar on a terminal, a line every few seconds otherwise).
            prompt_fits: a length cap (ROLL's ``sequence_length``): before each turn, an episode whose messages
                it rejects ends there, truncated (``final_observation`` is the unanswered observation).
            keyed: pass the policy ``keys=(tag hash, seed, group member, turn)`` per conversation, so each
                episode's sampling depends on that episode alone (see :mod:`agentgym_bench.rollout.policy`).

        Raises:
            ValueError: ``prompt_fits`` rejects an episode's first prompt (nothing could be generated).
        """
        seeds = [s for s in self.group_seeds() for _ in range(self.group_size)]
        starts = self._map(lambda i: self.envs[i].reset(seed=seeds[i]), range(len(self.envs)))
        trajectories = [
            Trajectory(env_id=tag, env_kwargs=dict(self.kwargs[tag]), tag=tag, seed=seeds[i],
                       group=self.groups[i // self.group_size], system_prompt=str(info.get("system_prompt", "")),
                       history=history, tools=list(info.get("tools", [])))
            for i, (tag, (_, info)) in enumerate(zip(self.env_tags, starts, strict=True))
        ]
        observations = [obs for obs, _ in starts]
        state_keys = [str(info["state_key"]) for _, info in starts]
        live = list(range(len(self.envs)))
        bar = progress_bar(len(live), "rollout", "episode", enabled=progress, leave=False)
        tag_hashes = {t: tag_hash(t) for t in self.tags}
        most = max((getattr(env.unwrapped, "max_turns", 0) for env in self.envs), default=0)
        of = f"/{most}" if most else ""  # "turn 3/9": how far the longest episodes can still go
        bar.set_postfix_str(f"turn 1{of}, {len(live)} playing")
        while live:
            messages = [build_messages(trajectories[i].system_prompt, [t.observation for t in trajectories[i].turns],
                                       [t.reply for t in trajectories[i].turns], observations[i], history)
                        for i in live]
            if prompt_fits is not None:
                fits = [prompt_fits(m) for m in messages]
                for i, ok in zip(live, fits, strict=True):
                    if not ok and not trajectories[i].turns:
                        raise ValueError(f"the first prompt of {self.env_tags[i]} (seed {seeds[i]}) does not fit the "
                                         "length cap (sequence_length): raise it or shorten the prompt")
                    if not ok:
                        trajectories[i].final_observation, trajectories[i].truncated = observations[i], True
                        bar.update(1)
                messages = [m for m, ok in zip(messages, fits, strict=True) if ok]
                live = [i for i, ok in zip(live, fits, strict=True) if ok]
                if not live:
                    break
            envs = [self.envs[i].unwrapped for i in live]
            if keyed:
                keys = [(tag_hashes[self.env_tags[i]], seeds[i], i % self.group_size, len(trajectories[i].turns))
                        for i in live]
                generations = policy.generate(messages, envs, keys=keys)
            else:
                generations = policy.generate(messages, envs)
            check_generations(generations, len(live))
            replies = {i: g.text for i, g in zip(live, generations, strict=True)}
            results = self._map(lambda i: self.envs[i].step(replies[i]), live)  # noqa: B023 - used at once
            still_live, ended = [], 0
            for i, generation, (obs, reward, terminated, truncated, info) in zip(live, generations, results,
                                                                                 strict=True):
                trajectory = trajectories[i]
                trajectory.turns.append(Turn(
                    observation=observations[i], state_key=state_keys[i], reply=generation.text,
                    actions=list(info.get("actions", [])), executed_actions=list(info.get("executed_actions", [])),
                    reward=float(reward), info=json_safe(info), token_ids=generation.token_ids,
                    logprobs=generation.logprobs, prompt_tokens=generation.prompt_tokens,
                    completion_tokens=(len(generation.token_ids) if generation.token_ids is not None
                                       else generation.completion_tokens)))
                observations[i], state_keys[i] = obs, str(info["state_key"])
                if terminated or truncated:
                    trajectory.final_observation = obs
                    trajectory.success = bool(info.get("success", False))
                    trajectory.terminated, trajectory.truncated = bool(terminated), bool(truncated)
                    ended += 1
                else:
                    still_live.append(i)
            live = still_live
            turn = f"turn {len(trajectories[live[0]].turns) + 1}{of}, " if live else ""
            bar.set_postfix_str(f"{turn}{len(live)} playing", refresh=False)  # shown with the episodes this turn ended
            bar.update(ended)
        bar.close()
        if not self.fixed_seeds:
            self.iteration += 1
        return trajectories

    def close(self) -> None:
        """Close the envs and the thread pool."""
        for env in self.envs:
            env.close()
        if self._pool is not None:
            self._pool.shutdown()

    def __enter__(self) -> EnvGroups:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_generations(generations: Any, expected: int) -> None:
    """Refuse what a policy's ``generate`` returned unless it is a list of ``expected``
    :class:`~agentgym_bench.rollout.policy.Generation` objects whose ``text`` is a string (the
    :class:`~agentgym_bench.rollout.policy.Policy` protocol), before any env is stepped with it."""
    if not isinstance(generations, list | tuple):
        raise TypeError(f"the policy's generate returned {type(generations).__name__}; it must return a list of "
                        f"Generation, one per conversation (agentgym_bench.rollout.policy.Policy)")
    if len(generations) != expected:
        raise RuntimeError(f"the policy returned {len(generations)} replies for {expected} conversations")
    for g in generations:
        if not isinstance(g, Generation) or not isinstance(g.text, str):
            what = f"Generation({g.text!r})" if isinstance(g, Generation) else repr(g)[:60]
            raise TypeError(f"the policy's generate returned {what} among its replies; each must be a Generation "
                            "whose text is a string, e.g. Generation('<answer>Up</answer>') "
                            "(agentgym_bench.rollout.policy.Policy)")
