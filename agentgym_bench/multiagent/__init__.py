"""Multi-agent and TextArena games for LLM agents.

- :mod:`.textarena_game`: TextArena single-player games as core text envs for ``LLMAgentEnv``;
- :mod:`.registration`: their Gymnasium ids (only where ``textarena`` can be imported);
- :mod:`.textarena_aec`: TextArena's two-player games as PettingZoo AEC envs for LLM agents;
- :mod:`.textarena_bridge`: the one place that talks to TextArena;
- :mod:`.textarena_catalog`: which TextArena games run here, and why the others are left out;
- :mod:`.curate`: re-runs that curation;
- :mod:`.bargain`: ``BargainEnv``, our two-player negotiation game, as a PettingZoo env;
- :mod:`.bargain_rules`: Bargain's pure rules;
- :mod:`.seats`: what every multi-agent env here shares with the single-agent envs (reply parsing, spaces);
- :mod:`.selfplay`: matches that drive both seats with our batched policies, and their scores;
- :mod:`.terminal`: a person at the terminal in one seat (``agentgym-bench play Bargain-v1``).

Importing this package imports neither ``textarena`` (the ``multiagent`` extra) nor ``pettingzoo`` (which comes with
the package); the modules that need them import them.
"""
