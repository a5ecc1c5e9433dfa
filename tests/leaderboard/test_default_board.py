"""Commands whose ``--board`` defaults to ``leaderboards/<suite>`` of the repository the current directory is in:
outside a repository they refuse with one line and make nothing (they used to make ``./leaderboards/...``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentgym_bench.cli", *args], capture_output=True, text=True,
                          timeout=180, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_outside_a_repository_submit_reproduce_and_board_refuse_without_board(tmp_path, suite_file, oracle_bytes):
    outside = tmp_path / "work"
    outside.mkdir()
    assert all(not (p / "leaderboards").exists() for p in (outside, *outside.parents))
    (outside / "oracle.json.gz").write_bytes(oracle_bytes)
    for args in (["submit", "oracle.json.gz", "--name", "oracle", "--suite", str(suite_file)],
                 ["reproduce", "oracle"], ["board"]):
        out = cli(*args, cwd=outside)
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.strip().splitlines() == [
            f"agentgym-bench: error: no leaderboards/ folder in {outside.resolve()} or above it (this is not a clone "
            "of agentgym-bench): give --board FOLDER"], out.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["oracle.json.gz"]  # nothing made
    out = cli("submit", "oracle.json.gz", "--name", "oracle", "--suite", str(suite_file), "--check", cwd=outside)
    assert out.returncode == 0 and "check passed: verified; nothing written" in out.stdout, out.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["oracle.json.gz"]


def test_inside_a_repository_the_board_is_the_repositorys_from_any_subfolder(tmp_path, suite_file, oracle_bytes):
    repo = tmp_path / "repo"
    (repo / "leaderboards").mkdir(parents=True)
    (repo / "runs").mkdir()
    (repo / "runs" / "oracle.json.gz").write_bytes(oracle_bytes)
    out = cli("submit", "oracle.json.gz", "--name", "oracle", "--suite", str(suite_file), cwd=repo / "runs")
    assert out.returncode == 0, out.stderr
    assert (repo / "leaderboards" / "tiny" / "board.json").is_file() and not (repo / "runs" / "leaderboards").exists()
