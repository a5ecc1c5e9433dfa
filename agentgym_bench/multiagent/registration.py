"""Gymnasium ids of the TextArena single-player games (registered only where ``textarena`` can be imported).

``AgentTextArena-v0`` takes any TextArena id as ``game=``; ``AgentTextArena/<Name>-v0`` is one per curated game
(:data:`~agentgym_bench.multiagent.textarena_catalog.SINGLE_PLAYER`), e.g. ``AgentTextArena/MinesweeperSmall-v0``
for ``Minesweeper-v0-small`` and ``AgentTextArena/2048_3x3-v0`` for ``2048-v0-3x3``. Each is
``LLMAgentEnv(TextArenaGame(game))`` with one move a turn, 50 turns and the :data:`TEXTARENA_PROMPT` template
(override any of them with ``gym.make`` keywords, e.g. ``prompt="ragen"``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentgym_bench.agent.env import LLMAgentEnv
from agentgym_bench.agent.prompts import RAGEN, PromptTemplate
from agentgym_bench.errors import UserError
from agentgym_bench.multiagent.textarena_bridge import textarena_available
from agentgym_bench.multiagent.textarena_catalog import SINGLE_PLAYER
from agentgym_bench.multiagent.textarena_game import TextArenaGame

TEXTARENA_PROMPT = PromptTemplate(
    system=RAGEN.system,
    intro="Write one move a turn inside <answer>...</answer>, as the game's instructions below say. The episode "
    "stops after {max_actions} moves if the game has not ended by then.\n\n{instructions}\n",
    legend="",
    turn="\nTurn {turn}:\n{state}\n{format_hint} Max response length: {max_reply_words} words (tokens).\n",
    reward=RAGEN.reward,
    final=RAGEN.final,
    format_hint_think=RAGEN.format_hint_think,
    format_hint_answer=RAGEN.format_hint_answer,
)
"""RAGEN's wording without its action list and ``||`` budget line, which do not fit TextArena's open-text moves
(the game's own instructions say how to write a move). Our move budget is said once, in the first turn, not counted
down each turn: many games set their own limit ("within 10 turns"), and a count of our budget beside it misled. Our
line comes first, so that instructions ending in "Here is the current board layout:" run on into the board."""

TEXTARENA_AGENT_DEFAULTS = {"max_turns": 50, "max_actions_per_turn": 1, "max_actions_per_episode": 50,
                            "prompt": TEXTARENA_PROMPT}


def agent_id(game: str) -> str:
    """Our id of a curated TextArena game: ``"Minesweeper-v0-small"`` -> ``"AgentTextArena/MinesweeperSmall-v0"``."""
    base, _, variant = game.partition("-v0")
    parts = [p for p in variant.split("-") if p]
    name = base + "".join(("_" + p) if p[0].isdigit() else p.capitalize() for p in parts)
    return f"AgentTextArena/{name}-v0"


def make_textarena_agent_env(*, game: str | None = None, render_mode: str | None = None,
                             **agent_kwargs: Any) -> LLMAgentEnv:
    """``LLMAgentEnv(TextArenaGame(game, render_mode), **agent_kwargs)`` over :data:`TEXTARENA_AGENT_DEFAULTS`;
    ``gym.make("AgentTextArena-v0")`` without ``game=`` is a :class:`~agentgym_bench.errors.UserError` naming it."""
    if game is None:
        raise UserError("AgentTextArena-v0 plays the TextArena game named by game=, e.g. "
                        f"gym.make('AgentTextArena-v0', game='{SINGLE_PLAYER[0]}'); each curated game also has its "
                        f"own id, e.g. {agent_id(SINGLE_PLAYER[0])}")
    return LLMAgentEnv(TextArenaGame(game, render_mode=render_mode), **{**TEXTARENA_AGENT_DEFAULTS, **agent_kwargs})


def register_textarena_envs() -> None:
    """Register ``AgentTextArena-v0`` and one id per curated game, if textarena is importable (idempotent)."""
    if not textarena_available():
        return
    entry_point = "agentgym_bench.multiagent.registration:make_textarena_agent_env"
    if "AgentTextArena-v0" not in gym.registry:
        gym.register("AgentTextArena-v0", entry_point=entry_point)
    for game in SINGLE_PLAYER:
        if agent_id(game) not in gym.registry:
            gym.register(agent_id(game), entry_point=entry_point, kwargs={"game": game})
