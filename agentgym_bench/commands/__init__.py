"""The ``agentgym-bench`` subcommands that belong to no lower layer, one module each (``agentgym_bench.cli`` lists
every command; ``init-model``, ``warmstart``, ``train`` and ``compare-runs`` are in ``trainers``, ``webshop-serve``
in ``agentgym_bench.envs.webshop.server``). A command module parses its arguments and calls the library; what
library logic some still hold, and where it should go, ``tests/test_code_map.py`` lists (``COMMAND_LOGIC``).

- ``envs.py``: ``envs``, the registered env ids;
- ``play.py``: ``play``, an agent env in the terminal;
- ``demo.py``: ``demo``, the oracle and a random agent on every env, with scores;
- ``eval.py``: ``eval``, a suite played by a policy into a results file;
- ``compare_results.py``: ``compare-results``, results files of one suite paired on the same seeds;
- ``submit.py``: ``submit``, a results file verified and put on a board;
- ``board.py``: ``board``, a board re-rendered from its stored submissions;
- ``reproduce.py``: ``reproduce``, a submission re-run from its metadata or from other weights;
- ``publish_model.py``: ``publish-model``, a model's weights (bfloat16) beside a board;
- ``baselines.py``: ``baselines``, the main job: every reference baseline evaluated and put on a board;
- ``serve.py``: ``serve``, a local model behind an OpenAI-compatible server (the server itself:
  :mod:`agentgym_bench.serving.chat`);
- ``openenv_serve.py``: ``openenv-serve``, the agent envs as OpenEnv environments.
"""
