"""The output head on the positions that need it, against every position: the RL update and generation.

- Update: the main job's StarPO step (``baseline-starpo``: one reference scoring pass, then ``ppo_update``, one epoch
  of mini-batches of 128 rows) on the rows of one rollout of its env mix (8 groups x 16, compact prompts, history
  0: one row per turn). "previous" is ``trainers.rl.ppo.token_logprobs`` as it was before the head ran on reply
  positions only (:func:`previous_token_logprobs`: logits on every position, then the mask); "new" is the code as it
  is. Update tokens/s = the rows' tokens (attention mask) per second of ``ppo_update``, the fastest of
  ``--repeats`` updates in a subprocess (the first one's metrics are compared between the sides).
- Generation: the main job's validation rollout (``EnvGroups.validation``: 256 episodes of each of the four envs
  played whole, up to 1024 conversations a generation call, keyed sampling at temperature 1, 16-token replies).
  "previous" computes the prompt's logits on every position (``HFPolicy.logits_argument = None``), "new" on the
  last one only (``logits_to_keep``). Both must give the same replies (checked by a digest). Generation tokens/s =
  generated tokens per second of the rollout.

The rows are a noisy oracle's (epsilon 0, the warm start's demonstrations) in the default model's tokens, so they
have the lengths a warm-started model's rows have; the weights are the untrained default model's (compute does not
depend on them), whose replies run to the 16-token budget. Each (part, side, round) runs in its own subprocess on
``--threads`` torch threads, so its peak resident memory (``ru_maxrss``) is its own; rounds alternate the sides.
Results: benchmarks/head_positions.md.

    .venv/bin/python benchmarks/head_positions.py [--model DIR] [--rounds 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIDES = ("previous", "new")
MIX = ("AgentSokoban-v0", "AgentFrozenLake-v0", "AgentFrozenLakeNoSlip-v0", "AgentBandit-v0")


def previous_token_logprobs(model, input_ids, attention_mask, temperature, with_entropy, mask):
    """``trainers.rl.ppo.token_logprobs`` before this change: the head on every position, the softmax on the masked
    ones."""
    import torch

    from trainers.algos.losses import entropy_from_logits, logprobs_from_logits

    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
    logits, targets = logits[mask].float(), input_ids[:, 1:][mask]
    if temperature != 1:
        logits = logits / temperature
    logprob = logprobs_from_logits(logits, targets)
    full = torch.zeros(mask.shape, dtype=logprob.dtype)
    entropy = torch.zeros_like(full).masked_scatter(mask, entropy_from_logits(logits)) if with_entropy else None
    return full.masked_scatter(mask, logprob), entropy


def rss_mb() -> float:
    """Resident memory now (``/proc/self/statm``), MB."""
    import os

    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def update_worker(args: argparse.Namespace) -> dict:
    import numpy as np
    import torch

    import trainers.rl.ppo
    from agentgym_bench.rollout.engine import EnvGroups
    from agentgym_bench.rollout.scripted import NoisyOraclePolicy
    from trainers.rl.config import load_config
    from trainers.rl.models import load_models, make_optimizers
    from trainers.rl.samples import adjust_batch
    from trainers.rl.train import build_samples
    from trainers.runtime.config_loading import resolve_config
    from trainers.runtime.distributed import Dist

    if args.side == "previous":
        trainers.rl.ppo.token_logprobs = previous_token_logprobs
    cpu = Dist(0, 1, torch.device("cpu"))
    config = load_config(resolve_config("baseline-starpo"), {"pretrain": args.model})
    models = load_models(config, cpu)
    optimizers, _ = make_optimizers(config, models)
    train = config.train_env_manager
    groups = EnvGroups(train.tags, train.num_groups_partition, train.group_size, env_kwargs=train.env_kwargs)
    trajectories = groups.rollout(NoisyOraclePolicy(0.0, seed=0), history=train.history_length)
    samples = build_samples(config, trajectories, models.tokenizer, None)
    mini = config.ppo_mini_batch_size
    index, _, _ = adjust_batch(len(samples), mini, config.batch_adjust_mode, np.random.default_rng(0))
    samples = samples.select(torch.as_tensor(index))  # a whole number of mini-batches, as the loop makes it

    def step(rows):
        scored = trainers.rl.ppo.score_samples(config, models, rows, cpu, old_logprob=False)
        scored["old_logprob"] = scored["ref_logprob"]  # the sampler's, at the reference's weights (first step)
        batch, _ = trainers.rl.ppo.compute_advantages(config, rows, scored)
        return batch

    warm = samples.select(torch.arange(mini))
    trainers.rl.ppo.ppo_update(config, models, optimizers, step(warm), cpu, np.random.default_rng(0))  # warm-up
    before = rss_mb()
    score_s, update_s, metrics = [], [], None
    for _ in range(args.repeats):
        start = time.perf_counter()
        batch = step(samples)
        score_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        update = trainers.rl.ppo.ppo_update(config, models, optimizers, batch, cpu, np.random.default_rng(0))
        update_s.append(time.perf_counter() - start)
        metrics = metrics or update  # the first update's, from the same weights on both sides
    return {"rows": len(samples), "tokens": int(samples.attention_mask.sum()),
            "reply_tokens": int(samples.loss_mask.sum()), "score_s": min(score_s), "update_s": min(update_s),
            "rss_before_mb": before, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "metrics": {k: metrics[k] for k in ("loss/policy", "loss/entropy", "loss/grad_norm", "loss/approx_kl")}}


def generation_worker(args: argparse.Namespace) -> dict:
    from agentgym_bench.rollout.engine import EnvGroups
    from agentgym_bench.rollout.hf import HFPolicy

    policy = HFPolicy.from_pretrained(args.model, temperature=1.0, max_new_tokens=16, seed=0)
    if args.side == "previous":
        policy.logits_argument = None
    kwargs = {"env_kwargs": {"prompt": "compact"}}
    EnvGroups.validation(MIX, [8] * len(MIX), **kwargs).rollout(policy, history=0, keyed=True)  # warm-up
    groups = EnvGroups.validation(MIX, [args.episodes] * len(MIX), **kwargs)
    before = rss_mb()
    start = time.perf_counter()
    trajectories = groups.rollout(policy, history=0, keyed=True)
    wall = time.perf_counter() - start
    replies = [[u.token_ids for u in t.turns] for t in trajectories]
    return {"turns": sum(len(t.turns) for t in trajectories), "tokens": sum(len(r) for t in replies for r in t),
            "wall": wall, "rss_before_mb": before,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "digest": hashlib.sha256(json.dumps(replies).encode()).hexdigest()}


def span(values: list[float]) -> str:
    return f"**{statistics.median(values):.2f}x** ({min(values):.2f}-{max(values):.2f})"


def peaks(rows: list[dict]) -> str:
    values = [x["peak_rss_mb"] for x in rows]
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def report_update(rows: dict[str, list[dict]]) -> None:
    new, old = rows["new"], rows["previous"]
    first = new[0]
    print(f"\nUpdate: {first['rows']} rows, {first['tokens']} tokens, {first['reply_tokens']} reply tokens "
          f"({first['reply_tokens'] / first['tokens']:.1%})")
    print("| side | update tokens/s (median) | scoring tokens/s (median) | RSS before MB "
          "| peak RSS MB (median, range) |")
    print("|---|---|---|---|---|")
    for side in SIDES:
        r = rows[side]
        update = statistics.median(x["tokens"] / x["update_s"] for x in r)
        score = statistics.median(x["tokens"] / x["score_s"] for x in r)
        print(f"| {side} | {update:.0f} | {score:.0f} | {statistics.median(x['rss_before_mb'] for x in r):.0f} | "
              f"{peaks(r)} |")
    pairs = list(zip(old, new, strict=True))
    print(f"new / previous, side by side per round: update {span([o['update_s'] / n['update_s'] for o, n in pairs])}, "
          f"scoring {span([o['score_s'] / n['score_s'] for o, n in pairs])}")
    differences = [abs(n["metrics"][k] - o["metrics"][k]) / max(abs(o["metrics"][k]), 1e-12)
                   for o, n in pairs for k in o["metrics"]]
    print(f"largest relative difference of the update's metrics (policy loss, entropy, grad norm, approx KL): "
          f"{max(differences):.1e}")


def report_generation(rows: dict[str, list[dict]]) -> None:
    new, old = rows["new"], rows["previous"]
    first = new[0]
    print(f"\nGeneration: {first['turns']} turns, {first['tokens']} generated tokens")
    print("| side | generated tokens/s (median) | RSS before MB | peak RSS MB (median, range) |")
    print("|---|---|---|---|")
    for side in SIDES:
        r = rows[side]
        print(f"| {side} | {statistics.median(x['tokens'] / x['wall'] for x in r):.0f} | "
              f"{statistics.median(x['rss_before_mb'] for x in r):.0f} | {peaks(r)} |")
    print(f"new / previous, side by side per round: "
          f"{span([o['wall'] / n['wall'] for o, n in zip(old, new, strict=True)])}")
    same = {x["digest"] for x in new + old} == {first["digest"]}
    print(f"identical replies on both sides: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="model folder (default: a freshly built default model)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per part (default: 5)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument("--episodes", type=int, default=256, help="validation episodes per env (default: 256)")
    parser.add_argument("--repeats", type=int, default=3, help="timed updates per update worker, the fastest "
                        "kept (default: 3)")
    parser.add_argument("--parts", nargs="+", choices=["update", "generation"], default=["update", "generation"])
    parser.add_argument("--worker", choices=["update", "generation"], default=None, help=argparse.SUPPRESS)
    parser.add_argument("--side", choices=SIDES, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        import torch

        import agentgym_bench  # noqa: F401  (registers the envs)

        torch.set_num_threads(args.threads)
        print(json.dumps((update_worker if args.worker == "update" else generation_worker)(args)))
        return
    if args.model is None:
        from trainers.sft.default_model import build_default_model

        args.model = str(build_default_model(Path(tempfile.mkdtemp()) / "default"))
    print(f"model {args.model}; {args.rounds} rounds; {args.threads} thread(s)")
    for part in args.parts:
        rows: dict[str, list[dict]] = {side: [] for side in SIDES}
        for k in range(args.rounds):
            for side in SIDES if k % 2 == 0 else SIDES[::-1]:
                command = [sys.executable, __file__, "--worker", part, "--side", side, "--model", args.model,
                           "--threads", str(args.threads), "--episodes", str(args.episodes),
                           "--repeats", str(args.repeats)]
                out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
                row = json.loads(out.strip().splitlines()[-1])
                rows[side].append(row)
                seconds = row["update_s"] if part == "update" else row["wall"]
                print(f"  {part} {side}: {row['tokens'] / seconds:.0f} tokens/s, peak {row['peak_rss_mb']:.0f} MB",
                      flush=True)
        (report_update if part == "update" else report_generation)(rows)


if __name__ == "__main__":
    main()
