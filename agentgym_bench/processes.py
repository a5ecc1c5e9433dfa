"""Child processes that end with their parent: a job killed with SIGKILL (or by the kernel's out-of-memory killer)
cannot stop its children itself, and children left running hold its run folders (a rerun then finds them locked, or
trains beside them).

- :func:`end_with_parent`: ask the kernel to send this process SIGTERM when its parent ends (Linux; elsewhere a
  no-op), for a child's first step (``Popen(preexec_fn=...)``, a spawned worker's entry).
"""

from __future__ import annotations

import ctypes
import signal
import sys

PR_SET_PDEATHSIG = 1
"""``prctl``'s option: the signal this process gets when the thread that made it ends."""

try:  # looked up in the parent: a forked child only calls it
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _prctl = None


def end_with_parent() -> None:
    """SIGTERM to this process when its parent ends (``prctl(PR_SET_PDEATHSIG)``; Linux only, else nothing). The
    signal follows the parent *thread*: start children from a thread that lives as long as they should."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
