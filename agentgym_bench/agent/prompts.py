"""Prompt templates: the words the agent env puts around a game's state.

A :class:`PromptTemplate` is plain data — ``str.format`` templates with named fields — so a user can pass their own.
Two are built in:

- ``"ragen"`` (default): RAGEN's context-manager wording (``ragen/llm_agent/ctx_manager.py``): instructions, symbol
  legend, action list and budget in the first turn; then ``Turn k: State: ... You have N actions left. Always
  output: <think> ... </think> <answer> ... </answer> ...`` every turn, and ``Reward: r`` after each reply.
- ``"compact"``: for small locally built models with a word-level vocabulary: the game's variant line if it has one
  (``slippery ice`` for slippery FrozenLake: without it the two FrozenLakes read the same while their best moves
  differ), the grid and the actions left, nothing else (about 25 tokens a turn for 4x4 FrozenLake). The system
  prompt is empty.

Fields available to every template: ``instructions``, ``header`` (the game's ``variant`` and a line break, or
empty), ``legend``, ``actions`` (comma-joined valid actions),
``max_actions`` (actions per episode), ``max_actions_per_turn``, ``turn`` (1-based), ``state``, ``actions_left``,
``reward`` (previous turn's reward, formatted), ``max_reply_words``, ``format_hint``, ``separator_hint`` (how
several actions are written: ``, separated by the action separator " || "`` with ``<answer>`` tags, empty with tool
calls, whose ``actions`` argument is a list).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PromptTemplate:
    """Text templates of an agent env's observations.

    Attributes:
        system: the system prompt (``info["system_prompt"]`` on reset; ``""`` means none).
        intro: first-turn preamble (instructions, legend, actions, budget), placed before the first turn block.
        legend: how a non-empty legend is introduced inside ``intro`` (``{legend}`` field); empty legends vanish.
        turn: one turn's block: the state and the budget left.
        reward: what follows a reply, before the next turn block.
        final: the observation after the last turn (after ``reward``).
        format_hint_think / format_hint_answer: the output-format reminder with and without thinking.
        format_hint_tool_think / format_hint_tool: the same when actions are tool calls (``action_format="tool"``).
    """

    system: str
    intro: str
    legend: str
    turn: str
    reward: str
    final: str
    format_hint_think: str
    format_hint_answer: str
    format_hint_tool_think: str = ("Always output: <think> [Your thoughts] </think> and then call take_actions with "
                                   "your actions.")
    format_hint_tool: str = "Always answer by calling take_actions with your actions."


RAGEN = PromptTemplate(
    system="You're a helpful assistant. ",
    intro="{instructions}{legend}\nYour available actions are:\n{actions}\n"
    "You can make up to {max_actions} actions{separator_hint}\n",
    legend="\nThe meaning of each symbol in the state is:\n{legend}",
    turn="\nTurn {turn}:\nState:\n{state}\nYou have {actions_left} actions left. {format_hint} "
    "Strictly follow this format. Max response length: {max_reply_words} words (tokens).\n",
    reward="Reward:\n{reward}\n",
    final="State:\n{state}\n",
    format_hint_think="Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> "
    "with no extra text.",
    format_hint_answer="Always output: <answer> [your answer] </answer> with no extra text.",
)

COMPACT = PromptTemplate(
    system="",
    intro="",
    legend="",
    turn="{header}{state}\nactions left: {actions_left}",
    reward="",
    final="{header}{state}",
    format_hint_think="",
    format_hint_answer="",
    format_hint_tool_think="",
    format_hint_tool="",
)

TEMPLATES: dict[str, PromptTemplate] = {"ragen": RAGEN, "compact": COMPACT}


def get_template(prompt: str | PromptTemplate) -> PromptTemplate:
    """Return the template named ``prompt`` (``"ragen"`` or ``"compact"``), or ``prompt`` itself if it is one."""
    if isinstance(prompt, PromptTemplate):
        return prompt
    if prompt not in TEMPLATES:
        raise ValueError(f"prompt={prompt!r} is not a known template; choose one of {sorted(TEMPLATES)} "
                         "or pass a PromptTemplate")
    return TEMPLATES[prompt]


def format_reward(reward: float) -> str:
    """A reward as the prompt shows it: 4 decimals at most, no float noise (``0.3``, not ``0.30000000000000004``)."""
    return f"{round(reward, 4):g}"
