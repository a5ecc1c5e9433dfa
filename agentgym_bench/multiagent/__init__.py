"""Multi-agent and TextArena games for LLM agents.

- TextArena single-player games as Gymnasium agent envs (:mod:`.textarena_game`, ids in :mod:`.registration`).
- Two-player games as PettingZoo envs with LLM-agent semantics: TextArena's (:mod:`.textarena_aec`) and our own
  negotiation game (:mod:`.bargain`).
- Rollouts that drive both seats with our batched policies (:mod:`.selfplay`).

Importing this package imports neither ``textarena`` nor ``pettingzoo`` (both in the ``multiagent`` extra); the
modules that need them import them.
"""
