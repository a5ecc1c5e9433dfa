"""What a chat-completions request asks, checked against OpenAI's ranges (the server is
:mod:`agentgym_bench.serving.chat`): :func:`request_settings` reads a parsed body (:func:`parse_body`) into the
settings the handler samples with, and raises :class:`FieldError` naming the field at fault; :class:`RequestError`
is an error answer and :func:`error_body` OpenAI's error shape; :class:`Adjust` applies ``logit_bias`` and the
frequency and presence penalties to the logits."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import torch  # noqa: TID253 - the penalties act on the model's logits; only the server imports this module

MAX_N = 16
"""Most choices (``n``) one request may ask for."""
MAX_SEED = 2**63 - 1
MAX_TOKENS_WITHOUT_LIMIT = 32_768
"""``max_tokens`` cap for a model that does not say how many positions it has."""
MAX_STOP = 4
"""Most stop strings one request may give (OpenAI's limit)."""
MAX_TOP_LOGPROBS = 20
"""Most ``top_logprobs`` one request may ask for (OpenAI's limit)."""
SMALLEST_TOP_P = 1e-9
"""The ``top_p`` sampled with for a request's ``top_p: 0`` (OpenAI's range includes 0): the most likely token alone."""


class FieldError(ValueError):
    """A request field that is wrong (both routes): ``param`` names it, ``code`` is OpenAI's code for the fault,
    ``status`` the HTTP status (400, or 404 for a ``previous_response_id`` not stored)."""

    def __init__(self, param: str, message: str, code: str = "invalid_value", status: int = 400):
        super().__init__(message)
        self.param, self.code, self.status = param, code, status


class RequestError(Exception):
    """An error answer: HTTP ``status`` with OpenAI's error body (``param``: the field at fault, ``code``: OpenAI's
    error code, both ``null`` when none applies)."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error", *, param: str | None = None,
                 code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.kind, self.param, self.code = status, message, kind, param, code


def parse_body(raw: bytes, max_depth: int) -> Any:
    """A request body as JSON; ``ValueError`` naming what is wrong (nesting deeper than ``max_depth`` levels and
    integers of thousands of digits included). ``NaN``, ``Infinity`` and ``1e999`` parse, and the field that holds
    one is refused by its check (:func:`_number`)."""
    try:
        body = json.loads(raw)
    except RecursionError:
        raise ValueError("the body nests arrays and objects too deeply") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"the body is not UTF-8: {e}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"the body is not JSON: {e}") from None
    if _depth(body) > max_depth:  # the chat template recurses into tools and messages: RecursionError long before 1000
        raise ValueError(f"the body nests arrays and objects too deeply (more than {max_depth} levels)")
    return body


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and dicts (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is not None:
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _number(request: dict[str, Any], key: str, default: float, low: float, high: float, *, integer: bool = False,
            low_open: bool = False) -> float:
    """``request[key]`` (``default`` if absent or null), checked: a finite number (an integer if ``integer``) in
    ``[low, high]`` (``(low, high]`` if ``low_open``); ``ValueError`` naming the field."""
    value = _given(request, key, default)
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)) or (
            isinstance(value, float) and not math.isfinite(value)):
        raise FieldError(key, f"{key}={value!r} must be {kind}"[:200], "invalid_type")
    if value < low or value > high or (low_open and value == low):
        bounds = f"({low}, {high}]" if low_open else f"[{low}, {high}]"
        code = "integer_below_min_value" if integer and value < low else "invalid_value"
        raise FieldError(key, f"{key}={value!r} must be {kind} in {bounds}"[:200], code)
    return value


def _stop_strings(request: dict[str, Any]) -> list[str]:
    """``stop``: absent or ``null`` (none), a string, or a list of up to :data:`MAX_STOP` strings, none empty."""
    stop = _given(request, "stop", [])
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or len(stops) > MAX_STOP or not all(isinstance(s, str) and s for s in stops):
        raise FieldError("stop", f"stop={stop!r} must be a non-empty string or a list of up to {MAX_STOP} "
                                 "non-empty strings"[:200])
    return stops


def _given(request: dict[str, Any], key: str, default: Any) -> Any:
    """``request[key]``, or ``default`` when absent or ``null`` (OpenAI's clients send ``null`` for unset)."""
    value = request.get(key)
    return default if value is None else value


def _content(content: Any, where: str) -> str:
    """A message's ``content``: a string, or a list of text parts (``{"type": "text", "text": ...}``) joined with
    newlines as vLLM joins them; another part type (an image, audio, a file) is a :class:`FieldError` naming it."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        raise FieldError(f"{where}.content", f"{where}.content must be a string or a non-empty list of text parts",
                         "invalid_type")
    texts = []
    for j, part in enumerate(content):
        param = f"{where}.content[{j}]"
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise FieldError(param, f"{param} must be an object with a type", "invalid_type")
        if part["type"] != "text":
            raise FieldError(f"{param}.type", f"{param}.type={part['type']!r}"[:120] + " is not supported: this "
                             "server serves a text-only model and reads only parts of type 'text'")
        if not isinstance(part.get("text"), str):
            raise FieldError(f"{param}.text", f"{param}.text must be a string", "invalid_type")
        texts.append(part["text"])
    return "\n".join(texts)


def _messages(messages: Any) -> list[dict[str, Any]]:
    """The request's ``messages``, each content as one string (:func:`_content`; an assistant message with
    ``tool_calls`` may have none)."""
    if not isinstance(messages, list) or not messages:
        raise FieldError("messages", "messages must be a non-empty list of {role, content} objects", "invalid_type")
    out = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise FieldError(where, f"{where} must be an object with a role string and content", "invalid_type")
        content = message.get("content")
        if content is None and message["role"] == "assistant" and message.get("tool_calls"):
            content = ""
        out.append({**message, "content": _content(content, where)})
    return out


def _tools(request: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str] | None]:
    """``tools`` (function tools only, each with a name; ``[]`` when absent or ``tool_choice`` is ``"none"``) and
    the functions a forced call may name: ``None`` for ``"auto"`` (the default) and ``"none"``, every tool's for
    ``"required"``, the one named by ``{"type": "function", "function": {"name": ...}}``."""
    tools, choice = _given(request, "tools", []), _given(request, "tool_choice", "auto")
    if not isinstance(tools, list) or not all(
            isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("function"), dict)
            and isinstance(t["function"].get("name"), str) for t in tools):
        raise FieldError("tools", "tools must be a list of {type: 'function', function: {name, ...}} objects",
                         "invalid_type")
    if choice in ("auto", "none"):
        return ([] if choice == "none" else tools), None
    names = list(dict.fromkeys(t["function"]["name"] for t in tools))
    function = choice.get("function") if isinstance(choice, dict) and choice.get("type") == "function" else None
    if choice != "required" and not (isinstance(function, dict) and isinstance(function.get("name"), str)):
        raise FieldError("tool_choice", f"tool_choice={choice!r}"[:120] + " is not supported: this server takes "
                         "'none', 'auto', 'required' or {'type': 'function', 'function': {'name': ...}}")
    if not names:
        raise FieldError("tool_choice", "tool_choice 'required' or a named function needs tools")
    if function is not None and function["name"] not in names:
        raise FieldError("tool_choice", f"tool_choice names the function {function['name']!r}"[:150] + ", which "
                         "tools do not list")
    return tools, names if function is None else [function["name"]]


def _logit_bias(request: dict[str, Any], vocab_size: int | None) -> dict[int, float]:
    """``logit_bias``: token ids (as strings, OpenAI's keys) of this model to numbers in ``[-100, 100]``."""
    bias = _given(request, "logit_bias", {})
    if not isinstance(bias, dict):
        raise FieldError("logit_bias", "logit_bias must be an object of token ids (strings) to numbers in "
                         "[-100, 100]", "invalid_type")
    out = {}
    for key, value in bias.items():
        if not re.fullmatch(r"[0-9]{1,12}", key) or (vocab_size is not None and int(key) >= vocab_size):
            raise FieldError("logit_bias", f"logit_bias key {key!r}"[:120] + " is not a token id of this model "
                             f"(0..{vocab_size - 1 if vocab_size else '?'})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not -100 <= value <= 100:
            raise FieldError("logit_bias", f"logit_bias[{key!r}]={value!r}"[:120] + " must be a number in "
                             "[-100, 100]")
        out[int(key)] = float(value)
    return out


def _refuse_unsupported(request: dict[str, Any]) -> None:
    """Options this server cannot honour are a 400 naming them, never silently ignored: a ``response_format``
    other than text (no JSON mode or schema-constrained decoding)."""
    response_format = _given(request, "response_format", {"type": "text"})
    if response_format != {"type": "text"}:
        raise FieldError("response_format", f"response_format={response_format!r}"[:120] + " is not supported: "
                         "this server generates text only ({'type': 'text'}), with no JSON mode or schema")


def request_settings(request: Any, next_seed: int, max_tokens_limit: int = MAX_TOKENS_WITHOUT_LIMIT,
                      vocab_size: int | None = None) -> dict[str, Any]:
    """Checked settings of a chat-completions request, in OpenAI's ranges; ValueError naming the field that is
    wrong. ``max_tokens`` is ``None`` when not given (the reply may fill the room the prompt leaves)."""
    if not isinstance(request, dict):
        raise ValueError("the body must be a JSON object")
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise FieldError("model", "you must provide a model parameter (a non-empty string)",
                         "invalid_type" if model is not None else "missing_required_parameter")
    messages = _messages(request.get("messages"))
    _refuse_unsupported(request)
    n = _given(request, "n", 1)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_N:
        raise FieldError("n", f"n={n!r} must be an integer in 1..{MAX_N}")
    stream = request.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise FieldError("stream", f"stream={stream!r} must be true or false")
    options = request.get("stream_options") or {}
    if not isinstance(options, dict):
        raise FieldError("stream_options", "stream_options must be an object")
    max_tokens = None  # each given field is checked (0 and negatives are a 400 naming it)
    for key in ("max_tokens", "max_completion_tokens"):  # OpenAI's newer name wins
        if request.get(key) is not None:
            max_tokens = int(_number(request, key, 1, 1, max_tokens_limit, integer=True))
    seed = _number(request, "seed", next_seed, -MAX_SEED, MAX_SEED, integer=True)
    logprobs = _given(request, "logprobs", False)
    if not isinstance(logprobs, bool):
        raise FieldError("logprobs", f"logprobs={logprobs!r}"[:120] + " must be true or false", "invalid_type")
    top_logprobs = int(_number(request, "top_logprobs", 0, 0, MAX_TOP_LOGPROBS, integer=True))
    if top_logprobs and not logprobs:
        raise FieldError("top_logprobs", "top_logprobs needs logprobs: true")
    tools, called = _tools(request)
    top_p = float(_number(request, "top_p", 1.0, 0, 1))
    return {"model": model, "messages": messages, "tools": tools, "called": called, "n": n, "stream": bool(stream),
            "stop": _stop_strings(request), "max_tokens": max_tokens, "logit_bias": _logit_bias(request, vocab_size),
            "penalties": [float(_number(request, key, 0.0, -2, 2)) for key in ("frequency_penalty",
                                                                                 "presence_penalty")],
            "include_usage": bool(options.get("include_usage", False)), "logprobs": logprobs,
            "policy": {"temperature": float(_number(request, "temperature", 1.0, 0, 2)),
                       "top_p": top_p or SMALLEST_TOP_P, "seed": int(seed), "top_logprobs": top_logprobs}}


class Adjust:
    """OpenAI's ``logit_bias``, ``frequency_penalty`` and ``presence_penalty`` as an
    :class:`~agentgym_bench.rollout.hf.HFPolicy` logits processor, before temperature and ``top_p``:
    ``logits[j] += bias[j] - c[j] * frequency_penalty - (c[j] > 0) * presence_penalty``, ``c[j]`` the times token
    ``j`` is in the reply so far (OpenAI's definition; the prompt's tokens are not counted)."""

    def __init__(self, bias: dict[int, float], frequency_penalty: float, presence_penalty: float):
        self.bias, self.frequency, self.presence = bias, frequency_penalty, presence_penalty

    def __call__(self, generated: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        if self.bias:
            ids = torch.tensor(list(self.bias), device=logits.device)
            values = torch.tensor(list(self.bias.values()), dtype=logits.dtype, device=logits.device)
            logits = logits.index_add(1, ids, values.expand(logits.shape[0], -1))
        if (self.frequency or self.presence) and generated.shape[1]:
            ones = torch.ones_like(generated, dtype=logits.dtype)
            counts = torch.zeros_like(logits).scatter_add_(1, generated, ones)
            logits = logits - counts * self.frequency - (counts > 0).to(logits.dtype) * self.presence
        return logits


def error_body(message: str, kind: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
