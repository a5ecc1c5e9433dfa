"""What every multi-agent env here shares with the single-agent envs: reply parsing, the format hint, the spaces.

A seat's action is the model's raw reply. :func:`read_move` parses it with the single-agent parser
(:func:`agentgym_bench.agent.parsing.parse_reply`): the move is the first action inside ``<answer>...</answer>``;
further ``||``-separated actions are dropped (one move a turn). Observations are ``Dict({"text": Text})``:
PettingZoo's ``api_test`` compares ``dtype``\\ s of observations and crashes on a bare ``Text`` space (a ``str`` has no
``dtype``), while a ``Dict`` whose key is not ``"observation"`` passes; ``obs["text"]`` is the text the model reads.
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces

from agentgym_bench.agent.parsing import parse_reply
from agentgym_bench.agent.prompts import RAGEN
from agentgym_bench.spaces import sanitize, text_space

DEFAULT_MAX_OBSERVATION_LENGTH = 16_384
MAX_REPLY_LENGTH = 16_384


def observation_space(max_length: int = DEFAULT_MAX_OBSERVATION_LENGTH) -> spaces.Dict:
    """``Dict({"text": Text(max_length)})`` over ``CHARSET``."""
    return spaces.Dict({"text": text_space(max_length)})


def action_space() -> spaces.Text:
    """A raw reply: ``Text`` over ``CHARSET`` up to 16 KiB characters.

    The bound describes model replies (a few hundred tokens); ``step`` accepts any ``str`` (longer, or outside the
    charset) and any other object (an unreadable reply). It is smaller than the single-agent envs' 1 MiB because
    PettingZoo's ``api_test`` samples actions from it, and a 1 MiB ``Text.sample`` takes about a second.
    """
    return text_space(MAX_REPLY_LENGTH)


def observation(text: str, max_length: int) -> dict[str, str]:
    """The observation holding ``text``, mapped into the charset and cut to ``max_length``."""
    return {"text": sanitize(text, max_length)}


def format_hint(enable_think: bool) -> str:
    """The output-format reminder of the single-agent prompts (RAGEN wording)."""
    return RAGEN.format_hint_think if enable_think else RAGEN.format_hint_answer


def read_move(reply: Any, *, enable_think: bool) -> tuple[str | None, dict[str, Any]]:
    """``(move, info)``: the first answer action (``None`` if the reply has none) and what was read.

    ``info``: ``format_valid``, ``format_error`` (why the format was not met, ``""`` when it was), ``actions``
    (all parsed actions), ``dropped_actions`` (those after the first). Never raises, whatever ``reply`` is.
    """
    parsed = parse_reply(reply, enable_think=enable_think)
    move = parsed.actions[0] if parsed.format_ok and parsed.actions else None
    return move, {"format_valid": parsed.format_ok, "format_error": parsed.problem, "actions": list(parsed.actions),
                  "dropped_actions": list(parsed.actions[1:])}


def unreadable(read: dict[str, Any]) -> str:
    """Why a reply that :func:`read_move` found no move in holds none (from its ``info``)."""
    return f"the reply holds no move: {read['format_error'] or 'its <answer> block is empty'}."
