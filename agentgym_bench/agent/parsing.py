"""Parse an LLM reply into actions, and write replies in the same format.

The reply format follows RAGEN: ``<think>...</think><answer>a1 || a2</answer>``. With thinking disabled only
``<answer>...</answer>`` is required (a ``<think>`` block before it is allowed and ignored). One reading is stricter
than RAGEN's regex: the answer must follow the first ``</think>`` (:class:`agentgym_bench.agent.LLMAgentEnv`).

Parsing is linear in the reply length (``str.find`` scans, no backtracking regex), so a 1 MB reply full of
unbalanced tags costs one pass. It never raises on any ``str``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
ACTION_SEP = "||"


@dataclass(frozen=True)
class ParsedReply:
    """What was read from one reply.

    Attributes:
        format_ok: the reply contained the required tags in order.
        think: text inside ``<think>`` (``None`` if absent).
        answer: text inside ``<answer>`` (``None`` if the format was not met).
        actions: the answer split on the separator, each item stripped, empty items dropped.
        problem: why the format was not met, in a few words a person can act on (``""`` when it was).
    """

    format_ok: bool
    think: str | None = None
    answer: str | None = None
    actions: list[str] = field(default_factory=list)
    problem: str = ""


NOT_TEXT = "the reply is not a string"
NO_THINK = "no <think>...</think> block before the answer (this env asks for one)"
"""The format problems both reply formats share (:func:`parse_reply`, ``tools.parse_tool_reply``)."""


def _between(text: str, start: int, open_tag: str, close_tag: str) -> tuple[str, int] | None:
    """Content of the first ``open_tag ... close_tag`` at or after ``start``, and the index after ``close_tag``."""
    i = text.find(open_tag, start)
    if i < 0:
        return None
    j = text.find(close_tag, i + len(open_tag))
    if j < 0:
        return None
    return text[i + len(open_tag) : j], j + len(close_tag)


def parse_reply(reply: str, *, enable_think: bool = True, action_sep: str = ACTION_SEP) -> ParsedReply:
    """Parse ``reply``.

    With ``enable_think`` the reply must hold ``<think>...</think>`` followed (after optional whitespace) by
    ``<answer>...</answer>``; otherwise the first ``<answer>...</answer>`` anywhere counts. Text outside the tags is
    ignored, as in RAGEN. Non-string input is treated as an empty reply.
    """
    if not isinstance(reply, str):
        return ParsedReply(format_ok=False, problem=NOT_TEXT)
    think = None
    answer_from = 0
    if enable_think:
        found = _between(reply, 0, THINK_OPEN, THINK_CLOSE)
        if found is None:
            return ParsedReply(format_ok=False, problem=NO_THINK)
        think, answer_from = found
        rest = reply[answer_from:].lstrip()
        if not rest.startswith(ANSWER_OPEN):
            return ParsedReply(format_ok=False, think=think, problem="<answer> does not follow </think> directly")
        answer_from = len(reply) - len(rest)
    found = _between(reply, answer_from, ANSWER_OPEN, ANSWER_CLOSE)
    if found is None:
        return ParsedReply(format_ok=False, think=think, problem="no <answer>...</answer> block")
    answer = found[0]
    actions = [a.strip() for a in answer.split(action_sep)]
    return ParsedReply(format_ok=True, think=think, answer=answer, actions=[a for a in actions if a])


def format_reply(
    actions: list[str], *, think: str = "", enable_think: bool = True, action_sep: str = ACTION_SEP
) -> str:
    """Write ``actions`` as a well-formed reply, e.g. ``<think></think><answer>Up || Left</answer>``."""
    answer = f" {action_sep} ".join(actions)
    head = f"{THINK_OPEN}{think}{THINK_CLOSE}" if enable_think else ""
    return f"{head}{ANSWER_OPEN}{answer}{ANSWER_CLOSE}"
