"""Child processes that end with their parent: a job killed with SIGKILL (or by the kernel's out-of-memory killer)
cannot stop its children itself, and children left running hold its run folders (a rerun then finds them locked, or
trains beside them).

- :func:`end_with_parent`: ask the kernel to send this process SIGTERM when its parent ends (Linux; elsewhere a
  no-op), for a child's first step (``Popen(preexec_fn=...)``, a spawned worker's entry).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
"""``prctl``'s option: the signal this process gets when the thread that made it ends."""


def end_with_parent(parent: int | None = None) -> None:
    """SIGTERM to this process when its parent ends (``prctl(PR_SET_PDEATHSIG)``; Linux only, else nothing). With
    ``parent`` (the pid that made it), a parent already gone ends this process at once. The signal follows the
    parent *thread*: start children from a thread that lives as long as they should."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)
