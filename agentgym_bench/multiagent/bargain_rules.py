"""Pure rules of Bargain, a repeated Nash demand game over items with private values (no spaces, no RNG state).

The pool holds ``counts[t]`` items of each type ``t`` (books, hats, balls, as in Lewis et al. 2017, "Deal or No
Deal?", arXiv 1706.05125). Each player values the types privately: non-negative integers with
``values . counts == TOTAL_VALUE``. Each round both players demand a bundle at the same time; if the two bundles
fit in the pool together, each gets its bundle (leftovers are discarded, as in Nash's 1953 demand game) and the
game ends. A player's payoff is the value of its bundle over ``TOTAL_VALUE``.

>>> fits((2, 0, 1), (1, 1, 1), (3, 1, 2))
True
>>> payoff((2, 0, 1), (1, 4, 2))
0.4
"""

from __future__ import annotations

import functools
import itertools
import math
import re

import numpy as np

from agentgym_bench.envs.draw_cache import Draws
from agentgym_bench.seeds import in_split

ITEMS = ("book", "hat", "ball")
TOTAL_VALUE = 10
MAX_COUNT = 4
MAX_DEAL_DRAWS = 1_000_000
"""Deals :func:`sample_deal` draws before it gives up: never reached (for any counts most value pairs pass, e.g.
counts (1, 1, 1) has 66 vectors, and about 1 deal in 10 is of a given held-out split)."""

Bundle = tuple[int, int, int]


def all_bundles(counts: Bundle) -> list[Bundle]:
    """Every bundle ``0 <= b <= counts`` (at most 125)."""
    return [tuple(b) for b in itertools.product(*(range(c + 1) for c in counts))]  # type: ignore[misc]


def value(bundle: Bundle, values: Bundle) -> int:
    """Worth of ``bundle`` under ``values``."""
    return int(sum(b * v for b, v in zip(bundle, values, strict=True)))


def payoff(bundle: Bundle, values: Bundle) -> float:
    """``value / TOTAL_VALUE`` in [0, 1]."""
    return value(bundle, values) / TOTAL_VALUE


def fits(a: Bundle, b: Bundle, counts: Bundle) -> bool:
    """True if demands ``a`` and ``b`` together fit in the pool."""
    return all(x + y <= c for x, y, c in zip(a, b, counts, strict=True))


def sample_deal(rng: np.random.Generator, split: str | None = None,
                remember: bool = False) -> tuple[Bundle, Bundle, Bundle]:
    """``(counts, values_0, values_1)``: counts uniform in 1..MAX_COUNT per type; each player's values uniform over
    the integer vectors worth ``TOTAL_VALUE`` in all, redrawn until every type is worth something to someone, the
    two players' values differ (so there is something to bargain about) and the deal belongs to ``split``
    (:func:`deal_text`, :func:`agentgym_bench.seeds.content_split`; ``None``: any deal). Draws only from ``rng``.
    ``remember=True`` (a seeded reset) lets a held-out split's call replay only its accepted draw the next time it
    starts from the same ``rng`` state (:mod:`agentgym_bench.envs.draw_cache`)."""
    draws = Draws(rng, ("bargain_rules.sample_deal",), split, remember)
    for _ in draws.attempts(MAX_DEAL_DRAWS):
        counts: Bundle = tuple(int(c) for c in rng.integers(1, MAX_COUNT + 1, size=3))  # type: ignore[assignment]
        options = value_vectors(counts)
        if len(options) < 2:
            continue
        a, b = (options[int(i)] for i in rng.integers(0, len(options), size=2))
        if a != b and all(x + y > 0 for x, y in zip(a, b, strict=True)) and in_split(deal_text(counts, a, b), split):
            draws.accept()
            return counts, a, b  # type: ignore[return-value]
    raise RuntimeError(f"no deal of the {split} split in {MAX_DEAL_DRAWS} draws")


def deal_text(counts: Bundle, values_0: Bundle, values_1: Bundle) -> str:
    """The canonical text of a deal, whose hash decides its content split; the two value vectors are sorted, so a
    deal and its seat swap (which an evaluation plays from both seats anyway) share a split:
    ``"bargain counts=1,1,1 values=1,0,9|5,5,0"``."""
    values = "|".join(",".join(map(str, v)) for v in sorted((values_0, values_1)))
    return f"bargain counts={','.join(map(str, counts))} values={values}"


@functools.cache
def value_vectors(counts: Bundle) -> list[Bundle]:
    """Every non-negative integer value vector worth ``TOTAL_VALUE`` for the pool ``counts`` (cached: pure)."""
    return [v for v in itertools.product(range(TOTAL_VALUE + 1), repeat=3) if value(counts, v) == TOTAL_VALUE]


def read_demand(move: str | None, counts: Bundle) -> Bundle | None:
    """The bundle in a move such as ``"2 1 0"`` or ``"books 2, hats 1, balls 0"``: exactly three integers, each within
    the pool; ``None`` otherwise."""
    if move is None:
        return None
    numbers = re.findall(r"(?<!\d)-?\d+", move[:200])  # "-1" is outside the pool, not 1; "2-1-0" is 2, 1, 0
    if len(numbers) != 3 or any(len(n) > 2 for n in numbers):
        return None
    bundle = tuple(int(n) for n in numbers)
    return bundle if all(0 <= b <= c for b, c in zip(bundle, counts, strict=True)) else None  # type: ignore[return-value]


def scripted_demand(counts: Bundle, values: Bundle, round_index: int, max_rounds: int,
                    their_last: Bundle | None) -> Bundle:
    """A strong scripted bargainer's demand (deterministic).

    Round 1: every item it values. Later: the most valuable bundle that fits with the other player's last demand if
    that bundle is worth at least the aspiration ``10 * (1 - 0.5 * round_index / (max_rounds - 1))`` (from all of it
    down to half; anything above 0 in the last round); otherwise, among bundles meeting the aspiration, the one that
    over-asks the least against the other's last demand (ties: higher value). ``round_index`` is 0-based.
    """
    bundles = all_bundles(counts)
    if their_last is None:
        return tuple(c if v > 0 else 0 for c, v in zip(counts, values, strict=True))  # type: ignore[return-value]
    last_round = round_index >= max_rounds - 1
    aspiration = 1 if last_round else TOTAL_VALUE * (1 - 0.5 * round_index / max(max_rounds - 1, 1))
    fitting = [b for b in bundles if fits(b, their_last, counts) and value(b, values) >= aspiration]
    if fitting:
        return max(fitting, key=lambda b: (value(b, values), -sum(b)))
    ambitious = [b for b in bundles if value(b, values) >= aspiration] or bundles

    def over_ask(b: Bundle) -> int:
        return sum(max(0, x + y - c) for x, y, c in zip(b, their_last, counts, strict=True))

    return min(ambitious, key=lambda b: (over_ask(b), -value(b, values), sum(b)))


def best_against_random(counts: Bundle, values: Bundle, rounds: int) -> float:
    """The most payoff a player who knows only its own ``values`` can expect in ``rounds`` rounds against uniformly
    random demands (each type's count uniform in ``0..counts[t]``, every round, whatever came before): with ``r``
    rounds left, ``V_r = max_b [P(b fits) payoff(b) + (1 - P(b fits)) V_{r-1}]``, ``V_0 = 0``, where
    ``P(b fits) = prod_t (counts[t] - b[t] + 1) / (counts[t] + 1)``. The demands do not depend on the game so far,
    so nothing a player sees changes those odds and the value is exact; a malformed move (no deal that round) is
    never better than demanding the whole pool."""
    options = [(math.prod((c - x + 1) / (c + 1) for x, c in zip(b, counts, strict=True)), payoff(b, values))
               for b in all_bundles(counts)]
    best = 0.0
    for _ in range(rounds):
        best = max(chance * worth + (1 - chance) * best for chance, worth in options)
    return best


def describe(bundle: Bundle) -> str:
    """``(2, 1, 0)`` -> ``"2 books, 1 hat, 0 balls"``."""
    return ", ".join(f"{n} {item}{'' if n == 1 else 's'}" for n, item in zip(bundle, ITEMS, strict=True))
