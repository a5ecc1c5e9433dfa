"""Reference RL trainers for LLM agents: StarPO, StarPO-S and GiGPO.

The math is pure masked-tensor functions, shared by every trainer and documented in docs/trainers-math.md:

- ``trainers.advantages``: group-normalised returns (GRPO/StarPO), GAE over generated tokens, the StarPO-S
  group filter, discounted step returns, GiGPO two-level advantages, per-turn -> per-token broadcast.
- ``trainers.losses``: PPO clipped policy loss (clip-higher, dual clip), clipped value loss, ``agg_loss``,
  entropy and log-probs from logits, KL estimators.
- ``trainers.masked``: masked mean / variance / whitening, explained variance.

The loop (docs/trainers.md) is ``trainers.train.main(config)``, run by ``trainers.cli`` (``agentgym-bench train``):
``trainers.config`` (the typed config, YAML, overrides) and ``trainers.presets`` (StarPO, StarPO-S, GiGPO),
``trainers.rollouts`` (generation backends, playing and evaluating; env groups and seeds are the rollout engine's),
``trainers.samples`` (trajectories -> training rows), ``trainers.ppo`` (scoring, advantages, the PPO update),
``trainers.metrics`` (JSON lines, Echo Trap rule, plots), ``trainers.checkpoint``, ``trainers.distributed``
(torchrun/DDP).

The model RL starts from is made here too: ``trainers.default_model`` (``agentgym-bench init-model``: the small local
model) and ``trainers.warmstart`` (``agentgym-bench warmstart``: supervised imitation of the oracles).
"""
