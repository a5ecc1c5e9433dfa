"""How far an honest reply that another batch flipped lies from its keyed draw, against the verifier's tolerance.

Verification re-generates a model's replies in the evaluation's batches; on another machine (or in other batches)
the last bits of the logits differ and a sampled token can flip. Such a reply, and its episode's later replies, must
lie within ``regenerate.DRAW_TOLERANCE`` of the evaluation's keyed draws (``agentgym_bench/rollout/draws.py``). This
script emulates the other machine by re-generating a results file in chunks of ``--chunk`` moves instead of the
evaluation's batches, runs the verifier's own checks, and prints how many replies differed and the largest draw
distance among the replies scored, beside the tolerance.

    .venv/bin/agentgym-bench init-model --path runs/untrained --seed 0
    .venv/bin/agentgym-bench eval --policy hf:runs/untrained --suite agentgym-v2 --episodes 100 --prompt compact \\
        --history 0 --max-new-tokens 16 --out runs/untrained.json.gz
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/draw_distances.py runs/untrained.json.gz --chunk 1 --episodes 100
"""

from __future__ import annotations

import argparse
import time

from agentgym_bench.benchmark.suites import load_suite, quick_check
from agentgym_bench.leaderboard import regenerate
from agentgym_bench.leaderboard import verify as verifying
from agentgym_bench.rollout import draws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="a results file of an hf model")
    parser.add_argument("--chunk", type=int, default=1, help="moves per generate call (the evaluation's: all)")
    parser.add_argument("--suite", default="agentgym-v2")
    parser.add_argument("--episodes", type=int, default=None, help="the file's quick check (eval --episodes N)")
    args = parser.parse_args()

    evaluation_batches, draw_distances = regenerate.evaluation_batches, draws.draw_distances
    regenerate.evaluation_batches = lambda *a: [call[i:i + args.chunk] for call in evaluation_batches(*a)
                                                for i in range(0, len(call), args.chunk)]
    scored: list[float] = []

    def measured(*a, **k):
        out = draw_distances(*a, **k)
        scored.extend(d for d, _ in out)
        return out

    draws.draw_distances = measured
    suite = None
    if args.episodes is not None:  # a quick check is not for a board; verify it against its own suite
        verifying.check_submittable = lambda results: None
        suite = quick_check(load_suite(args.suite), args.episodes, None)[0]
    start = time.perf_counter()
    verified = verifying.verify(args.results, suite)
    print(f"{verified.mark} in {time.perf_counter() - start:.0f} s: {verified.regeneration[:160]}")
    print(f"replies scored (the differing ones and their episodes' later replies): {len(scored)}; largest draw "
          f"distance {max(scored, default=0.0):.2g}; tolerance {regenerate.DRAW_TOLERANCE:g}")


if __name__ == "__main__":
    main()
