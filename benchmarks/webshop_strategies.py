"""WebShop: what simple scripted shoppers score on validation goals, and what the oracle's episodes look like.

Two tables for choosing what a learned WebShop policy has to do (docs/lab/2026-11-22-webshop-imitation.md,
"WebShop: imitation does not learn to copy"):

1. Mean purchase reward and success (reward 1) of scripted shoppers on the first ``--goals`` validation goals:
   search a query (the instruction, the instruction without its options and price, the oracle's first query, or
   the product type alone), open the first hit, optionally click the options the instruction names, buy.
   No budget or format penalty: the store's session is driven directly.
2. The oracle's episodes (9 actions, one a turn) on the first ``--goals`` training and validation goals: which of its
   queries it searched, how often it turns a results page, at which position of the hits the bought product
   stood, and how many options it clicked.

    .venv/bin/python benchmarks/webshop_strategies.py [--goals 400]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Callable

from agentgym_bench.envs.webshop.catalog import load_catalog
from agentgym_bench.envs.webshop.first_hit import NAVIGATION, FirstHitShopper, named_options
from agentgym_bench.envs.webshop.oracle import OracleShopper, goal_queries
from agentgym_bench.envs.webshop.session import WebShopSession


def instruction(session: WebShopSession) -> str:
    """The whole instruction, lower case, punctuation dropped."""
    return re.sub(r"[^a-z0-9 '.&-]", " ", session.goal["instruction_text"].lower())[:200]


def instruction_without_options(session: WebShopSession) -> str:
    """The instruction up to its first option (" with color: ...") and without its price."""
    text = session.goal["instruction_text"].split(", and price lower than")[0].lower()
    if session.goal["goal_options"]:
        text = text.split(f" with {next(iter(session.goal['goal_options']))}:")[0]
    return re.sub(r"[^a-z0-9 '&-]", " ", text)[:200]


def first_hit(query: Callable[[WebShopSession], str], options: bool) -> Callable[[WebShopSession], float]:
    """Search ``query``, open the first hit, click each option value the instruction names (if ``options``), buy."""
    def shop(session: WebShopSession) -> float:
        session.step(f"search[{query(session)}]")
        hits = [c for c in session.available_actions()["clickables"] if c not in NAVIGATION]
        if not hits:
            return 0.0
        session.step(f"click[{hits[0]}]")
        if options:
            offered = session.catalog.products[session.product]["options"]
            for _, value in named_options(session.goal["instruction_text"], offered):
                session.step(f"click[{value}]")
        reward, _, _ = session.step("click[buy now]")
        return reward
    return shop


def oracle_episode(session: WebShopSession, budget: int = 9,
                   shopper: type[OracleShopper] | type[FirstHitShopper] = OracleShopper) -> tuple[float, list[str]]:
    """The episode of ``shopper`` (default: the oracle), one action a turn within ``budget`` actions:
    (reward, actions)."""
    oracle, actions, reward = shopper(session), [], 0.0
    while len(actions) < budget:
        step = oracle.next_actions(budget - len(actions), 1)
        if not step:
            break
        actions.append(step[0])
        reward, done, _ = session.step(step[0])
        if done:
            break
    return reward, actions


STRATEGIES = {
    "instruction, first hit, buy": first_hit(instruction, False),
    "instruction without options and price, first hit, buy": first_hit(instruction_without_options, False),
    "instruction without options and price, first hit, its options, buy": first_hit(instruction_without_options, True),
    "oracle's first query, first hit, buy": first_hit(lambda s: goal_queries(s.goal)[0], False),
    "oracle's first query, first hit, its options, buy": first_hit(lambda s: goal_queries(s.goal)[0], True),
    "product type alone, first hit, buy": first_hit(lambda s: goal_queries(s.goal)[-1], False),
    "product type alone, first hit, its options, buy": first_hit(lambda s: goal_queries(s.goal)[-1], True),
    "the first-hit shopper (the warm start's WebShop demonstrator: the instruction, first hit, its options, buy)":
        lambda s: oracle_episode(s, shopper=FirstHitShopper)[0],
    "oracle": lambda s: oracle_episode(s)[0],
}


def oracle_paths(session: WebShopSession, goals: range) -> dict[str, Counter]:
    """Counts over the oracle's episodes of ``goals``: searches, which query (index in ``goal_queries``), pages
    turned, position of the bought product among the hits, options clicked."""
    names = ("searches", "query", "pages turned", "hit position", "options clicked")
    counts: dict[str, Counter] = {name: Counter() for name in names}
    for goal in goals:
        session.reset(goal)
        queries = goal_queries(session.goal)
        _, actions = oracle_episode(session)
        searched = [a[len("search["):-1] for a in actions if a.startswith("search[")]
        counts["searches"][len(searched)] += 1
        counts["query"].update(queries.index(q) if q in queries else "other" for q in searched)
        counts["pages turned"][sum(a in ("click[next >]", "click[< prev]") for a in actions)] += 1
        if session.product >= 0:
            counts["hit position"][session.results.index(session.product)] += 1
        clicks = [a for a in actions if a.startswith("click[")]
        opened = next((i for i, a in enumerate(clicks) if a[6:-1] not in NAVIGATION), None)
        counts["options clicked"][0 if opened is None else len(clicks) - opened - 2] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--goals", type=int, default=400, help="goals of each split (from its first)")
    args = parser.parse_args()
    catalog = load_catalog()
    session = WebShopSession(catalog)
    low, _ = catalog.split_range("validation")
    last = args.goals - 1
    print(f"## Scripted shoppers on validation goals 0..{last} (stored goals {low}..{low + last})\n")
    print("| shopper | mean reward | success |\n|---|---:|---:|")
    for name, shop in STRATEGIES.items():
        rewards = []
        for goal in range(low, low + args.goals):
            session.reset(goal)
            rewards.append(shop(session))
        success = sum(r >= 1 - 1e-9 for r in rewards) / len(rewards)
        print(f"| {name} | {sum(rewards) / len(rewards):.3f} | {success:.3f} |")
    for split in ("train", "validation"):
        low, _ = catalog.split_range(split)
        counts = oracle_paths(session, range(low, low + args.goals))
        print(f"\n## The oracle's episodes on {split} goals 0..{last} (stored {low}..{low + last})\n")
        for name, counter in counts.items():
            total = sum(counter.values())
            ordered = sorted(counter.items(), key=lambda kv: (isinstance(kv[0], str), kv[0]))
            shares = ", ".join(f"{k}: {v / total:.1%}" for k, v in ordered)
            print(f"- {name}: {shares}")


if __name__ == "__main__":
    main()
