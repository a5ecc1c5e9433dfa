"""``agentgym-bench eval``: play a benchmark suite with a policy and write the results file.

Examples::

    agentgym-bench eval --policy oracle
    agentgym-bench eval --policy hf:warmstart --prompt compact --history 0 --out runs/warmstart.json.gz
    agentgym-bench eval --policy openai:my-model@http://127.0.0.1:8000/v1 --max-new-tokens 256
    agentgym-bench eval --suite agentgym-ma-v2 --policy scripted --out runs/scripted-ma.json.gz
    agentgym-bench eval --suite agentgym-ma-v2 --policy hf:warmstart --out runs/warmstart-ma.json.gz

On the two-player suites (agentgym-ma-v2, agentgym-ma-v2-validation) the policy plays Bargain against the suite's
opponents and itself; `random` and `scripted` are Bargain's model-free policies there, there is no `oracle`, and no
--prompt (the game writes its own text).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agentgym_bench.benchmark.evaluate import evaluate
from agentgym_bench.benchmark.matches import suite_policy
from agentgym_bench.benchmark.provenance import training_record
from agentgym_bench.benchmark.results import format_summary, summarize, write_results
from agentgym_bench.benchmark.suites import DEFAULT_SUITE, available_suites, load_suite
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.specs import SPEC_HELP, Sampling


def history_arg(text: str) -> int | None:
    if text == "full":
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not 'full' or an integer >= 0")
    return value


def prompt_arg(text: str) -> str | dict[str, str]:
    """``NAME`` for every entry, or ``ENTRY=NAME,ENTRY=NAME`` per entry."""
    if "=" not in text:
        return text
    pairs = [p.split("=", 1) for p in text.split(",") if p]
    return {k.strip(): v.strip() for k, v in pairs}


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("Examples::", 1)[1]
    parser.add_argument("--policy", required=True, metavar="SPEC",
                        help=f"who plays: {SPEC_HELP}; on two-player suites also scripted (no oracle)")
    parser.add_argument("--suite", default=DEFAULT_SUITE,
                        help=f"bundled suite ({', '.join(available_suites())}) or a suite file (default: %(default)s)")
    parser.add_argument("--out", default="results.json.gz", help="results file to write (default: %(default)s)")
    parser.add_argument("--prompt", type=prompt_arg, default=None, metavar="NAME|ENTRY=NAME,...",
                        help="prompt template, for every entry or per entry (default: each entry's first, 'ragen')")
    parser.add_argument("--history", type=history_arg, default=None, metavar="full|K",
                        help="past turns kept in the prompt: 'full' (default) or the last K (0: current state only)")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default: %(default)s)")
    parser.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling threshold (default: %(default)s)")
    parser.add_argument("--max-new-tokens", type=int, default=32, help="reply budget in tokens (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default: %(default)s)")
    parser.add_argument("--device", default="cpu", help="torch device of hf: models (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds per request attempt of openai: endpoints (default: %(default)s)")
    parser.add_argument("--max-concurrency", type=int, default=8,
                        help="requests in flight to an openai: endpoint (default: %(default)s)")
    parser.add_argument("--trained-by", metavar="FOLDER", default=None,
                        help="record how the model was trained: a trainer run folder (its config, cost and curves: "
                        "config.yaml, summary.json, metrics.jsonl) or a warm-start folder (warmstart.json)")
    parser.add_argument("--selection", metavar="TEXT", default=None,
                        help="with --trained-by: which checkpoint this is and how it was chosen, decided on "
                        "validation before reading the test suite (e.g. 'the final checkpoint of the recipe')")


def run(args: argparse.Namespace) -> int:
    if args.max_new_tokens < 1 or args.temperature < 0 or not 0 < args.top_p <= 1:
        raise UserError("need --max-new-tokens >= 1, --temperature >= 0 and 0 < --top-p <= 1")
    suite = load_suite(args.suite)
    trainer, training = training_record(args.trained_by) if args.trained_by else (None, None)
    if args.selection is not None:
        if trainer is None:
            raise UserError("--selection describes how the trained model was chosen: give --trained-by too")
        trainer["selection"] = args.selection
    sampling = Sampling(args.temperature, args.top_p, args.max_new_tokens, args.seed)
    policy, record = suite_policy(args.policy, suite, sampling, device=args.device, timeout=args.timeout,
                                  max_concurrency=args.max_concurrency)
    print(f"{args.policy} on {suite.name} v{suite.version}: {len(suite.entries)} entries, {suite.episodes} "
          f"{'matches' if suite.multiagent else 'episodes'}")
    results = evaluate(policy, suite, record, prompt=args.prompt, history=args.history, trainer=trainer,
                       training_compute=training, progress=True)
    path = write_results(results, Path(args.out))
    print(format_summary(summarize(results, suite)))
    compute = results.metadata["compute"]
    print(f"wrote {path} ({compute['episodes']} {'matches' if suite.multiagent else 'episodes'}, "
          f"{compute['env_steps']} turns, "
          f"{compute['wall_time_s']:.0f}s); submit it with: agentgym-bench submit {path} --name NAME")
    return 0
