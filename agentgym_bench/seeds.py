"""The seed ranges every part of agentgym-bench keeps apart (their one owner).

Training starts at :data:`TRAIN_SEED_START` (10 000, as RAGEN's ``seed.train``); validation (tuning, model
selection, the ``agentgym-v1-validation`` suite) uses seeds ``0 .. N-1`` per env id, so validation sets of up to
10 000 episodes never meet a training seed; the benchmark's test suites play :data:`TEST_SEEDS`, which nothing else
may use. The trainer's config check, the warm start and the TRL adapter refuse overlapping ranges with
:func:`check_seeds_disjoint`; games whose episodes come from a fixed list (WebShop's goals) pick the list's split
with :func:`seed_split`.
"""

from __future__ import annotations

TRAIN_SEED_START = 10_000
VALIDATION_SEED_START = 0
TEST_SEED_START = 1_000_000_000
TEST_SEEDS = range(TEST_SEED_START, TEST_SEED_START + 1_000_000)
"""The benchmark suites' held-out test seeds (see :mod:`agentgym_bench.benchmark.suites`): no training, validation,
warm start or tuning may use one; :func:`check_seeds_disjoint` refuses a range that meets them."""


def check_seeds_disjoint(name: str, seeds: range, other_name: str = "the benchmark's held-out test seeds",
                         other: range = TEST_SEEDS) -> None:
    """Raise ``ValueError`` naming both ranges if ``seeds`` and ``other`` share a seed."""
    low, high = max(seeds.start, other.start), min(seeds.stop, other.stop)
    if len(seeds) and len(other) and low < high:
        raise ValueError(f"{name} {_span(seeds)} meet {other_name} {_span(other)} (e.g. seed {low}); "
                         "move them apart")


def seed_split(seed: int) -> str:
    """``"test"`` for a held-out test seed, ``"validation"`` for ``VALIDATION_SEED_START .. TRAIN_SEED_START - 1``,
    else ``"train"``."""
    if seed in TEST_SEEDS:
        return "test"
    if VALIDATION_SEED_START <= seed < TRAIN_SEED_START:
        return "validation"
    return "train"


def _span(seeds: range) -> str:
    return f"{seeds.start}..{seeds.stop - 1}" if len(seeds) else "(none)"
