"""Our agent envs as OpenEnv environments, served by OpenEnv's own server, and a client class.

OpenEnv (https://github.com/huggingface/OpenEnv, PyPI ``openenv``; the older distribution ``openenv-core`` stops at
0.3 and installs the same ``openenv`` package) defines an ``Environment`` with ``reset(seed, episode_id, **kw) ->
Observation``, ``step(action) -> Observation`` and a ``state`` property, pydantic wire types, and a FastAPI server
(``HTTPEnvServer``) with ``POST /reset``, ``POST /step``, ``GET /state``, ``/schema``, ``/metadata``, ``/health``,
``POST /mcp`` and a ``WS /ws`` route on which each connection is one session with its own environment instance.

:class:`AgentOpenEnv` is that ``Environment`` over one :class:`~agentgym_bench.agent.LLMAgentEnv` (``gym.make`` of a
registered agent id): the action is the raw model reply, the observation is the text the model reads next plus the
env's ``info``; reward and ``done`` ride on the observation as OpenEnv wants. Nothing of the game or the reply
parser is repeated here.

Splits. OpenEnv's Task API (``GET /agentgym-bench/splits``, ``POST /agentgym-bench/num_tasks``, ``/task``,
``/task_range``, ``/tasks``) lists the benchmark's three splits, ``train``, ``validation`` and ``test``, each a range
of seeds (:data:`SPLIT_SEEDS`, from :mod:`agentgym_bench.seeds`): task ``i`` of a split is the episode of its
``i``-th seed, and ``reset(split="test", index=i)`` plays it (``reset(split="test")`` a random task of the split).
A seed's content is held out by split (:func:`agentgym_bench.seeds.seed_content_split`), so a ``test`` task never
shows a room, map or deal that a ``train`` or ``validation`` task can.

Sessions. :func:`make_app` builds the FastAPI app with ``HTTPEnvServer`` within the
:class:`~agentgym_bench.http_body.ServerLimits` it is given: at most ``max_sessions`` concurrent WebSocket sessions
(OpenEnv refuses the next one with ``CAPACITY_REACHED``), and ``ws_max_bytes`` a message for the uvicorn that serves
it (the app's ``limits``). A client that disconnects, cleanly or not, ends its session (OpenEnv closes the env). A
session idle for ``session_ttl`` seconds is closed by :class:`SessionGuard`, which ends the WebSocket itself:
OpenEnv's own idle reaper (0.3 and 0.10) never reaps a session whose WebSocket is attached, so an idle client would
keep its env and socket forever.

HTTP. As in OpenEnv, ``POST /reset`` and ``POST /step`` each build a fresh env and close it after the call, so HTTP
gives the first observation of an episode (``/reset`` with a seed) but cannot play one; ``POST /step`` answers 409
with the reason. Episodes run on the WebSocket: :class:`AgentEnvClient`, an OpenEnv ``EnvClient`` (it runs on the
pinned ``openenv-core`` 0.3 as well as on ``openenv`` 0.10). ``openenv validate --url`` passes on the server.

One server serves several env ids: ``reset(env_id=...)`` picks one of them (default: the first).

Install: ``pip install -e '.[openenv]'``. Command line: ``agentgym-bench openenv-serve [ENV_ID ...]``
(:mod:`agentgym_bench.commands.openenv_serve`). The package manifest for ``openenv validate <folder>``:
``openenv.yaml`` next to this module (:data:`MANIFEST`).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
from starlette.websockets import WebSocketDisconnect

import agentgym_bench  # registers the env ids
from agentgym_bench import seeds
from agentgym_bench.adapters import require
from agentgym_bench.agent.env import MAX_REPLY_LENGTH, LLMAgentEnv
from agentgym_bench.errors import UserError
from agentgym_bench.http_body import ServerLimits
from agentgym_bench.registration import check_env_id
from agentgym_bench.rollout.trajectory import json_safe

_types = require("openenv.core.env_server.types", "openenv")
_interfaces = require("openenv.core.env_server.interfaces", "openenv")
_http = require("openenv.core.env_server.http_server", "openenv")
_client = require("openenv.core.env_client", "openenv")
_client_types = require("openenv.core.client_types", "openenv")
from pydantic import Field  # noqa: E402 - pydantic comes with openenv

ENV_NAME = "agentgym-bench"
"""The environment's name in OpenEnv's Task API routes (``/agentgym-bench/splits``) and ``/metadata``."""
MANIFEST = Path(__file__).with_name("openenv.yaml")
"""The OpenEnv package manifest (``openenv validate`` reads a folder's ``openenv.yaml``)."""
SPLIT_SEEDS = {
    "train": range(seeds.TRAIN_SEED_START, seeds.V1_TEST_SEEDS.start),
    "validation": range(seeds.VALIDATION_SEED_START, seeds.TRAIN_SEED_START),
    "test": seeds.TEST_SEEDS,
}
"""OpenEnv split name -> its seeds, task ``i`` being seed ``SPLIT_SEEDS[split][i]``: validation ``0 .. 9 999``,
training ``10 000`` up to (not into) agentgym-v1's retired test seeds, test the benchmark's held-out test seeds."""
MAX_TASK_RANGE = 1000
"""The most task specs one ``task_range`` request returns (``tasks`` returns the first ones, as a preview)."""


class AgentAction(_types.Action):
    """One model reply, verbatim (``<think>...</think><answer>Up || Left</answer>``)."""

    reply: str = Field(max_length=MAX_REPLY_LENGTH, description="the raw model reply")


class AgentObservation(_types.Observation):
    """What the model reads next (``text``) and the env's ``info`` (JSON-safe; see ``LLMAgentEnv``).

    ``reward`` is the turn's reward (``None`` after reset), ``done`` is ``terminated or truncated``. OpenEnv's wire
    format drops ``metadata`` (0.10 keeps it), so everything a trainer needs is in real fields.
    """

    text: str = ""
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


class AgentState(_types.State):
    """The session's episode: which env, which seed, its split (and task index when reset by split), how far it is."""

    env_id: str | None = None
    seed: int | None = None
    split: str | None = None
    task_index: int | None = None
    episode_reward: float = 0.0
    done: bool = True


class EpisodeNotRunning(RuntimeError):
    """``step`` without a running episode (never reset, or already over)."""


class BadTaskRequest(ValueError):
    """A Task API request for a split that does not exist or a range too long (HTTP 400)."""


def split_seeds(split: Any) -> range:
    """The seeds of OpenEnv split ``split``, or :class:`BadTaskRequest` naming the splits."""
    if not isinstance(split, str) or split not in SPLIT_SEEDS:
        raise BadTaskRequest(f"split={split!r} is not a split of this environment; choose from {list(seeds.SPLITS)}")
    return SPLIT_SEEDS[split]


def task_spec(split: str, index: int) -> dict[str, Any]:
    """Task ``index`` of ``split``: ``{"id", "split", "index", "seed"}``; ``IndexError`` outside the split."""
    span = split_seeds(split)
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(span):
        raise IndexError(f"index={index!r} is outside split {split!r} (0 .. {len(span) - 1})")
    return {"id": f"{split}-{index}", "split": split, "index": index, "seed": span[index]}


def seed_for(seed: Any, split: Any, index: Any) -> tuple[int | None, str | None, int | None]:
    """``(seed, split, task_index)`` of a reset: a seed, or a split and an index (random if ``None``), not both."""
    if split is None:
        if index is not None:
            raise ValueError("index needs a split (reset(split='test', index=3))")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
            raise ValueError(f"seed={seed!r} must be a non-negative integer or null")
        return seed, None if seed is None else seeds.seed_content_split(seed), None
    if seed is not None:
        raise ValueError("give a seed or a split (and index), not both")
    index = random.randrange(len(split_seeds(split))) if index is None else index
    return task_spec(split, index)["seed"], split, index


class AgentOpenEnv(_interfaces.Environment):
    """An OpenEnv ``Environment`` over our agent envs (one instance per session).

    Arguments:
        env_ids: the agent ids this server offers; ``reset(env_id=...)`` picks one (default: the first).
        env_kwargs: ``gym.make`` keyword arguments for every id (e.g. ``{"prompt": "compact"}``).
        session_ttl: the server's idle limit in seconds (``None``: none), named in the error of a step that finds
            no episode, since a session the server closed for idleness comes back to its client as a new one.

    The gym env is built on the first ``reset`` (OpenEnv builds throwaway instances for ``/state`` and
    ``/metadata``) and rebuilt only when the id changes. ``(env_id, env_kwargs, seed)`` fixes the episode exactly as
    ``gym.make(env_id, **env_kwargs).reset(seed=seed)`` does.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session owns its env; nothing is shared between instances

    def __init__(self, env_ids: Sequence[str], env_kwargs: Mapping[str, Any] | None = None,
                 session_ttl: float | None = None):
        super().__init__()
        self.env_ids = check_env_ids(env_ids)
        self.env_kwargs = dict(env_kwargs or {})
        self.session_ttl = session_ttl
        self.env: LLMAgentEnv | None = None
        self._state = AgentState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, env_id: str | None = None,
              split: str | None = None, index: int | None = None, **kwargs: Any) -> AgentObservation:
        if kwargs:
            raise ValueError(f"unknown reset arguments {sorted(kwargs)}; accepted: seed, episode_id, env_id, split, "
                             "index")
        seed, split, index = seed_for(seed, split, index)
        env_id = self.env_ids[0] if env_id is None else env_id
        if env_id not in self.env_ids:
            raise ValueError(f"env_id={env_id!r} is not served here; this server offers {self.env_ids}")
        if self.env is None or self._state.env_id != env_id:
            self.close()
            self.env = gym.make(env_id, **self.env_kwargs)
        text, info = self.env.reset(seed=seed)
        self._state = AgentState(episode_id=episode_id or str(uuid.uuid4()), step_count=0, env_id=env_id, seed=seed,
                                 split=split, task_index=index, done=False)
        return AgentObservation(text=text, info=json_safe(info), reward=None, done=False)

    def step(self, action: AgentAction, timeout_s: float | None = None, **kwargs: Any) -> AgentObservation:
        if self.env is not None and self._state.done:
            raise EpisodeNotRunning(f"the episode is over (it ended at step {self._state.step_count}): send reset "
                                    "to start another")
        if self.env is None:
            idle = (f"the server closes a session idle for {self.session_ttl:g} s (openenv-serve --session-ttl), "
                    "and the client then reconnects to a new one; " if self.session_ttl else "")
            raise EpisodeNotRunning("no episode is running in this session: send reset first. If you did, this is "
                                    f"another session: {idle}over HTTP every request gets a fresh env, so episodes "
                                    "need the WebSocket session at /ws")
        text, reward, terminated, truncated, info = self.env.step(action.reply)
        state = self._state
        state.step_count += 1
        state.episode_reward += float(reward)
        state.done = bool(terminated or truncated)
        return AgentObservation(text=text, info=json_safe(info), reward=float(reward), done=state.done,
                                truncated=bool(truncated))

    @property
    def state(self) -> AgentState:
        return self._state

    def get_metadata(self) -> Any:
        return _types.EnvironmentMetadata(
            name=ENV_NAME, version=agentgym_bench.__version__,
            description=f"agentgym-bench agent envs {self.env_ids}: the action is the model's raw reply, the "
                        "observation the text it reads next; reset(env_id=..., seed=...) or reset(split=..., "
                        "index=...) with the splits train, validation and test; episodes run on WS /ws.")

    # OpenEnv's Task API (TaskProvider): the splits and their tasks, one task per seed.
    def list_splits(self) -> list[dict[str, Any]]:
        return [{"name": name, "type": name, "num_tasks": len(span), "first_seed": span.start}
                for name, span in SPLIT_SEEDS.items()]

    def num_tasks(self, split: str) -> int:
        return len(split_seeds(split))

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return task_spec(split, index)

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        indices = range(len(split_seeds(split)))[slice(start, stop)]
        if len(indices) > MAX_TASK_RANGE:
            raise BadTaskRequest(f"{len(indices)} tasks asked for; ask for at most {MAX_TASK_RANGE} at a time")
        return [task_spec(split, i) for i in indices]

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        """The split's first :data:`MAX_TASK_RANGE` tasks (a preview; ``num_tasks`` gives the true count)."""
        return self.get_task_range(split, 0, MAX_TASK_RANGE)

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None


def check_env_ids(env_ids: Sequence[str]) -> list[str]:
    """``env_ids`` as a list (each as :func:`~agentgym_bench.registration.check_env_id` gives it: ours, a TextArena
    game's or an agent env of the user's own), or :class:`UserError` if it is empty or names one that is not."""
    env_ids = list(env_ids)
    if not env_ids:
        raise UserError("give at least one env id")
    return [check_env_id(e) for e in env_ids]


class SessionGuard:
    """ASGI middleware around OpenEnv's app for WebSocket sessions, holding the server's ``limits``.

    - A WebSocket that sends nothing for ``limits.session_ttl`` seconds (``None``: no limit) is told the client
      left; the app then ends the session as for any disconnect (OpenEnv closes the env) and closes the socket, so a
      client that opens sessions and goes quiet holds neither an env nor a connection past the TTL.
    - OpenEnv 0.3 closes the socket after the client's ``close`` message even when the client has already gone,
      which raises ``WebSocketDisconnect`` out of the app and logs a traceback per normal session end; that one
      exception is dropped here (the session is already cleaned up by then).
    """

    def __init__(self, app: Any, limits: ServerLimits):
        self.app, self.limits = app, limits

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)

        ttl = self.limits.session_ttl

        async def receive_with_deadline() -> dict:
            try:
                return await asyncio.wait_for(receive(), ttl)
            except asyncio.TimeoutError:
                return {"type": "websocket.disconnect", "code": 1001, "reason": "session idle too long"}

        try:
            await self.app(scope, receive if ttl is None else receive_with_deadline, send)
        except WebSocketDisconnect:
            pass


def make_app(env_ids: Sequence[str], *, limits: ServerLimits | None = None,
             env_kwargs: Mapping[str, Any] | None = None) -> Any:
    """The ASGI app: OpenEnv's routes for :class:`AgentOpenEnv` within ``limits`` (default: ServerLimits'
    defaults): at most ``limits.max_sessions`` WebSocket sessions, each closed after ``limits.session_ttl`` idle
    seconds (``None``: never).

    The FastAPI app is ``app.app`` (inside :class:`SessionGuard`); ``app.limits`` are the limits (serve it with
    ``ws_max_size=app.limits.ws_max_bytes``, as ``openenv-serve`` does); ``app.app.state.env_server`` is OpenEnv's
    ``HTTPEnvServer`` (its ``active_sessions`` counts open sessions).
    """
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    limits = limits or ServerLimits()
    env_ids = check_env_ids(env_ids)
    kwargs = dict(env_kwargs or {})
    try:
        gym.make(env_ids[0], **kwargs).close()  # a bad kwarg is an error now, not in every session
    except (TypeError, ValueError) as e:
        raise UserError(f"env_kwargs={kwargs} do not build {env_ids[0]}: {e}") from e
    if "env_name" not in inspect.signature(_http.HTTPEnvServer).parameters:
        raise UserError("the OpenEnv server needs the package openenv >= 0.10 (this is the older openenv-core, whose "
                        "client still works): pip uninstall openenv-core && pip install -e '.[openenv]'")
    factory = functools.partial(AgentOpenEnv, env_ids, kwargs, limits.session_ttl)
    server = _http.HTTPEnvServer(factory, AgentAction, AgentObservation, env_name=ENV_NAME, state_cls=AgentState,
                                 concurrency_config=_types.ConcurrencyConfig(max_concurrent_envs=limits.max_sessions))
    # version: the OpenEnv HTTP API's (OpenEnv's own app says 1.0.0; `openenv validate --url` reads it).
    app = FastAPI(title="agentgym-bench OpenEnv server", version="1.0.0",
                  description=f"Agent envs {env_ids} as OpenEnv environments; episodes run on WS /ws.")
    server.register_routes(app)

    @app.exception_handler(EpisodeNotRunning)
    async def _not_running(request: Any, exc: EpisodeNotRunning) -> JSONResponse:
        return JSONResponse(status_code=409, content={"detail": str(exc)})

    @app.exception_handler(BadTaskRequest)
    async def _bad_task_request(request: Any, exc: BadTaskRequest) -> JSONResponse:
        return JSONResponse(status_code=400, content={"detail": str(exc)})

    app.state.env_server = server
    return SessionGuard(app, limits)


class AgentEnvClient(_client.EnvClient):
    """An OpenEnv client for :func:`make_app`'s server (async; ``.sync()`` for a blocking one).

    ::

        with AgentEnvClient("http://127.0.0.1:8000").sync() as env:
            result = env.reset(seed=0, env_id="AgentFrozenLake-v0")
            while not result.done:
                result = env.step(my_model(result.observation.text))   # a str or an AgentAction

    ``result.observation`` is an :class:`AgentObservation`; ``result.reward`` the turn's reward.
    """

    def _step_payload(self, action: AgentAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            return {"reply": action}
        return {"reply": action.reply}

    def _parse_result(self, payload: dict[str, Any]) -> Any:
        observation = AgentObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                                       done=payload.get("done", False))
        return _client_types.StepResult(observation=observation, reward=payload.get("reward"),
                                        done=bool(payload.get("done", False)))

    def _parse_state(self, payload: dict[str, Any]) -> AgentState:
        return AgentState(**payload)
