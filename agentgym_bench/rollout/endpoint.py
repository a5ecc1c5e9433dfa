"""Ask an OpenAI-compatible endpoint, before a run, whether it answers and serves the model: ``GET {base}/models``
(OpenAI, vLLM, ``agentgym-bench serve``, ``transformers serve`` and Ollama all have it), how many tokens the model
reads where the endpoint says (``max_model_len`` in each model object, as vLLM and ``serve`` report it; OpenAI's own
API does not), and say what to change when a run against it fails (:func:`what_to_change`).

Standard library only (``urllib``), as :mod:`agentgym_bench.rollout.openai_compat`.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

from agentgym_bench.errors import UserError
from agentgym_bench.rollout.openai_compat import NOT_OPENAI, GenerationError, error_of


def served_models(base_url: str, *, api_key_env: str = "OPENAI_API_KEY", timeout: float = 10.0
                  ) -> dict[str, int | None] | None:
    """The model ids ``GET {base_url}/models`` lists, each with its context length in tokens (the model object's
    ``max_model_len``, vLLM's field; ``None`` where it is absent or not a positive integer); ``None`` if the endpoint
    has no such route (404, 405).

    Raises:
        UserError: one line naming the URL when the endpoint does not answer, refuses the key, or answers something
            else than a model list.
    """
    url = base_url.rstrip("/") + "/models"
    key = os.environ.get(api_key_env, "")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = json.loads(response.read(1 << 20))
    except urllib.error.HTTPError as e:
        if e.code in (404, 405):
            return None
        message, _ = error_of(e.read(1 << 16))
        hint = (f": set the endpoint's API key in ${api_key_env}, or name the variable that holds it with "
                "--api-key-env" if e.code in (401, 403) else "")
        raise UserError(f"{url}: HTTP {e.code}: {message}{hint}") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{url} answered something else than a model list (not JSON: {e}): is {base_url} the API's "
                        "base URL? (OpenAI-compatible servers serve theirs under /v1)") from None
    except (OSError, ValueError) as e:  # refused, unknown host, timeout
        reason = getattr(e, "reason", e)
        raise UserError(f"{url} does not answer ({reason}): is the server running? (start one with "
                        "`agentgym-bench serve` or `vllm serve`)") from None
    try:
        return {str(m["id"]): _context(m) for m in data["data"]}
    except (KeyError, TypeError) as e:
        raise UserError(f"{url} answered something else than a model list: {str(data)[:200]}") from e


def _context(model: dict) -> int | None:
    value = model.get("max_model_len")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def check_model(base_url: str, model: str, **kwargs: float | str) -> int | None:
    """A one-line :class:`UserError` if the endpoint does not answer or does not list ``model`` (the message lists
    the models it serves); else the model's context length if the endpoint reports it (``max_model_len``), ``None``
    if it does not or has no ``/models`` route. ``kwargs``: as for :func:`served_models`."""
    served = served_models(base_url, **kwargs)  # type: ignore[arg-type]
    if served is None:
        return None
    if model not in served:
        names = list(served)
        listed = ", ".join(repr(m) for m in names[:20]) + (" ..." if len(names) > 20 else "")
        raise UserError(f"{base_url.rstrip('/')}/models does not list model {model!r}; it serves {listed or 'none'}: "
                        f"give one as openai:NAME@{base_url}")
    return served[model]


CONTEXT_HINT = ("the prompt and its reply budget are longer than the model's context: a shorter prompt (--prompt "
                "compact, --history 0) or fewer reply tokens (--max-new-tokens)")


def what_to_change(err: GenerationError) -> str:
    """What a user of ``eval`` can change after a failed request, from its HTTP status and error code ("" if
    nothing is known)."""
    text = str(err).lower()
    if err.code == "context_length_exceeded" or (err.status == 400 and "context" in text):
        return CONTEXT_HINT
    if err.status is None:
        return "no answer: is the server still running? (raise --timeout for a slow one)"
    if err.code == NOT_OPENAI:
        return ("the endpoint answered, but not as OpenAI's API does: is the URL the API's base (OpenAI-compatible "
                "servers serve it under /v1), and does the server speak that API?")
    if err.status in (401, 403):
        return "set the endpoint's API key in $OPENAI_API_KEY, or name the variable that holds it with --api-key-env"
    if err.status == 404:
        no_v1 = "/v1/" not in (err.url or "") and " (no /v1 in it: OpenAI-compatible servers serve under /v1)"
        return f"check the model name and the URL{no_v1 or ''} (GET .../v1/models lists the models)"
    if err.status == 429:
        return "the endpoint limits the rate: lower --max-concurrency"
    if err.status >= 500:
        return "the server failed: see its log"
    return ""
