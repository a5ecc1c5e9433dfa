"""Can a model learn to copy a string from its context? Synthetic tasks for the default model (or any causal LM
folder with its tokenizer, ``--model``).

WebShop's shoppers copy (a product code from the page into ``click[...]``, the instruction's words into
``search[...]``), and imitation on WebShop did not teach the default model to
(docs/lab/2026-11-22-webshop-imitation.md, "WebShop: imitation does not learn to copy"). These tasks measure copying
alone: a language-model loss on random sequences, and the argmax accuracy on the positions whose token is a copy of an
earlier one (chance: 1/36).

- ``repeat``: ``length/2`` random characters, then the same again (the copy sits at a fixed offset).
- ``induct``: random characters with a 16-character string repeated at once, at a random place (an induction head:
  find the earlier occurrence of the current token, read the token after it).
- ``induct-words``: as ``induct``, with tokens drawn from the whole vocabulary (words, not only characters).
- ``induct-spaced``: as ``induct-words`` with a space token after every word, as the default tokenizer spells text
  (``blue`` `` `` ``shoes`` `` ``): the word to copy next follows the previous word and a space, so a head that only
  matches the current token (a space, everywhere) cannot find it. Scored on the copied words, not the spaces.
- ``find``: random vocabulary words, a 10-character code at a random place, more words, then ``click[`` and the
  code again (the code has to be found by its content; WebShop's case, shorter).

``--shift-positions`` starts each sequence's positions at a random place in ``0..n_positions-length``, so every
learned position embedding is trained (WebShop's pages sit at positions up to ~900), not only the first ``length``.

    .venv/bin/python benchmarks/copy_task.py --task induct --length 64 --steps 3000 [--shift-positions]
        [--model default] [--save FOLDER]

One thread (``torch.set_num_threads(1)``), batch 32, AdamW lr 1e-3 after 100 warm-up steps, seed 0 (``--seed``).
"""

from __future__ import annotations

import argparse
import time

import torch

from agentgym_bench.rollout.hf import load_model

CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
BATCH, CODE, REPEAT = 32, 10, 16
TASKS = ("repeat", "induct", "induct-words", "induct-spaced", "find")


def make_batch(task: str, length: int, chars: torch.Tensor, vocab: int, marker: list[int], close: int,
               space: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens, copied)``, both ``(BATCH, length)``: ``copied`` marks tokens that repeat an earlier string."""
    copied = torch.zeros(BATCH, length, dtype=torch.bool)
    if task == "repeat":
        half = chars[torch.randint(len(chars), (BATCH, length // 2), generator=generator)]
        copied[:, length // 2 + 1:] = True
        return torch.cat([half, half], 1), copied
    if task in ("induct", "induct-words"):
        if task == "induct":
            x = chars[torch.randint(len(chars), (BATCH, length), generator=generator)]
        else:
            x = torch.randint(10, vocab, (BATCH, length), generator=generator)
        for b in range(BATCH):
            a = int(torch.randint(0, length - 2 * REPEAT + 1, (1,), generator=generator))
            x[b, a + REPEAT:a + 2 * REPEAT] = x[b, a:a + REPEAT]
            copied[b, a + REPEAT + 1:a + 2 * REPEAT] = True
        return x, copied
    if task == "induct-spaced":
        x = torch.full((BATCH, length), space)
        x[:, 0::2] = torch.randint(10, vocab, (BATCH, (length + 1) // 2), generator=generator)
        for b in range(BATCH):
            a = 2 * int(torch.randint(0, (length - 4 * REPEAT) // 2 + 1, (1,), generator=generator))
            x[b, a + 2 * REPEAT:a + 4 * REPEAT] = x[b, a:a + 2 * REPEAT]
            copied[b, a + 2 * REPEAT + 2:a + 4 * REPEAT:2] = True
        return x, copied
    x = torch.empty(BATCH, length, dtype=torch.long)
    for b in range(BATCH):
        code = chars[torch.randint(len(chars), (CODE,), generator=generator)].tolist()
        tail = marker + code + [close]
        room = length - CODE - len(tail)
        a = int(torch.randint(0, room + 1, (1,), generator=generator))
        before = torch.randint(10, vocab, (a,), generator=generator).tolist()
        between = torch.randint(10, vocab, (room - a,), generator=generator).tolist()
        x[b] = torch.tensor(before + code + between + tail)
        start = a + CODE + len(between) + len(marker)
        copied[b, start:start + CODE] = True
    return x, copied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=TASKS, default="induct")
    parser.add_argument("--length", type=int, default=64, help="tokens a sequence")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--shift-positions", action="store_true", help="start positions at a random place")
    parser.add_argument("--model", default="default", help="model folder or name (default: the default model)")
    parser.add_argument("--save", help="folder to save the trained model to")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random sequences (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: %(default)s)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model, tokenizer = load_model(args.model)
    vocab = len(tokenizer)
    chars = torch.tensor([tokenizer.convert_tokens_to_ids(c) for c in CHARACTERS])
    marker = tokenizer("click[", add_special_tokens=False)["input_ids"]
    close = tokenizer.convert_tokens_to_ids("]")
    space = tokenizer.convert_tokens_to_ids(" ")
    positions = model.config.max_position_embeddings  # GPT-2's n_positions under the common name
    generator = torch.Generator().manual_seed(args.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / 100, 1.0))
    model.train()
    began = time.time()
    for step in range(args.steps + 1):
        x, copied = make_batch(args.task, args.length, chars, vocab, marker, close, space, generator)
        if args.shift_positions:
            start = torch.randint(0, positions - args.length + 1, (BATCH, 1), generator=generator)
        else:
            start = torch.zeros(BATCH, 1, dtype=torch.long)
        logits = model(input_ids=x, position_ids=start + torch.arange(args.length)).logits[:, :-1]
        target, scored = x[:, 1:], copied[:, 1:]
        losses = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), target.reshape(-1), reduction="none")
        losses = losses.view(BATCH, -1)
        loss = losses.mean()
        if step % 100 == 0:
            accuracy = (logits.argmax(-1) == target)[scored].float().mean().item()
            print(f"step {step} loss {loss.item():.3f} copy loss {losses[scored].mean().item():.3f} "
                  f"copy accuracy {accuracy:.3f} ({time.time() - began:.0f} s)", flush=True)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
    if args.save:
        model.eval()
        model.save_pretrained(args.save)
        tokenizer.save_pretrained(args.save)


if __name__ == "__main__":
    main()
