"""What works without the optional extras: the 20-line trainer loop of docs/integrations.md (run as written) and
the openenv-serve command's --help and its missing-package message."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from agentgym_bench.paths import model_dir
from agentgym_bench.rollout.default_model import build_default_model

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def trainer_loop() -> str:
    section = DOC.read_text().split("## A hand-written trainer", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_loop_is_at_most_20_lines_of_code_and_runs(tmp_path, monkeypatch, capsys):
    code = trainer_loop()
    body = [line for line in code.splitlines() if line.strip() and not line.startswith(("import", "from"))]
    assert len(body) <= 20
    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(tmp_path))
    build_default_model(model_dir("default"))
    scope: dict = {}
    with torch.random.fork_rng(devices=[]):
        exec(compile(code, str(DOC), "exec"), scope)
    printed = capsys.readouterr().out.split("\n")
    assert [line.split()[0] for line in printed if line] == ["0", "1", "2"]
    assert torch.isfinite(scope["loss"]) and scope["mask"].sum() > 0


def test_openenv_serve_help_and_a_missing_openenv_are_plain_messages():
    """Without openenv-core (a clean venv has none) the command still has --help, and running it says what to
    install in one line."""
    import importlib.util
    import subprocess
    import sys

    help_text = subprocess.run([sys.executable, "-m", "agentgym_bench.cli", "openenv-serve", "--help"],
                               capture_output=True, text=True, timeout=120)
    assert help_text.returncode == 0 and "--max-sessions" in help_text.stdout
    if importlib.util.find_spec("openenv") is None:
        out = subprocess.run([sys.executable, "-m", "agentgym_bench.cli", "openenv-serve"], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 2
        assert "pip install 'agentgym-bench[openenv]'" in out.stderr and out.stderr.count("\n") == 1
