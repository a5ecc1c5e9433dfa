"""A local model behind an OpenAI-compatible HTTP server, what ``agentgym-bench serve`` runs (for tests and small
models; for throughput serve with vLLM, ``docs/rollout.md``):

- ``chat.py``: the server (``ChatServer``, a Starlette app on uvicorn) and its chat-completions route
  (``ChatHandler``), its module docstring the specification;
- ``chat_request.py``: a chat request's fields checked against OpenAI's ranges, the error shape, and the penalties
  as a logits processor;
- ``responses.py``: the Responses API (``/v1/responses``) as a translation to and from the chat route.
"""
