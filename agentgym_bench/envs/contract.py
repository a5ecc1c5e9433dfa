"""``check_game``: a core game env checked against ``docs/core-env-contract.md``, the rules Gymnasium's own checker
does not test.

``gymnasium.utils.env_checker.check_env`` checks the Gymnasium API (spaces, seeding, render modes). The agent wrapper
and the rollout engine rely on more: the info keys, a fresh info dict on every call, an invalid action that changes
nothing and raises nothing, a finished game that stays finished, Python scalars, episodes fixed by their seed, no
global random state touched, and an oracle within the turn's budget. :func:`check_game` plays a few seeded episodes
(the oracle's, where the game has one, else the first valid action) and raises one :class:`ContractError` listing
every rule broken.
"""

from __future__ import annotations

import random
from typing import Any

import gymnasium as gym
import numpy as np

INVALID = "\x00 not an action \x00"
"""An action no game accepts."""


class ContractError(AssertionError):
    """The rules of the contract a game breaks, one per line."""


def check_game(env: gym.Env, seeds: tuple[int, ...] = (0, 1, 2), max_steps: int = 50) -> None:
    """Check the core game of ``env`` (a game, or an agent env or wrapper around one: its game is checked) on
    ``seeds``, at most ``max_steps`` steps an episode.

    Raises:
        ContractError: listing each rule broken, with the seed and step where it was first seen.
    """
    game = _game_of(env)
    problems: dict[str, str] = {}  # rule -> where first seen
    state = random.getstate(), np.random.get_state()[1].copy()
    for seed in seeds:
        first = _play(game, seed, max_steps, problems)
        if _play(game, seed, max_steps, {}) != first:
            problems.setdefault("the same seed and actions give the same episode", f"seed {seed}")
    if random.getstate() != state[0] or not np.array_equal(np.random.get_state()[1], state[1]):
        problems["never touch the random or np.random globals"] = "during the episodes"
    if problems:
        raise ContractError(f"{type(game).__name__} breaks docs/core-env-contract.md:\n"
                            + "\n".join(f"- {rule} ({where})" for rule, where in problems.items()))


def _game_of(env: gym.Env) -> gym.Env:
    inner = env.unwrapped
    return inner.game.unwrapped if hasattr(inner, "game") else inner


def _play(game: gym.Env, seed: int, max_steps: int, problems: dict[str, str]) -> list[Any]:
    """One episode from ``seed``; what it saw (observations, rewards, flags), for comparing two plays."""
    def broken(rule: str, ok: bool, where: str) -> None:
        if not ok:
            problems.setdefault(rule, f"seed {seed}, {where}")

    obs, info = game.reset(seed=seed)
    broken("reset returns (str, dict)", isinstance(obs, str) and isinstance(info, dict), "reset")
    for key, kind in (("instructions", str), ("legend", str)):
        broken(f"reset's info has {key}: {kind.__name__}", isinstance(info.get(key), kind), "reset")
    seen: list[Any] = [obs]
    last_info = _check_info(info, broken, "reset")
    budget = max_steps
    for step in range(1, max_steps + 1):
        where = f"step {step}"
        before = obs
        try:
            out = game.step(INVALID)
        except Exception as err:  # noqa: BLE001 - the rule under test: no exception, whatever the string
            broken("an invalid action raises nothing", False, f"{where}: {type(err).__name__}: {err}")
            out = None
        else:
            broken("an invalid action changes nothing, gives 0 and action_is_valid False",
                   out[0] == before and out[1] == 0 and out[4].get("action_is_valid") is False, where)
            broken("a fresh info dict on every call", out[4] is not last_info and not _shares(out[4], last_info),
                   where)
            last_info = _check_info(out[4], broken, where)
        action = _next_action(game, last_info if out is None else out[4], budget, broken, where)
        obs, reward, terminated, truncated, info = game.step(action)
        _check_step(game, (obs, reward, terminated, truncated, info), broken, where)
        broken("a fresh info dict on every call", info is not last_info and not _shares(info, last_info), where)
        last_info = _check_info(info, broken, where)
        seen += [action, obs, reward, terminated]
        budget -= 1
        if terminated:
            again = game.step(action)
            broken("stepping a finished game changes nothing: same obs, reward 0, terminated, action invalid",
                   again[0] == obs and again[1] == 0 and again[2] is True and again[4].get("action_is_valid") is False,
                   f"after step {step}")
            break
    return seen


def _check_info(info: dict[str, Any], broken: Any, where: str) -> dict[str, Any]:
    broken("info has state_key: str", isinstance(info.get("state_key"), str), where)
    broken("info has success: bool", type(info.get("success")) is bool, where)
    actions = info.get("valid_actions")
    broken("valid_actions, where given, is a list of str",
           actions is None or (isinstance(actions, list) and all(isinstance(a, str) for a in actions)), where)
    return info


def _next_action(game: gym.Env, info: dict[str, Any], budget: int, broken: Any, where: str) -> str:
    if hasattr(game, "oracle_turn"):
        plan = game.oracle_turn(budget, budget, 1)
        broken("oracle_turn returns a list of str within min(actions_left, max_actions_per_turn)",
               isinstance(plan, list) and len(plan) <= 1 and all(isinstance(a, str) for a in plan), where)
        if plan and isinstance(plan[0], str):
            return plan[0]
    actions = info.get("valid_actions") or []
    return actions[0] if actions else "noop"


def _check_step(game: gym.Env, out: tuple[Any, ...], broken: Any, where: str) -> None:
    obs, reward, terminated, truncated, info = out
    broken("step returns Python types (str, float, bool, bool, dict), never numpy scalars",
           isinstance(obs, str) and type(reward) in (float, int) and type(terminated) is bool
           and type(truncated) is bool and isinstance(info, dict), where)
    broken("step returns truncated=False (time limits are the wrapper's)", truncated is False, where)
    broken("step's info has action_is_valid and action_is_effective: bool",
           type(info.get("action_is_valid")) is bool and type(info.get("action_is_effective")) is bool, where)
    space = game.observation_space
    broken("the observation lies in observation_space", not isinstance(space, gym.spaces.Space) or space.contains(obs),
           where)


def _shares(info: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether two info dicts share a mutable value (a list or dict object)."""
    return any(isinstance(v, (list, dict)) and any(v is w for w in other.values()) for v in info.values())
