"""The trainers' math: pure masked-tensor functions (tensors in, tensors out; no config, no logging, no ``.item()``),
each a formula of docs/trainers-math.md. The bottom floor of ``trainers/``: it imports no other trainer module.

- ``advantages.py``: group-normalised returns (GRPO/StarPO), GAE over generated tokens, the StarPO-S group filter,
  discounted step returns, GiGPO two-level advantages, per-turn -> per-token broadcast.
- ``losses.py``: PPO clipped policy loss (clip-higher, dual clip), clipped value loss, ``agg_loss``, entropy and
  log-probs from logits, KL estimators.
- ``masked.py``: masked mean / variance / whitening, explained variance.
"""
