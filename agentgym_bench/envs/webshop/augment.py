"""Copy augmentation of WebShop demonstrations: rows a model can only predict by copying from the page.

A WebShop shopper copies: the instruction's words into ``search[...]``, a product code into ``click[...]``. Imitation
alone does not teach a small model trained from scratch to copy (docs/baselines.md, "WebShop: imitation does not
learn to copy"), because the real rows can also be predicted in part from memory: the instructions' words come from
a small vocabulary, and the codes always start ``b0``. Each variant here is a demonstration turn with fresh strings
in place of the ones the reply copies, consistently in the page and in the reply:

- a search page: each word of the instruction replaced by a random word of the store's instructions (one map for
  the turn, applied to the instruction and to the reply's query);
- a page that lists product codes (a results page): each code replaced by a random code, in the page's upper case
  and the action list's lower case, and in the reply;
- a product page whose instruction names offered option values (``"color: purple"`` with ``purple`` offered): one
  named value replaced by another of the store's option values, either everywhere (instruction, page, action list
  and reply: the reply still copies) or in the instruction only, so the page no longer offers what the instruction
  names and the reply becomes what the first-hit shopper (``first_hit.py``) does then: the next offered value the
  instruction names, or ``click[buy now]``. A model that only copies the instruction's value, offered or not, clicks
  a value the page lacks until the budget runs out (docs/baselines.md).

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
ITEM = re.compile(r"Instruction: \[SEP\] (.*?) \[SEP\] Back to Search \[SEP\] < Prev \[SEP\] (.*) \[SEP\] Buy Now\n"
                  r"You must choose from these actions: (.*)\.\n")
BUTTONS = frozenset({"back to search", "< prev", "next >", "description", "features", "reviews", "buy now"})


@cache
def instruction_words() -> tuple[str, ...]:
    """The words of the bundled store's instructions, sorted."""
    return tuple(sorted({w for g in load_catalog().goals for w in WORD.findall(g["instruction_text"].lower())}))


@cache
def option_values() -> tuple[str, ...]:
    """The option values of the bundled store's products, sorted."""
    return tuple(sorted({v for p in load_catalog().products for values in p["options"].values() for v in values}))


def named_at(instruction: str, value: str) -> int | None:
    """Where the instruction names ``value`` as an option (``"<name>: <value>"`` ending at a comma), or ``None``."""
    match = re.search(rf": {re.escape(value)}(?=,|$)", instruction)
    return None if match is None else match.start()


def option_variants(observation: str, reply: str, k: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    """``k`` variants of a product-page turn whose instruction names offered option values (see the module's
    docstring), or none for other turns. Each variant draws one named value and a replacement value that is
    neither offered nor named, and swaps it everywhere or (with the same chance) in the instruction only."""
    page = ITEM.search(observation)
    answer = re.search(r"click\[(.*?)\]", reply)
    if page is None or answer is None:
        return []
    instruction, body, actions = page.group(1), page.group(2), page.group(3)
    offered = [v for v in re.findall(r"click\[(.*?)\]", actions) if v not in BUTTONS]
    named = sorted((at, v) for v in offered if (at := named_at(instruction, v)) is not None)
    if not named:
        return []
    taken = set(offered) | {v for v in option_values() if named_at(instruction, v) is not None}
    fresh = [v for v in option_values() if v not in taken]
    out = []
    for _ in range(k):
        at, old = named[int(rng.integers(len(named)))]
        new = fresh[int(rng.integers(len(fresh)))]
        text = instruction[:at] + f": {new}" + instruction[at + len(old) + 2:]
        chosen = answer.group(1)
        if rng.random() < 0.5:  # everywhere: the page offers the new value where it offered the old one
            segments = [new if segment == old else segment for segment in body.split(" [SEP] ")]
            new_body, new_actions = " [SEP] ".join(segments), actions.replace(f"click[{old}]", f"click[{new}]")
            chosen = new if chosen == old else chosen
        else:  # the instruction only: the old value is no longer named, so the shopper moves on from it
            new_body, new_actions = body, actions
            if chosen == old:
                later = [v for a, v in named if a > at]
                chosen = later[0] if later else "buy now"
        start, end = page.span()
        rebuilt = (f"Instruction: [SEP] {text} [SEP] Back to Search [SEP] < Prev [SEP] {new_body} [SEP] Buy Now\n"
                   f"You must choose from these actions: {new_actions}.\n")
        out.append((observation[:start] + rebuilt + observation[end:],
                    reply[:answer.start(1)] + chosen + reply[answer.end(1):]))
    return out


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
    if ITEM.search(observation):
        return option_variants(observation, reply, k, rng)
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
