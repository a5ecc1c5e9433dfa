"""Kill a fresh process with SIGKILL part-way, as a user's machine would (resume tests)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def kill_once_written(arguments: list[str], path: Path, timeout: float = 300) -> None:
    """Run ``python ARGUMENTS`` on one torch thread with the repository importable; SIGKILL it as soon as ``path``
    exists. Fails if the process ends first or ``path`` does not appear within ``timeout`` seconds."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, *arguments], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + timeout
        while not path.exists():
            assert process.poll() is None and time.time() < deadline, f"the run ended before it wrote {path}"
            time.sleep(0.01)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
