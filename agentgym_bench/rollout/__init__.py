"""Rollouts: env groups, generation backends (policies), trajectories and their token view."""
