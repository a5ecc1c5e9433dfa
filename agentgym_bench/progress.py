"""Progress of long work: a tqdm bar on a terminal, a plain line every few seconds otherwise.

A redrawn bar written to a file or a CI log is one line per redraw (megabytes for a long run); :func:`progress`
returns a bar only when stderr is a terminal, and otherwise a :class:`LineProgress` that prints
``desc: n/total (p%), elapsed, ETA`` at most every ``interval`` seconds and once at the end (``desc: total/total
(100%) in Ns`` when all is done). Work resumed part done starts at ``initial``; the estimate then comes from this
run's rate alone.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from tqdm import tqdm


class LineProgress:
    """``update``/``close``/``set_postfix_str`` like a tqdm bar, printing a line every ``interval`` seconds."""

    def __init__(self, total: int | None, desc: str, unit: str, interval: float = 10.0, file: TextIO | None = None,
                 initial: int = 0):
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        self.file = file if file is not None else sys.stderr
        self.n, self.initial, self.postfix = initial, initial, ""
        self.start = self.last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        self._maybe_print()

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        """As tqdm's: ``refresh=False`` leaves the printing to the next ``update``."""
        self.postfix = text
        if refresh:
            self._maybe_print()

    def _maybe_print(self) -> None:
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._print(now)

    def _print(self, now: float) -> None:
        elapsed = now - self.start
        line = f"{self.desc}: {self.n}"
        if self.total:
            line += f"/{self.total} {_plural(self.unit)} ({100 * self.n / self.total:.0f}%)"
            line += f", {elapsed:.0f}s elapsed"
            done = self.n - self.initial
            if done >= max(1, self.total // 20):  # an estimate from the first few percent is noise
                line += f", ~{elapsed * (self.total - self.n) / done:.0f}s left"
        else:
            line += f" {_plural(self.unit)}, {elapsed:.0f}s elapsed"
        if self.postfix:
            line += f", {self.postfix}"
        print(line, file=self.file, flush=True)

    def close(self) -> None:
        """The last line: where the work stopped, or, when all of it is done, how long it took (the postfix, a state
        of the work in flight, is left off then)."""
        now = time.monotonic()
        if self.total and self.n >= self.total:
            print(f"{self.desc}: {self.n}/{self.total} {_plural(self.unit)} (100%) in {now - self.start:.0f}s",
                  file=self.file, flush=True)
        else:
            self._print(now)

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _plural(unit: str) -> str:
    return unit + ("es" if unit.endswith(("s", "x", "ch", "sh")) else "s")


class _Silent:
    def update(self, n: int = 1) -> None: ...
    def set_postfix_str(self, text: str, refresh: bool = True) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> _Silent:
        return self
    def __exit__(self, *exc: object) -> None: ...


def progress(total: int | None, desc: str, unit: str = "it", *, enabled: bool = True, leave: bool = True,
             interval: float = 10.0, initial: int = 0) -> Any:
    """A progress reporter: a tqdm bar if stderr is a terminal, else a :class:`LineProgress`; nothing if not
    ``enabled``. ``initial``: units already done by an earlier run (resumed work)."""
    if not enabled:
        return _Silent()
    if sys.stderr.isatty():
        return tqdm(total=total, desc=desc, unit=unit, leave=leave, initial=initial)
    return LineProgress(total, desc, unit, interval, initial=initial)
