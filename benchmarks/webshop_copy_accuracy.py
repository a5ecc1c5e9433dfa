"""Does a model copy on WebShop? Teacher-forced accuracy on the strings the first-hit shopper copies.

On validation goals 0..N-1 the first-hit shopper (``agentgym_bench/envs/webshop/first_hit.py``) plays its first two
turns: ``search[<the instruction>]`` on the search page and ``click[<the first code>]`` on the results page. For
each, the model reads the prompt (compact template, history 0, as the warm start trains) and the shopper's reply,
and this counts how often its most likely next token is the reply's token:

- search: the instruction's words in ``search[...]`` (the space tokens between them left out: they are free);
- code: the eight characters after ``b0`` of the clicked product code (chance 1/36).

A model that copies scores near 1 on both; one that writes from memory scores what the instructions' common
words and the codes' form allow. Sampling at temperature 1 (the benchmark's evaluation) does worse than the argmax
read here, and one wrong word early changes what follows.

    .venv/bin/python benchmarks/webshop_copy_accuracy.py MODEL [MODEL ...] [--goals 30]
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import torch

import agentgym_bench  # noqa: F401  (registers the envs)
from agentgym_bench.agent.parsing import format_reply
from agentgym_bench.rollout.hf import load_model
from agentgym_bench.rollout.tokens import encode, render
from agentgym_bench.rollout.trajectory import build_messages
from agentgym_bench.seeds import VALIDATION_SEED_START


def copy_accuracy(path: str, goals: int) -> dict[str, tuple[int, int]]:
    """``{"search": (right, total), "code": (right, total)}`` of the model at ``path`` on ``goals`` goals."""
    model, tokenizer = load_model(path)
    model.eval()
    env = gym.make("AgentWebShop-v0", prompt="compact").unwrapped
    counts = {"search": [0, 0], "code": [0, 0]}
    for seed in range(VALIDATION_SEED_START, VALIDATION_SEED_START + goals):
        observation, info = env.reset(seed=seed)
        for kind in ("search", "code"):
            messages = build_messages(info.get("system_prompt", ""), [], [], observation, history=0)
            reply = format_reply(env.game.unwrapped.first_hit_turn(env.turns_left, env.actions_left, 1))
            prompt_ids, reply_ids = encode(tokenizer, render(tokenizer, messages)), encode(tokenizer, reply)
            with torch.no_grad():
                logits = model(torch.tensor([prompt_ids + reply_ids])).logits[0, len(prompt_ids) - 1:-1]
            predicted = logits.argmax(-1).tolist()
            tokens = tokenizer.convert_ids_to_tokens(reply_ids)
            start = tokens.index("[") + 1 + (2 if kind == "code" else 0)  # a code's "b0" is not copied
            end = len(tokens) - tokens[::-1].index("]") - 1
            scored = [i for i in range(start, end) if tokens[i] != " "]
            counts[kind][0] += sum(predicted[i] == reply_ids[i] for i in scored)
            counts[kind][1] += len(scored)
            observation, *_ = env.step(reply)
    env.close()
    return {k: (right, total) for k, (right, total) in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="model folders or names")
    parser.add_argument("--goals", type=int, default=30, help="validation goals, from the first (default: 30)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| model | search words | code characters |\n|---|---:|---:|")
    for path in args.models:
        c = copy_accuracy(path, args.goals)
        cells = " | ".join(f"{r / t:.3f} ({r}/{t})" for r, t in (c["search"], c["code"]))
        print(f"| {path} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
