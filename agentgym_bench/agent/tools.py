"""Tool calls as an action format: the env's actions offered as one OpenAI-style function tool, replies read as
Hermes/Qwen tool calls.

With ``LLMAgentEnv(..., action_format="tool")`` the agent env offers one function, :data:`ACTION_TOOL`
(:func:`action_tool`: an OpenAI ``tools`` entry whose ``actions`` argument is a list of the game's action words),
and a reply is read as the tool-call text that the Hermes and Qwen2.5/Qwen3 chat templates make a model write::

    <tool_call>
    {"name": "take_actions", "arguments": {"actions": ["Up", "Left"]}}
    </tool_call>

Several ``<tool_call>`` blocks in one reply are taken in order, their actions joined (Qwen writes parallel calls
that way). A reply with no block, an unclosed block, a block that is not a JSON object, another function's name,
or ``arguments`` without a list of strings under ``actions`` is a reply of bad format: no action, the format
penalty, exactly as a reply without ``<answer>`` tags. With ``enable_think`` the reply must open with
``<think>...</think>`` and the first block must follow it (after whitespace), as ``<answer>`` must.

An OpenAI-compatible endpoint answers tool calls as structured ``message.tool_calls``; :func:`reply_text` writes
them back as this text (after the message's ``content``), so the env, the results file and replay see one string
per reply whatever the backend. :func:`split_tool_calls` is the reverse, for a server that has generated the text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentgym_bench.agent.parsing import NO_THINK, NOT_TEXT, THINK_CLOSE, THINK_OPEN, ParsedReply

ACTION_TOOL = "take_actions"
"""The name of the one function an agent env in tool format offers."""
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"
ACTION_FORMATS = ("answer", "tool")
"""``"answer"``: RAGEN's ``<answer>a1 || a2</answer>`` (the default); ``"tool"``: a call of :data:`ACTION_TOOL`."""


def action_tool(valid_actions: Sequence[str] | None, max_actions_per_turn: int) -> dict[str, Any]:
    """The OpenAI ``tools`` entry of an agent env: one function whose ``actions`` are taken in order.

    ``valid_actions`` (the game's words, if it lists them) become the items' ``enum``; ``None`` (open-text actions
    such as WebShop's ``search[...]``) leaves them free strings.
    """
    item: dict[str, Any] = {"type": "string"}
    if valid_actions is not None:
        item["enum"] = list(valid_actions)
    return {"type": "function", "function": {
        "name": ACTION_TOOL,
        "description": f"Take actions in the game, in order: at most {max_actions_per_turn} this turn.",
        "parameters": {"type": "object", "properties": {"actions": {
            "type": "array", "items": item, "description": "the actions to take, first to last"}},
            "required": ["actions"]},
    }}


def tool_call_text(name: str, arguments: Any) -> str:
    """One call as the Qwen templates render it: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``."""
    return f'{TOOL_CALL_OPEN}\n{{"name": {json.dumps(name)}, "arguments": {json.dumps(arguments)}}}\n{TOOL_CALL_CLOSE}'


def format_tool_reply(actions: list[str], *, think: str = "", enable_think: bool = True) -> str:
    """Write ``actions`` as a well-formed tool-format reply (``<think></think>`` first with ``enable_think``)."""
    head = f"{THINK_OPEN}{think}{THINK_CLOSE}\n" if enable_think else ""
    return head + tool_call_text(ACTION_TOOL, {"actions": list(actions)})


def _blocks(text: str, start: int) -> list[str] | None:
    """The contents of every ``<tool_call>...</tool_call>`` from ``start`` on; ``None`` if one is left unclosed."""
    blocks = []
    i = text.find(TOOL_CALL_OPEN, start)
    while i >= 0:
        j = text.find(TOOL_CALL_CLOSE, i + len(TOOL_CALL_OPEN))
        if j < 0:
            return None
        blocks.append(text[i + len(TOOL_CALL_OPEN) : j])
        i = text.find(TOOL_CALL_OPEN, j + len(TOOL_CALL_CLOSE))
    return blocks


def _call(block: str) -> tuple[str, Any] | None:
    """``(name, arguments)`` of one block's JSON (``arguments`` given as a JSON string is decoded), or ``None``."""
    try:
        call = json.loads(block)
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return None
        arguments = call.get("arguments", {})
        return call["name"], json.loads(arguments) if isinstance(arguments, str) else arguments
    except (ValueError, RecursionError):
        return None


def _actions(call: tuple[str, Any] | None) -> list[str] | None:
    """The ``actions`` of a call of :data:`ACTION_TOOL`, or ``None`` when the call is not one."""
    if call is None or call[0] != ACTION_TOOL or not isinstance(call[1], dict):
        return None
    actions = call[1].get("actions")
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        return None
    return actions


def parse_tool_reply(reply: str, *, enable_think: bool = True) -> ParsedReply:
    """Parse ``reply`` as tool calls of :data:`ACTION_TOOL` (module docstring). ``answer`` holds the blocks' text;
    never raises on any input (a non-string is an empty reply)."""
    if not isinstance(reply, str):
        return ParsedReply(format_ok=False, problem=NOT_TEXT)
    think, start = None, 0
    if enable_think:
        i = reply.find(THINK_OPEN)
        j = reply.find(THINK_CLOSE, i + len(THINK_OPEN)) if i >= 0 else -1
        if j < 0:
            return ParsedReply(format_ok=False, problem=NO_THINK)
        think, start = reply[i + len(THINK_OPEN) : j], j + len(THINK_CLOSE)
        if not reply[start:].lstrip().startswith(TOOL_CALL_OPEN):
            return ParsedReply(format_ok=False, think=think,
                               problem=f"{TOOL_CALL_OPEN} does not follow </think> directly")
    blocks = _blocks(reply, start)
    if not blocks:
        return ParsedReply(format_ok=False, think=think, problem=f"no {TOOL_CALL_OPEN}...{TOOL_CALL_CLOSE} block")
    actions: list[str] = []
    for block in blocks:
        found = _actions(_call(block))
        if found is None:
            return ParsedReply(format_ok=False, think=think,
                               problem=f"a tool call is not {ACTION_TOOL} with an 'actions' list of strings")
        actions += [a.strip() for a in found if a.strip()]
    return ParsedReply(format_ok=True, think=think, answer="\n".join(b.strip() for b in blocks), actions=actions)


def split_tool_calls(text: str) -> tuple[str, list[tuple[str, Any]]] | None:
    """A generated reply as OpenAI's message parts: the text before the first ``<tool_call>`` and each call's
    ``(name, arguments)``; ``None`` when the text holds no block or one that is not a well-formed call (it is then
    plain content, as vLLM's ``hermes`` parser leaves it)."""
    first = text.find(TOOL_CALL_OPEN)
    blocks = _blocks(text, 0) if first >= 0 else None
    if not blocks:
        return None
    calls = [_call(b) for b in blocks]
    if any(c is None or not isinstance(c[1], dict) for c in calls):
        return None
    return text[:first].rstrip("\n"), calls  # type: ignore[return-value]


def reply_text(content: str | None, tool_calls: Any) -> str:
    """An OpenAI response message (``content`` and ``tool_calls``) as one reply string: the content, then each
    function call as :func:`tool_call_text` (``arguments`` arrive as a JSON string and are decoded when they parse;
    otherwise they are kept as the string, which the env then reads as bad format)."""
    parts = [content] if content else []
    for call in tool_calls or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        try:
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            pass
        parts.append(tool_call_text(str(function.get("name")), arguments))
    return "\n".join(parts)


def offered_tools(envs: Sequence[Any] | None, n: int) -> list[list[dict[str, Any]] | None]:
    """The ``tools`` each of ``n`` conversations is offered: its env's ``tools`` (agent envs in tool format), else
    ``None`` (the chat template and the request then carry no tools, as before). ``envs`` may be any objects a
    rollout passes a policy (agent envs, two-player seats) or ``None``."""
    if envs is None:
        return [None] * n
    return [getattr(env, "tools", None) or None for env in envs]
