"""Running ``agentgym-bench`` as a user does, in a subprocess, and reading its one-line errors."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m agentgym_bench.cli ARGS`` in ``cwd``, this checkout first on the path."""
    return subprocess.run([sys.executable, "-m", "agentgym_bench.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def one_line(out: subprocess.CompletedProcess) -> str:
    """The single ``agentgym-bench: error:`` line of a run that failed with exit status 2 and no traceback."""
    lines = [line for line in out.stderr.splitlines() if line.startswith("agentgym-bench: error:")]
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    return lines[0]
