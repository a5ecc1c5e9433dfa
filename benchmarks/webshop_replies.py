"""WebShop: what a model's replies did, read from ``agentgym-bench eval`` results files.

For each file (an eval of a WebShop entry, ``--out FILE``): successes, mean return, how many ``click[...]`` actions
executed (named something on the page), split into product codes and the rest (options, buttons), how the episodes
ended (bought; opened a product but never bought; never opened one) and what share of the words the model searched
are words of the oracle's first query on the same goal — the columns of the tables of WebShop
imitation runs in docs/lab/2026-11-22-webshop-imitation.md ("WebShop: imitation does not learn to copy").

    .venv/bin/python benchmarks/webshop_replies.py RESULTS.json.gz [MORE.json.gz ...]
"""

from __future__ import annotations

import argparse
import re

import gymnasium as gym

import agentgym_bench  # noqa: F401  (registers the envs)
from agentgym_bench.agent.policies import oracle_reply
from agentgym_bench.benchmark.results import read_results
from agentgym_bench.envs.webshop.augment import CODE

CODE_CLICK = re.compile(rf"click\[{CODE.pattern}\]")


def read(path: str) -> dict:
    """The counts of one results file's WebShop entry (its first entry whose env id names WebShop)."""
    entry = next((e for e in read_results(path).entries if "WebShop" in e.env_id), None)
    if entry is None:
        raise SystemExit(f"{path}: no WebShop entry")
    env = gym.make(entry.env_id, **{**entry.env_kwargs, "prompt": "compact"})
    counts = dict(episodes=0, successes=0, total_return=0.0, clicks=0, executed=0, code_clicks=0, codes_executed=0,
                  bought=0, opened=0, words=0, oracle_words=0)
    for episode in entry.episodes:
        counts["episodes"] += 1
        counts["successes"] += episode.success
        counts["total_return"] += episode.return_
        env.reset(seed=episode.seed)
        query = set(re.search(r"search\[(.*?)\]", oracle_reply(env)).group(1).split())
        executed = [a for turn in episode.turns for a in turn.executed_actions]
        counts["bought"] += "click[buy now]" in executed
        counts["opened"] += any(CODE_CLICK.fullmatch(a) for a in executed)
        for turn in episode.turns:
            for action in turn.actions:
                if action.startswith("click["):
                    counts["clicks"] += 1
                    counts["executed"] += action in turn.executed_actions
                    if CODE_CLICK.fullmatch(action):
                        counts["code_clicks"] += 1
                        counts["codes_executed"] += action in turn.executed_actions
                elif action.startswith("search[") and action.endswith("]"):
                    words = action[len("search["):-1].split()
                    counts["words"] += len(words)
                    counts["oracle_words"] += sum(w in query for w in words)
    env.close()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="results files of agentgym-bench eval on a WebShop entry")
    args = parser.parse_args()
    print("| results | success | mean return | `click[...]` that executed: codes / others | episodes: bought / "
          "opened a product, not bought / never opened one | search words in the oracle's query |")
    print("|---|---:|---:|---:|---:|---:|")
    for path in args.results:
        c = read(path)
        others, others_executed = c["clicks"] - c["code_clicks"], c["executed"] - c["codes_executed"]
        print(f"| {path} | {c['successes']}/{c['episodes']} | {c['total_return'] / c['episodes']:.3f} | "
              f"{c['codes_executed']} of {c['code_clicks']} / {others_executed} of {others} | "
              f"{c['bought']} / {c['opened'] - c['bought']} / {c['episodes'] - c['opened']} | "
              f"{c['oracle_words'] / max(1, c['words']):.0%} |")


if __name__ == "__main__":
    main()
