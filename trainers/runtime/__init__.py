"""What both trainers run on (the RL trainer, ``trainers/rl/``, and the warm start, ``trainers/sft/``): above the
math (``trainers/algos/``), below the trainers; it imports neither trainer.

- ``config_loading.py``: YAML files and ``key=value`` overrides into a config dataclass, both trainers' one loader,
  and ``ConfigError``;
- ``launch.py``: how both trainers' processes start (one, torchrun's, or the warm start's own ``processes``);
- ``distributed.py``: torchrun/DDP; ``fsdp.py``: the sharded strategy (FSDP2); ``lora.py``: LoRA through peft;
- ``checkpoint.py``: checkpoints a killed run resumes from, both trainers' (the run folder's rule);
- ``schedule.py``: the learning-rate schedules of both;
- ``compute_dtype.py``: ``dtype: auto``, the compute dtype chosen by a probe at the start and recorded;
- ``metrics.py``: JSON lines, the Echo Trap rule, plots, the paired success gain.
"""
