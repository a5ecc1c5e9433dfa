"""One local client holding many slow connections to a server on loopback (a slowloris), for the servers' tests.

:class:`SlowClients` opens ``count`` connections to ``127.0.0.1:port`` from one background thread (one asyncio loop);
each sends a request head one byte every ``interval`` seconds and never ends it, and when the server closes it (its
head deadline) or answers it, opens a new one. It stops by itself after ``seconds``, or when the ``with`` block ends.
Each connection is two file descriptors in a test (client and server side): :func:`affordable` sizes ``count`` to
the open-files limit, raising the soft limit up to the hard one first.
"""

from __future__ import annotations

import asyncio
import threading
import time

from agentgym_bench.http_body import raise_open_files_limit

HEAD = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000


def affordable(count: int, spare: int = 512) -> int:
    """``count``, or fewer when the open-files limit cannot hold two descriptors per connection plus ``spare``."""
    soft = raise_open_files_limit(2 * count + spare)
    return max(1, min(count, (soft - spare) // 2))


class SlowClients:
    """``count`` slow, reconnecting connections to ``127.0.0.1:port`` while the ``with`` block runs (at most
    ``seconds``). ``connects``: connections opened; ``cut``: closed by the server; ``answered``: answered (a 4xx or
    5xx) before their head ended; ``failed``: connection attempts refused; ``open``: open now; ``most_open``: the most
    open at once."""

    def __init__(self, port: int, count: int = 1000, *, interval: float = 0.5, seconds: float = 20.0):
        self.port, self.count, self.interval, self.seconds = port, count, interval, seconds
        self.connects = self.cut = self.answered = self.failed = self.open = self.most_open = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    def __enter__(self) -> SlowClients:
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True, name="slow-clients")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        assert self._thread is not None
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "the slow clients did not stop"

    def wait_open(self, count: int, timeout: float) -> float:
        """Seconds until ``count`` connections are open at once; raises ``TimeoutError`` after ``timeout``."""
        started = time.monotonic()
        while self.open < count:
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"{self.open} of {count} slow connections open after {timeout:g} s")
            time.sleep(0.05)
        return time.monotonic() - started

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        end = time.monotonic() + self.seconds
        tasks = [asyncio.create_task(self._one(end)) for _ in range(self.count)]
        try:
            await asyncio.wait_for(self._stop.wait(), timeout=self.seconds)
        except asyncio.TimeoutError:  # TimeoutError from 3.11
            pass
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _one(self, end: float) -> None:
        assert self._stop is not None
        while time.monotonic() < end and not self._stop.is_set():  # (a cancel that wait_for swallows ends it too)
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                self.failed += 1
                await asyncio.sleep(0.1)
                continue
            self.connects += 1
            self.open += 1
            self.most_open = max(self.most_open, self.open)
            try:
                for k in range(len(HEAD)):  # never the blank line that would end the head
                    if self._stop.is_set():
                        break
                    writer.write(HEAD[k : k + 1])
                    try:
                        data = await asyncio.wait_for(reader.read(4096), timeout=self.interval)
                    except asyncio.TimeoutError:  # TimeoutError from 3.11
                        continue
                    if data:
                        self.answered += 1
                    else:
                        self.cut += 1
                    break
            except OSError:
                self.cut += 1
            finally:
                self.open -= 1
                writer.close()
