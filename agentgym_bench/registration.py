"""Every environment id of the package, registered with Gymnasium on ``import agentgym_bench``.

Agent ids (``AgentSokoban-v0`` ...) build a core game and wrap it in :class:`~agentgym_bench.agent.LLMAgentEnv`;
keyword arguments of ``gym.make`` go to whichever of the two takes them (an argument both take is an error in the
table, not a guess). Core game ids (``agentgym/Sokoban-v0`` ...) are the bare games, one action word per step.

Budgets are the agent wrapper's (turns, actions per turn, actions per episode), not ``TimeLimit``: they are part of
what the agent reads each turn. No agent id sets ``max_episode_steps``.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentgym_bench.agent.env import LLMAgentEnv
from agentgym_bench.errors import UserError

RAGEN_BUDGET = {"max_turns": 5, "max_actions_per_turn": 5, "max_actions_per_episode": 10}
ONE_SHOT_BUDGET = {"max_turns": 1, "max_actions_per_turn": 1, "max_actions_per_episode": 1}

GAMES = {
    "Bandit": "agentgym_bench.envs.bandit:BanditGame",
    "Sokoban": "agentgym_bench.envs.sokoban.game:SokobanGame",
    "FrozenLake": "agentgym_bench.envs.frozen_lake:FrozenLakeGame",
    "WebShop": "agentgym_bench.envs.webshop.game:WebShopGame",
}


@dataclass(frozen=True)
class AgentEnvSpec:
    """One agent id: which game, with which game and wrapper defaults, and a one-line description. ``graded``: the
    reward grades an episode between failure and success (WebShop's purchase score, 0 to 1, success only at 1), so
    tables show the mean return beside the success rate."""

    game: str
    description: str
    game_kwargs: dict[str, Any] = field(default_factory=dict)
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    graded: bool = False


AGENT_ENVS: dict[str, AgentEnvSpec] = {
    "AgentBandit-v0": AgentEnvSpec(
        "Bandit", "Two-armed bandit, Phoenix (safe, 0.15) vs Dragon (risky, 1 w.p. 0.25); RAGEN's Bandit",
        agent_kwargs=ONE_SHOT_BUDGET),
    "AgentBanditTest-v0": AgentEnvSpec(
        "Bandit", "Held-out arm names: Trader (safe) vs Librarian (risky); RAGEN's BanditTest",
        game_kwargs={"low_arm": "Trader", "high_arm": "Librarian"}, agent_kwargs=ONE_SHOT_BUDGET),
    "AgentBanditRev-v0": AgentEnvSpec(
        "Bandit", "Held-out, reversed roles: Librarian (safe) vs Trader (risky)",
        game_kwargs={"low_arm": "Librarian", "high_arm": "Trader"}, agent_kwargs=ONE_SHOT_BUDGET),
    "AgentSokoban-v0": AgentEnvSpec(
        "Sokoban", "Sokoban 6x6, 1 box, 5 turns, <=5 actions a turn, <=10 actions; RAGEN's SimpleSokoban",
        game_kwargs={"dim_room": (6, 6), "num_boxes": 1}, agent_kwargs=RAGEN_BUDGET),
    "AgentSokobanLarge-v0": AgentEnvSpec(
        "Sokoban", "Sokoban 8x8, 2 boxes, optimal solution <= 10 moves, RAGEN budgets; RAGEN's LargerSokoban's size",
        game_kwargs={"dim_room": (8, 8), "num_boxes": 2, "search_depth": 10}, agent_kwargs=RAGEN_BUDGET),
    "AgentSokobanAltVocab-v0": AgentEnvSpec(
        "Sokoban", "Sokoban 6x6, 1 box, symbols W . G C B A @; RAGEN's SokobanDifferentGridVocab",
        game_kwargs={"dim_room": (6, 6), "num_boxes": 1, "vocab": "alt"}, agent_kwargs=RAGEN_BUDGET),
    "AgentFrozenLake-v0": AgentEnvSpec(
        "FrozenLake", "FrozenLake 4x4, new map per seed, slippery (1/3 intended), RAGEN budgets; RAGEN's FrozenLake",
        game_kwargs={"size": 4, "is_slippery": True}, agent_kwargs=RAGEN_BUDGET),
    "AgentFrozenLakeNoSlip-v0": AgentEnvSpec(
        "FrozenLake", "FrozenLake 4x4, new map per seed, not slippery, RAGEN budgets",
        game_kwargs={"size": 4, "is_slippery": False}, agent_kwargs=RAGEN_BUDGET),
    "AgentWebShop-v0": AgentEnvSpec(
        "WebShop", "WebShop on the bundled offline store (2,000 products, BM25), the seed's split of goals (test "
        "seeds: test goals), 9 turns x 1 action; RAGEN's WebShop",
        agent_kwargs={"max_turns": 9, "max_actions_per_turn": 1, "max_actions_per_episode": 9,
                      "max_reply_words": 200}, graded=True),
}


def is_graded(env_id: str) -> bool:
    """Whether ``env_id`` is an agent id whose reward grades an episode (``AgentEnvSpec.graded``)."""
    spec = AGENT_ENVS.get(env_id)
    return spec is not None and spec.graded


def registered(env_id: str) -> bool:
    """Whether ``env_id`` is a registered Gymnasium id. ``MODULE:ID`` (an env of the user's own) imports ``MODULE``
    first and asks of ``ID``, as ``gym.make("MODULE:ID")`` does, so a trainer config, a suite file or a command may
    name it that way and every process that makes the env imports ``MODULE`` itself. A ``MODULE`` that does not
    import is a :class:`UserError` naming it."""
    module, colon, name = str(env_id).rpartition(":")
    if colon and module:
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise UserError(f"env id {env_id!r}: cannot import {module!r} ({err}): is its folder on PYTHONPATH?"
                            ) from None
        env_id = name
    return env_id in gym.registry


OWN_ENV_HINT = "an env of your own: name it MODULE:ID, so that MODULE, which registers ID, is imported first"


def check_env_id(env_id: str) -> str:
    """The agent env id ``env_id`` names, for the commands that take one (``play``, ``demo``, ``openenv-serve``): one
    of this package's (:data:`AGENT_ENVS`), a TextArena game's (``AgentTextArena/...``), or any registered id whose
    env is an :class:`~agentgym_bench.agent.env.LLMAgentEnv` (an env of the user's own); ``MODULE:ID`` imports
    ``MODULE`` first, as ``gym.make`` does, and gives ``ID``. Else a :class:`UserError` suggesting the closest of
    ours and listing them."""
    if env_id in AGENT_ENVS:
        return env_id
    found, env_id = registered(env_id), str(env_id).rpartition(":")[2]  # MODULE:ID: the module imported, then ID
    if found:
        try:
            env = gym.make(env_id)
        except Exception as err:  # noqa: BLE001 - a third party's constructor: any failure is the user's to see
            raise UserError(f"env id {env_id!r}: gym.make failed: {type(err).__name__}: {err}") from None
        try:
            if isinstance(env.unwrapped, LLMAgentEnv):
                env.reset(seed=0)  # a game of the user's own that cannot start is one line, not a traceback later
                return env_id
        except Exception as err:  # noqa: BLE001 - as above
            raise UserError(f"env id {env_id!r}: reset(seed=0) failed: {type(err).__name__}: {err} "
                            "(agentgym_bench.envs.contract.check_game names what a game must do)") from None
        finally:
            env.close()
        raise UserError(f"{env_id!r} is registered but is not an agent env (its env is "
                        f"{type(env.unwrapped).__name__}): wrap its game in LLMAgentEnv (docs/core-env-contract.md)")
    known = list(AGENT_ENVS)
    typed = env_id.lower()
    cores = {k.lower().removeprefix("agent").split("-")[0]: k for k in known}  # "sokobanlarge": AgentSokobanLarge-v0
    own = [k for k in gym.registry if k not in known and k.startswith("Agent")]  # a user's module, imported above
    close = ([k for k in known if typed in k.lower()]
             or difflib.get_close_matches(env_id, known + own, n=1, cutoff=0.85)
             or [cores[c] for c in difflib.get_close_matches(typed.removeprefix("agent").split("-")[0], cores, n=2)])
    hint = (f"did you mean {close[0]}? " if len(close) == 1
            else f"did you mean one of {', '.join(close)}? " if close else "")
    raise UserError(f"unknown env id {env_id!r}: {hint}`agentgym-bench envs` lists them ({', '.join(known)}); "
                    f"{OWN_ENV_HINT}")


def load_class(entry_point: str) -> type:
    """Import ``"module.path:ClassName"``."""
    module, _, name = entry_point.partition(":")
    return getattr(importlib.import_module(module), name)


def _parameters(fn: Any) -> set[str]:
    return {p.name for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self", "game"}


class UnknownArgumentError(TypeError):
    """An argument neither the game nor the agent wrapper takes. ``gym.make`` re-raises a creator's ``TypeError`` as
    ``type(err)(f"{err} was raised from the environment creator ... with kwargs (...)")``; this class keeps its own
    message, which already names the argument and what is taken."""

    def __init__(self, message: str):
        super().__init__(message.split(" was raised from the environment creator")[0])


def make_agent_env(*, game: str, **kwargs: Any) -> LLMAgentEnv:
    """Build ``LLMAgentEnv(GameClass(**game_kwargs), **agent_kwargs)``, routing each keyword by name.

    Raises:
        UnknownArgumentError: an argument neither the game nor the wrapper takes (a ``TypeError``; the message lists
            what both take), or one both take (whose it is would be a guess).
    """
    game_cls = load_class(GAMES.get(game, game))
    game_params, agent_params = _parameters(game_cls.__init__), _parameters(LLMAgentEnv.__init__)
    unknown = sorted(set(kwargs) - game_params - agent_params)
    if unknown:
        raise UnknownArgumentError(f"unknown argument(s) {unknown} for game {game_cls.__name__}: the game takes "
                        f"{sorted(game_params)}, the agent wrapper takes {sorted(agent_params)}")
    both = sorted(set(kwargs) & game_params & agent_params)
    if both:
        raise UnknownArgumentError(f"argument(s) {both} are taken by both game {game_cls.__name__} and the agent "
                                   f"wrapper, so gym.make cannot tell whose they are: build LLMAgentEnv("
                                   f"{game_cls.__name__}(...), ...) yourself")
    game_env = game_cls(**{k: v for k, v in kwargs.items() if k in game_params})
    return LLMAgentEnv(game_env, **{k: v for k, v in kwargs.items() if k in agent_params})


def register_all() -> None:
    """Register every agent id and core game id with Gymnasium (idempotent). The TextArena ids are
    :func:`agentgym_bench.multiagent.registration.register_textarena_envs`'s; ``import agentgym_bench`` calls
    both."""
    for env_id, spec in AGENT_ENVS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point="agentgym_bench.registration:make_agent_env",
                         kwargs={"game": spec.game, **spec.game_kwargs, **spec.agent_kwargs})
    for name, entry_point in GAMES.items():
        if f"agentgym/{name}-v0" not in gym.registry:
            gym.register(f"agentgym/{name}-v0", entry_point=entry_point)
