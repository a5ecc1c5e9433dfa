"""The splits every part of agentgym-bench keeps apart: seed ranges, and the content each range may produce (their
one owner).

**Seeds.** Training starts at :data:`TRAIN_SEED_START` (10 000, as RAGEN's ``seed.train``); validation (tuning, model
selection, the ``agentgym-v2-validation`` suite) uses seeds ``0 .. N-1`` per env id, so validation sets of up to
10 000 episodes never meet a training seed; the benchmark's test suites play :data:`TEST_SEEDS`, which nothing else
may use. The trainer's config check, the warm start and the TRL adapter refuse overlapping ranges with
:func:`check_seeds_disjoint`.

**Content.** Disjoint seeds are not disjoint episodes: a generated env has a finite content space (a 6x6 Sokoban room
with one box has tens of thousands of layouts, a 4x4 lake far fewer likely maps), so two seeds can draw the same
room. Measured on agentgym-v1, whose test seeds drew from all content: 54% of its Sokoban 6x6 test rooms and 34.5%
of its FrozenLake test maps occur among 50,000 training episodes. So every piece of episode content (a room, a map,
a deal) belongs to exactly one split, decided by a hash of a canonical text of it (:func:`content_split`): a
:data:`TEST_SHARE` of the content space is test content, a :data:`VALIDATION_SHARE` validation content, the rest
training content. A generated env draws from ``np_random`` until the content's split is its seed's
(:func:`seed_content_split`), so a training or validation seed never produces test content and a test seed only
test content, and a seed still fixes its episode in any process. ``benchmarks/content_overlap.py`` measures it.

agentgym-v1's test seeds (:data:`V1_TEST_SEEDS`) are retired, not reused: they still draw from all content, so the
archived v1 board replays exactly, and nothing may train on them either. Games whose episodes come from a fixed list
(WebShop's goals) pick the list's split with :func:`seed_split`.
"""

from __future__ import annotations

import hashlib

TRAIN_SEED_START = 10_000
VALIDATION_SEED_START = 0
TEST_SEED_START = 2_000_000_000
TEST_SEEDS = range(TEST_SEED_START, TEST_SEED_START + 1_000_000)
"""The benchmark suites' held-out test seeds (agentgym-v2 on; see :mod:`agentgym_bench.benchmark.suites`): no
training, validation, warm start or tuning may use one; :func:`check_seeds_disjoint` refuses a range that meets them.
"""
V1_TEST_SEEDS = range(1_000_000_000, 1_001_000_000)
"""agentgym-v1's test seeds, retired: they draw from all content (as they did), so v1 results still replay; no
training may use them."""
HELD_OUT = {"the benchmark's held-out test seeds": TEST_SEEDS, "agentgym-v1's retired test seeds": V1_TEST_SEEDS}

SPLITS = ("train", "validation", "test")
TEST_SHARE = 0.1
"""Share of each env's content space that is test content (by hash, so in expectation also of its probability)."""
VALIDATION_SHARE = 0.1
"""Share of each env's content space that is validation content; the rest is training content."""


def check_seeds_disjoint(name: str, seeds: range, other_name: str | None = None, other: range | None = None) -> None:
    """Raise ``ValueError`` naming both ranges if ``seeds`` and ``other`` share a seed (default: if ``seeds`` meet
    any held-out test seeds, :data:`HELD_OUT`)."""
    others = HELD_OUT if other is None else {other_name or "the other seeds": other}
    for label, held in others.items():
        low, high = max(seeds.start, held.start), min(seeds.stop, held.stop)
        if len(seeds) and len(held) and low < high:
            raise ValueError(f"{name} {_span(seeds)} meet {label} {_span(held)} (e.g. seed {low}); move them apart")


def seed_split(seed: int) -> str:
    """``"test"`` for a held-out test seed (v2's or v1's), ``"validation"`` for ``VALIDATION_SEED_START ..
    TRAIN_SEED_START - 1``, else ``"train"``."""
    if seed in TEST_SEEDS or seed in V1_TEST_SEEDS:
        return "test"
    if VALIDATION_SEED_START <= seed < TRAIN_SEED_START:
        return "validation"
    return "train"


def seed_content_split(seed: int | None, previous: str | None = "train") -> str | None:
    """The content split a reset with ``seed`` must draw from: :func:`seed_split`'s, or ``None`` (any content) for
    agentgym-v1's retired test seeds. ``seed=None`` (Gymnasium's reset without a seed, which continues the env's
    generator) keeps the split of the env's last seeded reset, ``previous`` (training content if it never had one)."""
    if seed is None:
        return previous
    if seed in V1_TEST_SEEDS:
        return None
    return seed_split(seed)


def content_split(content: str) -> str:
    """The split of one piece of episode content, given as a canonical text: the first 8 bytes of its SHA-256 read as
    a number ``u`` in [0, 1) give ``"test"`` below :data:`TEST_SHARE`, ``"validation"`` below ``TEST_SHARE +
    VALIDATION_SHARE``, else ``"train"``. Pure and the same on every machine."""
    u = int.from_bytes(hashlib.sha256(content.encode()).digest()[:8], "big") / 2**64
    if u < TEST_SHARE:
        return "test"
    if u < TEST_SHARE + VALIDATION_SHARE:
        return "validation"
    return "train"


def in_split(content: str, split: str | None) -> bool:
    """Whether ``content`` may be drawn for ``split`` (``None``: any content)."""
    return split is None or content_split(content) == split


def _span(seeds: range) -> str:
    if len(seeds) == 1:
        return str(seeds.start)
    return f"{seeds.start}..{seeds.stop - 1}" if len(seeds) else "(none)"
