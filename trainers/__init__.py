"""The reference trainers for LLM agents, one runtime under two: RL (StarPO, StarPO-S, GiGPO) and the warm start (SFT).

Four subpackages, each named for what it holds, and the command line over them:

- ``algos/``: the math, pure masked-tensor functions (advantages, losses, masked statistics; docs/trainers-math.md).
  Not called ``math``: a package of that name would shadow the standard library's ``math`` wherever ``trainers/``
  itself is on ``sys.path`` (``python trainers/cli.py`` puts it first, and numpy's ``import random`` then loads it).
- ``runtime/``: what both trainers run on: the one config loader, how processes start, torchrun/DDP, FSDP2, LoRA,
  checkpoints and the run folder's rule, the learning-rate schedules, metrics.
- ``rl/``: the RL trainer (docs/trainers.md): its config and presets, the loop (``trainers.rl.train.main``),
  rollouts, samples, the PPO update, dynamic sampling, asynchronous rollouts, ``compare-runs``.
- ``sft/``: the warm start, supervised imitation of the oracles: the small local model it starts from
  (``init-model``), its config, demonstrations, fine-tuning and evaluation.
- :mod:`trainers.cli`: the trainers' command line, ``agentgym-bench train`` and ``agentgym-bench warmstart`` (both
  run by one launcher into one kind of run folder); ``configs/``: the bundled YAML configs, RL's and the warm start's
  stages (``configs/warmstart-*.yaml``).

The layering rule, bottom to top: ``algos/`` < ``runtime/`` < ``rl/``, ``sft/`` (one floor) < ``cli.py``. A module
imports from its own subpackage and from those below it, never from one above; ``rl/`` and ``sft/`` never import each
other (what both need belongs in ``runtime/`` or ``algos/``); nothing imports ``cli.py``. All of ``trainers/`` sits
above ``agentgym_bench/``, which imports none of it (its command table names trainer modules by string). The floors
are ``scripts/code_shape.py``'s layer table (``TRAINERS_LAYERS``, ``TRAINERS_TOP_MODULE_LAYERS``, layers 8 to 11 above
the library's 0 to 7), and ``tests/test_code_map.py`` fails on an import against them (module level, inside a
function or under ``TYPE_CHECKING``) that its ``ALLOWED_IMPORTS`` does not list with a reason; it lists none in here.

This package's own ``__init__`` and its subpackages' import nothing: importing any trainer module loads them.
"""
