"""``agentgym-bench reproduce``: re-run a leaderboard submission from its recorded metadata and say, per suite entry,
whether the new success rate agrees with the recorded one.

Examples::

    agentgym-bench reproduce random                      a submission of leaderboards/agentgym-v1 by name or slug
    agentgym-bench reproduce "my model" --board runs/board
    agentgym-bench reproduce api-model --endpoint http://127.0.0.1:8000/v1      openai: submissions need the URL

The policy is rebuilt from the recorded kind and model (``oracle``, ``random``, ``scripted``, ``hf:MODEL``,
``vllm:MODEL``, ``openai:MODEL@ENDPOINT``), with the recorded sampling settings and seed, history window and
per-entry prompts, and plays the same seeds. Per entry the two runs are compared on the same seeds with the paired
difference of what the score averages (success; on a two-player board the policy's payoff per match) (new -
recorded, 95% paired bootstrap interval, McNemar's exact test for success): they *agree* if the interval holds 0.
The exit code is 0 if every entry agrees, 1 otherwise.

    agentgym-bench reproduce scripted --board leaderboards/agentgym-ma-v1     a two-player board
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from agentgym_bench.benchmark import stats
from agentgym_bench.benchmark.evaluate import evaluate
from agentgym_bench.benchmark.matches import suite_policy
from agentgym_bench.benchmark.results import Results, loads
from agentgym_bench.benchmark.suites import DEFAULT_SUITE, Suite, parse_suite
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.board import read_index, slugify
from agentgym_bench.rollout.specs import Sampling, local_model_path


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("Examples::", 1)[1]
    parser.add_argument("entry", help="the submission's name or slug")
    parser.add_argument("--board", default=str(Path("leaderboards") / DEFAULT_SUITE),
                        help="board folder (default: %(default)s)")
    parser.add_argument("--endpoint", default=None, help="base URL of the OpenAI-compatible endpoint (openai: only)")
    parser.add_argument("--device", default="cpu", help="torch device of hf: models (default: %(default)s)")


def spec_of(policy: dict[str, Any], endpoint: str | None) -> str:
    """The policy spec that re-creates a recorded ``metadata.policy``."""
    kind, model = policy["kind"], policy["model"]
    if kind in ("oracle", "random", "scripted"):
        return kind
    if kind == "openai":
        if not endpoint:
            raise UserError(f"the submission played model {model!r} behind an OpenAI-compatible endpoint; pass its "
                            "base URL with --endpoint")
        return f"openai:{model}@{endpoint}"
    if local_model_path(model) is None:
        raise UserError(f"the submission's model {model!r} is not on this machine; reproduce needs it")
    return f"{kind}:{model}"


def agreement(suite: Suite, recorded: Results, new: Results) -> list[dict[str, Any]]:
    """Per suite entry: the recorded and new means of what the score averages (success rates with Wilson intervals;
    a match entry's mean payoffs with normal intervals, as ``(mean, low, high)``), the paired difference
    ``new - recorded`` on the same seeds and whether its interval holds 0 (``agrees``), and how many episodes replied
    identically."""
    rows = []
    for e in suite.entries:
        old_eps = sorted(recorded.entry(e.name).episodes, key=lambda ep: ep.seed)
        new_eps = sorted(new.entry(e.name).episodes, key=lambda ep: ep.seed)
        value = (lambda ep: ep.return_) if e.opponent is not None else (lambda ep: float(ep.success))
        x, y = [value(ep) for ep in old_eps], [value(ep) for ep in new_eps]
        c = stats.paired_difference(x, y)
        same = sum([t.reply for t in a.turns] == [t.reply for t in b.turns] for a, b in zip(old_eps, new_eps,
                                                                                           strict=True))
        mean = stats.mean_interval if e.opponent is not None else _rate
        rows.append({"entry": e.name, "recorded": mean(x), "new": mean(y),
                     "comparison": c, "agrees": c.low <= 0 <= c.high, "identical": same, "n": len(x)})
    return rows


def _rate(outcomes: list[float]) -> tuple[float, float, float]:
    r = stats.success_rate(outcomes)
    return r.rate, r.low, r.high


def run(args: argparse.Namespace) -> int:
    board = Path(args.board)
    index = read_index(board)
    if index is None:
        raise UserError(f"{board} holds no board ({board / 'board.json'} is missing)")
    record = next((r for r in index["submissions"] if args.entry in (r["name"], r["slug"])
                   or slugify(args.entry) == r["slug"]), None)
    if record is None:
        raise UserError(f"board {board} has no submission {args.entry!r}; it has "
                        f"{[r['name'] for r in index['submissions']]}")
    suite = parse_suite(index["suite"])
    recorded = loads((board / "submissions" / f"{record['slug']}.json.gz").read_bytes())
    policy_record = recorded.metadata["policy"]
    s = policy_record["sampling"]
    sampling = Sampling(s["temperature"], s["top_p"], s["max_new_tokens"], s["seed"])
    spec = spec_of(policy_record, args.endpoint)
    policy, new_record = suite_policy(spec, suite, sampling, device=args.device)
    if policy_record["model_sha256"] and new_record["model_sha256"] != policy_record["model_sha256"]:
        print(f"warning: the weights of {policy_record['model']} differ from those recorded (model_sha256)")
    prompts = None if suite.multiagent else {e.name: e.prompt for e in recorded.entries}
    print(f"reproducing {record['name']!r} ({spec}, history {policy_record['history']}) on {suite.name} "
          f"v{suite.version}: {suite.episodes} episodes")
    new = evaluate(policy, suite, new_record, prompt=prompts, history=policy_record["history"], progress=True)
    rows = agreement(suite, recorded, new)
    width = max(len(r["entry"]) for r in rows)
    what = "payoff" if suite.multiagent else "success"
    print(f"{what}: recorded and new on the same seeds")
    print(f"{'entry':<{width}}  {'recorded [95% CI]':<22}  {'new [95% CI]':<22}  {'new - recorded [95% CI]':<26}  "
          f"{'McNemar p':>9}  {'same replies':>12}  verdict")
    for r in rows:
        (old, old_low, old_high), (new_mean, new_low, new_high), c = r["recorded"], r["new"], r["comparison"]
        print(f"{r['entry']:<{width}}  {old:.3f} [{old_low:.3f}, {old_high:.3f}]    "
              f"{new_mean:.3f} [{new_low:.3f}, {new_high:.3f}]    "
              f"{c.difference:+.3f} [{c.low:+.3f}, {c.high:+.3f}]      {c.p_value:>9.4f}  "
              f"{r['identical']:>5}/{r['n']:<6}  {'agrees' if r['agrees'] else 'DIFFERS'}")
    agreeing = sum(r["agrees"] for r in rows)
    print(f"{agreeing} of {len(rows)} entries agree with the recorded numbers")
    return 0 if agreeing == len(rows) else 1
