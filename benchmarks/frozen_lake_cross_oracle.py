"""How much the two FrozenLakes' best plans differ: each variant's oracle plans played on the other's ice.

The compact prompt once showed slippery and non-slippery FrozenLake identically; a model trained on both could not
tell which plan to follow. This measures what that costs: the optimal open-loop plan for one variant, replanned
every turn from the true position (2 actions a turn, 5 turns, RAGEN's budgets), executed under the other variant's
dynamics, on the same maps.

    python benchmarks/frozen_lake_cross_oracle.py --episodes 500

Recorded (seeds 0..499, docs/lab/2026-11-27-v1-summary-and-run-history.md, "The goals, where this stands"): no-slip ice
with no-slip plans 1.000, with slippery plans 0.304; slippery ice with slippery plans 0.464, with no-slip plans 0.212.
"""

from __future__ import annotations

import argparse

from agentgym_bench.envs.frozen_lake import FrozenLakeGame


def success_rate(dynamics_slippery: bool, plans_slippery: bool, seeds: range, *, per_turn: int = 2,
                 turns: int = 5) -> float:
    """Fraction of ``seeds`` whose episode reaches the goal when one variant's oracle plays the other's ice."""
    wins = 0
    for seed in seeds:
        game = FrozenLakeGame(is_slippery=dynamics_slippery)
        game.reset(seed=seed)
        planner = FrozenLakeGame(is_slippery=plans_slippery)
        planner.reset(seed=seed)  # the same map: the map depends on the seed only
        actions_left = turns * per_turn
        for turn in range(turns):
            planner.pos = game.pos
            for action in planner.oracle_turn(turns - turn, actions_left, per_turn):
                game.step(action)
                actions_left -= 1
                if game.terminated:
                    break
            if game.terminated:
                break
        wins += game.tile == "G"
    return wins / len(seeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=500, help="maps (seeds 0..N-1)")
    args = parser.parse_args()
    seeds = range(args.episodes)
    for dynamics in (False, True):
        for plans in (False, True):
            name = {True: "slippery", False: "no-slip"}
            print(f"{name[dynamics]} ice, {name[plans]} plans: {success_rate(dynamics, plans, seeds):.3f}")


if __name__ == "__main__":
    main()
