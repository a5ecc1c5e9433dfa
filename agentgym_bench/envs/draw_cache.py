"""Rejection sampling that remembers which draw a held-out seed accepted, so a replayed seed draws once.

A generated game draws its content from the env's generator until the content belongs to the seed's split
(:mod:`agentgym_bench.seeds`): 80% of the content is training content, 10% each validation and test content, so
a held-out seed pays about ten draws per reset (measured over 400 seeds: FrozenLake 4x4 10-11 draws against 1.3 on
training seeds, Sokoban 6x6 11-12 against 1.5, Sokoban also redrawing topologies without a start), and the
benchmark suites replay the same held-out seeds again and again (every validation pass of training, every
evaluation, every leaderboard replay). This module is the loop's one home: a generator writes its attempts as ::

    draws = Draws(rng, ("frozen_lake_rules.generate_map", size, p), split, remember)
    for _ in draws.attempts(MAX_MAP_DRAWS):
        ...                                # draw one candidate from rng
        if acceptable:
            draws.accept()
            return candidate
    raise RuntimeError(...)

**What is remembered.** When ``remember`` is true (a seeded reset) and ``split`` is a held-out split
(:data:`HELD_OUT_SPLITS`), :data:`CACHE` maps the key ``(generator name and parameters, split, the state of
rng's bit generator before the first attempt)`` to the bit generator's state before the accepted attempt. A later
call with the same key sets ``rng`` to that state and runs only that attempt: it draws the same candidate and
leaves ``rng`` where the full loop would have left it, so what the env draws afterwards (FrozenLake's slips) is
unchanged too. The generator's state at the start stands for the seed: a seeded reset fixes it, and it also covers
anything an env draws before generating. The key holds the generator's parameters rather than the env class: the
slippery and no-slip FrozenLake envs share their maps. A replayed attempt that is not accepted means the key
missed something that decides the content (a bug): :class:`StaleDrawError` is raised rather than a different
episode played.

**Same episode, cache or not.** The cache only skips draws whose outcome is known; the content, the generator's
final state and therefore the episode are the same with a cold cache, a warm one, the cache disabled
(``CACHE.resize(0)``), in any order of resets and in any process. Nothing touches a global random state.

**Not remembered.** Training seeds (``split == "train"``, no behaviour change: most accept their first draw, and
a training run plays so many seeds that they would only crowd out the suites), agentgym-v1's retired test
seeds (``split is None``: any content, no rejection for the split) and unseeded resets (``remember=False``: the
generator continues, so its state is never seen again).

**Bound.** At most ``max_entries`` keys (:data:`MAX_ENTRIES` = 16,384 by default), least recently used evicted
first. A suite entry is a few hundred seeds (agentgym-v2 and its validation twin: 400 per entry, 4 entries that
reject, 3 distinct generators, plus Bargain's 400 deals each): about 3,200 keys for both suites, a 10,000-seed
validation set fits too. An entry takes about 1.3 KB (two PCG64 states as Python objects, the key's and the
remembered one; measured with ``tracemalloc`` over 2,000 FrozenLake resets), so a full cache about 21 MB.

**Threads.** One lock guards the cache and its counters (a lookup moves the key to the end of the LRU order, which
is not atomic). The lock is held only for the dictionary operation, never while drawing; two threads resetting
envs at once (each env has its own generator) at worst both draw a missing seed and store the same state.

**Counters.** :meth:`DrawCache.stats` gives ``draws`` (attempts started, every call, remembered or not),
``replays`` (calls answered from the cache), ``misses`` (remembered calls not in it) and ``entries``; tests read
them to see that a replay skips draws.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Any

import numpy as np

HELD_OUT_SPLITS = ("validation", "test")
"""Splits whose accepted draws are remembered."""

MAX_ENTRIES = 16_384
"""Default bound of :data:`CACHE`, in keys (about 1.3 KB each)."""


def _check_size(max_entries: int) -> int:
    if not isinstance(max_entries, int) or isinstance(max_entries, bool) or max_entries < 0:
        raise ValueError(f"max_entries={max_entries!r} must be a non-negative int (0 disables the cache)")
    return max_entries


class StaleDrawError(RuntimeError):
    """A remembered draw was rejected when replayed: its key misses something that decides the content."""


class DrawCache:
    """A bounded, thread-safe LRU map from a generator call's key to the bit-generator state before its accepted
    attempt, with counters (see the module docstring)."""

    def __init__(self, max_entries: int = MAX_ENTRIES):
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, dict[str, Any]] = OrderedDict()
        self._max_entries = _check_size(max_entries)
        self._counts = {"draws": 0, "replays": 0, "misses": 0}

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def max_entries(self) -> int:
        """The bound, in keys; 0: the cache is disabled."""
        return self._max_entries

    def resize(self, max_entries: int) -> int:
        """Set the bound (0 disables the cache), evicting the least recently used keys over it; returns the old
        bound."""
        with self._lock:
            old, self._max_entries = self._max_entries, _check_size(max_entries)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return old

    def clear(self) -> None:
        """Forget every key (the counters are kept)."""
        with self._lock:
            self._entries.clear()

    def stats(self) -> dict[str, int]:
        """``draws``, ``replays``, ``misses`` since the process started, and ``entries`` now."""
        with self._lock:
            return {**self._counts, "entries": len(self._entries)}

    def lookup(self, key: Hashable) -> dict[str, Any] | None:
        """The remembered state for ``key`` (marking it recently used), or ``None``; counts a replay or a miss."""
        with self._lock:
            state = self._entries.get(key)
            if state is None:
                self._counts["misses"] += 1
            else:
                self._counts["replays"] += 1
                self._entries.move_to_end(key)
            return state

    def store(self, key: Hashable, state: dict[str, Any]) -> None:
        """Remember ``state`` for ``key``, evicting the least recently used key past the bound."""
        with self._lock:
            if self._max_entries == 0:
                return
            self._entries[key] = state
            self._entries.move_to_end(key)
            if len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def forget(self, key: Hashable) -> None:
        """Drop ``key`` if present."""
        with self._lock:
            self._entries.pop(key, None)

    def count_draw(self) -> None:
        with self._lock:
            self._counts["draws"] += 1


CACHE = DrawCache()
"""The process's cache, shared by every env that rejects draws (Sokoban rooms, FrozenLake maps, Bargain deals)."""


class Draws:
    """The attempts of one rejection-sampling call on ``rng``: :meth:`attempts` to loop, :meth:`accept` on success.

    Args:
        rng: The generator every attempt draws from (only its bit generator's state is read and set).
        generator: The generating function's name and every parameter that decides its candidates, e.g.
            ``("sokoban.generate_room", height, width, num_boxes, search_depth)``.
        split: The content split asked for; only :data:`HELD_OUT_SPLITS` are remembered.
        remember: Whether this call may be answered from, and stored in, :data:`CACHE` (a seeded reset).
    """

    __slots__ = ("_rng", "_key", "_before", "_replay")

    def __init__(self, rng: np.random.Generator, generator: tuple[Hashable, ...], split: str | None,
                 remember: bool):
        self._rng = rng
        self._key: Hashable | None = None
        self._before: dict[str, Any] | None = None  # the bit generator's state before the current attempt
        self._replay: dict[str, Any] | None = None
        if remember and split in HELD_OUT_SPLITS and CACHE.max_entries > 0:
            self._key = (generator, split, _frozen(rng.bit_generator.state))
            self._replay = CACHE.lookup(self._key)

    def attempts(self, limit: int) -> Iterator[int]:
        """Yield ``1, 2, ...`` up to ``limit``, once per attempt; a remembered call yields once, from the state
        before its accepted attempt, and raises :class:`StaleDrawError` if the loop asks for another."""
        if self._replay is not None:
            self._rng.bit_generator.state = self._replay
            CACHE.count_draw()
            yield 1
            CACHE.forget(self._key)
            raise StaleDrawError(f"the remembered draw of {self._key[:2]} was rejected on replay: the cache key "
                                 "misses something that decides the content")
        for attempt in range(1, limit + 1):
            if self._key is not None:
                self._before = self._rng.bit_generator.state
            CACHE.count_draw()
            yield attempt

    def accept(self) -> None:
        """The current attempt's candidate is the result: remember where it started (if this call may be)."""
        if self._key is not None and self._replay is None:
            CACHE.store(self._key, self._before)


def _frozen(value: Any) -> Hashable:
    """A hashable copy of a bit generator's state (nested dicts of ints, strings and, for some, arrays)."""
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in sorted(value.items()))
    if isinstance(value, np.ndarray):
        return value.dtype.str, value.shape, value.tobytes()
    return value
