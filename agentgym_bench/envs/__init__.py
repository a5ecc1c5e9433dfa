"""Core game environments: one package or module per game, pure rules kept apart from the Gymnasium adapter.

- ``bandit.py``: RAGEN's two-armed bandit (one pull, arms known only by their names);
- ``frozen_lake.py``: FrozenLake, RAGEN's random-map slippery variant;
- ``frozen_lake_rules.py``: its pure rules: maps, moves, slips, the transition distribution;
- ``frozen_lake_oracle.py``: its exact planner for turns of open-loop action sequences;
- ``sokoban/``: Sokoban: rules, room generation, a solver, the env;
- ``webshop/``: WebShop: a bundled offline store, its server, and a client for a real WebShop server;
- ``draw_cache.py``: the rejection-sampling loop for content splits, remembering which draw a held-out seed
  accepted (shared with Bargain);
- ``arguments.py``: checks of constructor arguments, shared by the games and the agent wrapper;
- ``render.py``: tiny numpy drawing helpers for ``render_mode="rgb_array"`` pictures;
- ``contract.py``: ``check_game``, a game checked against docs/core-env-contract.md (what Gymnasium's checker does
  not test).
"""
