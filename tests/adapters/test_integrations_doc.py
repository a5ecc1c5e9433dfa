"""The hand-written trainer loop of docs/integrations.md is at most 20 lines and runs as written."""

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
