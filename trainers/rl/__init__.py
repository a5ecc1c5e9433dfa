"""The RL trainer: StarPO, StarPO-S and GiGPO (docs/trainers.md). The loop is ``trainers.rl.train.main(config)``,
run by ``trainers.cli`` (``agentgym-bench train``); it runs on ``trainers/runtime/`` and ``trainers/algos/`` and
imports nothing of the warm start (``trainers/sft/``).

- ``config.py``: the typed config (its field docstrings are the documentation); ``presets.py``: StarPO, StarPO-S,
  GiGPO as overrides;
- ``train.py``: the loop: the train step, run set-up and end; ``models.py``: the networks of a run (actor, critic,
  reference) loaded as the config says, and their optimisers;
- ``rollouts.py``: generation backends, playing and evaluating (env groups and seeds are the rollout engine's);
- ``matches.py``: two-player rollouts (``MatchGroups``);
- ``dynamic_sampling.py``: signal-aware sampling, a rollout pool whose env groups are kept by reward variance;
- ``async_rollout.py``: asynchronous rollouts with bounded staleness;
- ``samples.py``: trajectories -> training rows; ``shaping.py``: the progress reward (``train_reward: progress``),
  Sokoban turns credited with their moves toward a solution;
- ``ppo.py``: scoring, advantages, the PPO update;
- ``compare.py``: ``agentgym-bench compare-runs``, is one training setting better than another, over several
  training seeds (it reads the per-episode validation successes ``train.py`` writes in ``summary.json``).
"""
