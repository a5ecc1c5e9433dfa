"""Routes for other trainers, each one small module over the same :class:`~agentgym_bench.agent.LLMAgentEnv`.

- :mod:`agentgym_bench.adapters.openenv`: the agent envs as OpenEnv environments (``openenv-core``'s server and
  types, WebSocket sessions) and a client class; ``agentgym-bench openenv-serve``.
- :mod:`agentgym_bench.adapters.gem`: the agent envs through GEM's ``gem.Env`` interface (``gem-llm``; ROLL).
- :mod:`agentgym_bench.adapters.trl`: for ``trl.GRPOTrainer``, a ``rollout_func`` that plays multi-turn episodes
  and returns our token view (model tokens masked from env tokens), and an ``environment_factory`` environment
  whose tool ``take_actions`` plays a turn.

Each third-party package is an optional extra, imported only when its adapter module is imported; a missing one
is a :class:`~agentgym_bench.errors.UserError` naming the install command (from a clone). See
``docs/integrations.md``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from agentgym_bench.errors import MissingExtra


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise :class:`~agentgym_bench.errors.MissingExtra` naming ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtra(f"this needs the optional package behind `{module}` ({e})", extra) from e
