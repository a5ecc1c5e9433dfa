"""``check_game``: a core game env checked against ``docs/core-env-contract.md``, the rules Gymnasium's own checker
does not test.

``gymnasium.utils.env_checker.check_env`` checks the Gymnasium API (spaces, seeding, render modes). The agent wrapper
and the rollout engine rely on more: the info keys, a fresh info dict on every call, an invalid action that changes
nothing and raises nothing, a finished game that stays finished, Python scalars, episodes fixed by their seed, no
global random state touched, and an oracle within the turn's budget. :func:`check_game` plays a few seeded episodes
(the oracle's, where the game has one, else the first valid action), each twice: as chosen and spelt otherwise
(other case, surrounding spaces), which must play the same; tries every action ``valid_actions`` lists after each
reset; compares ``render()`` with the observation where ``render_mode`` is ``"ansi"``; reads the class docstring's
sections; and raises one :class:`ContractError` listing every rule broken. A game that cannot be played at all (a
``reset`` that takes no ``seed``, a ``step`` that returns four values, an exception on its own actions) is a
broken rule too, not a traceback.
"""

from __future__ import annotations

import inspect
import random
from typing import Any

import gymnasium as gym
import numpy as np

INVALID = "\x00 not an action \x00"
"""An action no game accepts."""


SECTIONS = ("Description", "Action Space", "Observation Space", "Rewards", "Episode End", "Arguments",
            "Version History")
"""The class docstring's ``## `` sections every game has (and ``Oracle`` where it has ``oracle_turn``)."""


class ContractError(AssertionError):
    """The rules of the contract a game breaks, one per line."""


class _Stop(Exception):
    """A rule broken so that the episode cannot go on."""


def check_game(env: gym.Env, seeds: tuple[int, ...] = (0, 1, 2), max_steps: int = 50) -> None:
    """Check the core game of ``env`` (a game, or an agent env or wrapper around one: its game is checked) on
    ``seeds``, at most ``max_steps`` steps an episode.

    Raises:
        ContractError: listing each rule broken, with the seed and step where it was first seen.
    """
    game = _game_of(env)
    problems: dict[str, str] = {}  # rule -> where first seen
    _check_sections(game, problems)
    state = random.getstate(), np.random.get_state()[1].copy()
    for seed in seeds:
        try:
            first = _play(game, seed, max_steps, problems)
            if _play(game, seed, max_steps, {}) != first:
                problems.setdefault("the same seed and actions give the same episode", f"seed {seed}")
            if _play(game, seed, max_steps, {}, respell=True) != first:
                problems.setdefault("an action is matched ignoring case and surrounding whitespace",
                                    f"seed {seed}: the actions in other case with spaces around played otherwise")
            _check_listed_actions(game, seed, problems)
        except _Stop:
            break
        except Exception as err:  # noqa: BLE001 - a game that cannot be played is a broken rule, not a traceback
            problems.setdefault("reset(seed=..., options=...) and step(action) run without raising on the game's own "
                                "actions", f"seed {seed}: {type(err).__name__}: {err}")
            break
    if random.getstate() != state[0] or not np.array_equal(np.random.get_state()[1], state[1]):
        problems["never touch the random or np.random globals"] = "during the episodes"
    if problems:
        raise ContractError(f"{type(game).__name__} breaks docs/core-env-contract.md:\n"
                            + "\n".join(f"- {rule} ({where})" for rule, where in problems.items()))


def _game_of(env: gym.Env) -> gym.Env:
    inner = env.unwrapped
    return inner.game.unwrapped if hasattr(inner, "game") else inner


def _check_sections(game: gym.Env, problems: dict[str, str]) -> None:
    doc = inspect.getdoc(type(game)) or ""  # a subclass without its own is documented by its base
    wanted = (*SECTIONS, "Oracle") if hasattr(game, "oracle_turn") else SECTIONS
    missing = [name for name in wanted if f"## {name}" not in doc]
    if missing:
        problems["the class docstring is the spec, with its sections"] = f"missing: {', '.join(missing)}"


def _check_listed_actions(game: gym.Env, seed: int, problems: dict[str, str]) -> None:
    """Every action ``valid_actions`` lists after ``reset(seed=seed)`` is valid there (each from a fresh reset)."""
    listed = _reset(game, seed, problems)[1].get("valid_actions") or []
    for action in listed:
        _reset(game, seed, problems)
        out = _step(game, action, problems, f"seed {seed}, after reset")
        if out[4].get("action_is_valid") is not True:
            problems.setdefault("every action valid_actions lists is valid", f"seed {seed}, after reset: {action!r}")


def _reset(game: gym.Env, seed: int, problems: dict[str, str]) -> tuple[Any, dict[str, Any]]:
    out = game.reset(seed=seed)
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict)):
        problems.setdefault("reset returns (str, dict)", f"seed {seed}, reset: it returned {type(out).__name__}")
        raise _Stop
    return out


def _step(game: gym.Env, action: str, problems: dict[str, str], where: str) -> tuple[Any, ...]:
    return _checked(game.step(action), problems, where)


def _checked(out: Any, problems: dict[str, str], where: str) -> tuple[Any, ...]:
    """``out``, what a ``step`` returned, if it is the 5-tuple; else the rule is named and the episode stops."""
    if not (isinstance(out, tuple) and len(out) == 5 and isinstance(out[4], dict)):
        problems.setdefault("step returns (obs, reward, terminated, truncated, info)",
                            f"{where}: it returned {len(out) if isinstance(out, tuple) else type(out).__name__}"
                            f"{' values' if isinstance(out, tuple) else ''}")
        raise _Stop
    return out


def _respelt(action: str) -> str:
    return f"  {action.swapcase()} "


def _play(game: gym.Env, seed: int, max_steps: int, problems: dict[str, str], respell: bool = False) -> list[Any]:
    """One episode from ``seed``; what it saw (observations, rewards, flags), for comparing two plays. ``respell``:
    each chosen action is sent in other case with spaces around it (what it saw records the action as chosen)."""
    def broken(rule: str, ok: bool, where: str) -> None:
        if not ok:
            problems.setdefault(rule, f"seed {seed}, {where}")

    obs, info = _reset(game, seed, problems)
    broken("reset returns (str, dict)", isinstance(obs, str), "reset")
    _check_render(game, obs, broken, "reset")
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
            _checked(out, problems, f"seed {seed}, {where}")
            broken("an invalid action changes nothing, gives 0 and action_is_valid False",
                   out[0] == before and out[1] == 0 and out[4].get("action_is_valid") is False, where)
            broken("a fresh info dict on every call", out[4] is not last_info and not _shares(out[4], last_info),
                   where)
            last_info = _check_info(out[4], broken, where)
        action = _next_action(game, last_info if out is None else out[4], budget, broken, where)
        obs, reward, terminated, truncated, info = _step(game, _respelt(action) if respell else action, problems,
                                                         f"seed {seed}, {where}")
        _check_step(game, (obs, reward, terminated, truncated, info), broken, where)
        _check_render(game, obs, broken, where)
        broken("a fresh info dict on every call", info is not last_info and not _shares(info, last_info), where)
        last_info = _check_info(info, broken, where)
        seen += [action, obs, reward, terminated]
        budget -= 1
        if terminated:
            again = game.step(action)
            broken("stepping a finished game changes nothing: same obs, reward 0, terminated, action invalid",
                   again[0] == obs and again[1] == 0 and bool(again[2]) is True  # its type: _check_step's rule
                   and again[4].get("action_is_valid") is False, f"after step {step}")
            break
    return seen


def _check_render(game: gym.Env, obs: Any, broken: Any, where: str) -> None:
    if getattr(game, "render_mode", None) == "ansi":
        broken('render() with render_mode "ansi" returns the observation text', game.render() == obs, where)


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
