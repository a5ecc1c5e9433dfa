"""The reference trainers for LLM agents, one runtime under two: RL (StarPO, StarPO-S, GiGPO) and the warm start (SFT).

The math is pure masked-tensor functions, shared by every trainer and documented in docs/trainers-math.md:

- ``trainers.advantages``: group-normalised returns (GRPO/StarPO), GAE over generated tokens, the StarPO-S
  group filter, discounted step returns, GiGPO two-level advantages, per-turn -> per-token broadcast.
- ``trainers.losses``: PPO clipped policy loss (clip-higher, dual clip), clipped value loss, ``agg_loss``,
  entropy and log-probs from logits, KL estimators.
- ``trainers.masked``: masked mean / variance / whitening, explained variance.

The loop (docs/trainers.md) is ``trainers.train.main(config)``, run by ``trainers.cli`` (``agentgym-bench train`` and
``agentgym-bench warmstart``):

- ``trainers.config``: the typed config; ``trainers.config_loading``: YAML files and ``key=value`` overrides into
  a config dataclass (both trainers' one loader); ``trainers.presets``: StarPO, StarPO-S, GiGPO as overrides;
- ``trainers.rollouts``: generation backends, playing and evaluating (env groups and seeds are the rollout engine's);
- ``trainers.matches``: two-player rollouts (``MatchGroups``);
- ``trainers.dynamic_sampling``: signal-aware sampling, a rollout pool whose env groups are kept by reward variance;
- ``trainers.async_rollout``: asynchronous rollouts with bounded staleness;
- ``trainers.samples``: trajectories -> training rows;
- ``trainers.ppo``: scoring, advantages, the PPO update;
- ``trainers.schedule``: the learning-rate schedules;
- ``trainers.metrics``: JSON lines, the Echo Trap rule, plots;
- ``trainers.checkpoint``: checkpoints a killed run resumes from;
- ``trainers.distributed``: torchrun/DDP; ``trainers.fsdp``: the sharded strategy (FSDP2); ``trainers.lora``: LoRA
  through peft;
- ``trainers.launch``: how both trainers' processes start (one, torchrun's, or the warm start's own ``processes``).

Beside the loop: ``trainers.compare`` (``agentgym-bench compare-runs``: is one training setting better than another,
over several training seeds). The model RL starts from is made here too: ``trainers.default_model``
(``agentgym-bench init-model``: the small local model) and the second trainer, the warm start (supervised imitation of
the oracles, ``agentgym-bench warmstart``, also run by ``trainers.cli``, on the same launcher, run folder and
checkpoint rule): ``trainers.warmstart`` (demonstrations, fine-tuning, evaluation) and ``trainers.sft_config`` (its
config, the bundled ``configs/warmstart-*.yaml`` its recipes' stages).
"""
