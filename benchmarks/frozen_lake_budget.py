"""What RAGEN's actions-per-turn protocol does to slippery FrozenLake's ceiling: the oracle and a random agent under
each setting of (actions a turn, turns, actions an episode).

RAGEN (arXiv 2504.20073, Table 3) varies the most actions a turn k with an episode budget of 5k actions over 5 turns,
so k and the budget move together. On slippery ice a slip wastes a move, so the budget alone moves the ceiling; the
rows with a budget of 10 hold it fixed. Played through ``EnvGroups`` with the compact prompt on the validation seeds
0..N-1, as the training runs' validation (docs/lab/2026-11-23-ragen-group-size-actions-per-turn.md).

    python benchmarks/frozen_lake_budget.py --episodes 1024

Recorded (seeds 0..1023; oracle / random, one valid action a turn): k 1, 5 turns, 5 actions 0.298 / 0.167;
k 2, 5, 10: 0.473 / 0.199; k 5, 5, 25: 0.650 / 0.256; k 1, 10 turns, 10: 0.480 / 0.229; k 5, 5, 10 (the default):
0.472 / 0.214.
"""

from __future__ import annotations

import argparse

from agentgym_bench import stats
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.scripted import OraclePolicy, RandomPolicy
from agentgym_bench.seeds import VALIDATION_SEED_START

SETTINGS = ((1, 5, 5), (2, 5, 10), (5, 5, 25), (1, 10, 10), (5, 5, 10))
"""(most actions a turn, turns, actions an episode): RAGEN's k = 1, 2, 5 (budget 5k), then the budget held at 10."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1024, help="validation seeds 0..N-1 (default: %(default)s)")
    parser.add_argument("--env", default="AgentFrozenLake-v0", help="env id (default: %(default)s)")
    args = parser.parse_args(argv)
    print("| actions a turn | turns | actions an episode | oracle | random (1 action a turn) |")
    print("|---|---|---|---|---|")
    for per_turn, turns, budget in SETTINGS:
        kwargs = {"prompt": "compact", "max_turns": turns, "max_actions_per_turn": per_turn,
                  "max_actions_per_episode": budget}
        cells = []
        for policy in (OraclePolicy(), RandomPolicy(0)):
            with EnvGroups([args.env], [args.episodes], 1, seed=VALIDATION_SEED_START, fixed_seeds=True,
                           env_kwargs=kwargs) as groups:
                played = groups.rollout(policy, keyed=True)
            rate = stats.success_rate([t.success for t in played])
            cells.append(f"{rate.rate:.3f} [{rate.low:.3f}, {rate.high:.3f}]")
        print(f"| {per_turn} | {turns} | {budget} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
