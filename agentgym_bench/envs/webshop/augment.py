"""Copy augmentation of WebShop demonstrations: rows a model can only predict by copying from the page.

A WebShop shopper copies: the instruction's words into ``search[...]``, a product code into ``click[...]``. Imitation
alone does not teach a small model trained from scratch to copy (docs/lab/2026-11-22-webshop-imitation.md, "WebShop:
imitation does not learn to copy"), because the real rows can also be predicted in part from memory: the instructions'
words come from a small vocabulary, and the codes always start ``b0``. Each variant here is a demonstration turn with
fresh strings in place of the ones the reply copies, consistently in the page and in the reply:

- a search page: each word of the instruction replaced by a random word of the store's instructions (one map for
  the turn, applied to the instruction and to the reply's query);
- a page that lists product codes (a results page): each code replaced by a random code, in the page's upper case
  and the action list's lower case, and in the reply.

Other turns have no variants.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np

from agentgym_bench.envs.webshop.catalog import load_catalog

CODE = re.compile(r"\b[bB]0[a-zA-Z0-9]{8}\b")
WORD = re.compile(r"[a-z0-9][a-z0-9'&.-]*")
INSTRUCTION = re.compile(r"Instruction: \[SEP\] (.*?) \[SEP\] Search\n")
CODE_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"


@cache
def instruction_words() -> tuple[str, ...]:
    """The words of the bundled store's instructions, sorted."""
    return tuple(sorted({w for g in load_catalog().goals for w in WORD.findall(g["instruction_text"].lower())}))


def copy_variants(observation: str, reply: str, k: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    """``k`` ``(observation, reply)`` variants of one demonstration turn, or none if the reply copies nothing.

    Arguments:
        observation: the page the turn saw.
        reply: the demonstrator's reply (``search[...]`` or ``click[...]`` inside the reply format).
        k: variants to make.
        rng: draws the replacement words and codes.
    """
    page = INSTRUCTION.search(observation)
    if page is not None and "search[" in reply:
        words = instruction_words()
        out = []
        for _ in range(k):
            mapping: dict[str, str] = {}

            def swap(m: re.Match, mapping: dict[str, str] = mapping) -> str:
                if m.group(0) not in mapping:
                    mapping[m.group(0)] = words[int(rng.integers(len(words)))]
                return mapping[m.group(0)]

            new = WORD.sub(swap, page.group(1))
            start, end = page.span(1)
            out.append((observation[:start] + new + observation[end:],
                        re.sub(r"search\[(.*?)\]", lambda m: f"search[{WORD.sub(swap, m.group(1))}]", reply)))
        return out
    codes = {c.lower() for c in CODE.findall(observation)}
    if not codes or not CODE.search(reply):
        return []
    out = []
    for _ in range(k):
        fresh = {c: "b0" + "".join(CODE_CHARS[i] for i in rng.integers(len(CODE_CHARS), size=8)) for c in codes}

        def swap(m: re.Match, fresh: dict[str, str] = fresh) -> str:
            new = fresh.get(m.group(0).lower(), m.group(0))
            return new.upper() if m.group(0).isupper() else new

        out.append((CODE.sub(swap, observation), CODE.sub(swap, reply)))
    return out
