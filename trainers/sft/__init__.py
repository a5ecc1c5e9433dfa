"""The warm start, the second trainer: supervised imitation of the oracles (``agentgym-bench warmstart``, run by
``trainers.cli`` on the runtime's launcher, run folder and checkpoint rule, ``trainers/runtime/``), and the model it
starts from. It imports nothing of the RL trainer (``trainers/rl/``), which starts from the model made here.

- ``default_model.py``: ``agentgym-bench init-model``, the small local model (its word vocabulary read from every
  env) the warm start starts from when given no other;
- ``sft_config.py``: the warm start's config (``SFTConfig``); the bundled ``trainers/configs/warmstart-*.yaml`` are
  its recipes' stages;
- ``warmstart.py``: demonstrations, fine-tuning, evaluation.
"""
