"""The code of docs/integrations.md, run as written: the 20-line trainer loop, and with trl installed the two TRL
blocks; the openenv-serve command's --help and its missing-package message; install lines that work in a clone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from agentgym_bench.paths import model_dir
from trainers.sft.default_model import build_default_model

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def python_block(heading: str) -> str:
    """The first Python block after ``heading`` in the page."""
    section = DOC.read_text().split(heading, 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def trainer_loop() -> str:
    return python_block("## A hand-written trainer")


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
        assert "pip install -e '.[openenv]'" in out.stderr and out.stderr.count("\n") == 1


def test_install_lines_work_in_a_clone():
    """The package is not on PyPI: every pip line installs the clone (``-e .``, ``-e '.[extra]'``)."""
    for line in re.findall(r"pip install [^`\n]*", DOC.read_text()):
        assert re.match(r"pip install -e (\.|'\.\[\w+\]')(\s|$)", line), line


def run_block(code: str, tmp_path, monkeypatch) -> dict:
    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(tmp_path))
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    with torch.random.fork_rng(devices=[]):
        exec(compile(code, str(DOC), "exec"), scope)
    return scope


def test_the_trl_rollout_func_block_runs(tmp_path, monkeypatch):
    pytest.importorskip("trl", reason="the TRL route needs trl: pip install -e '.[trl]'")
    torch.set_num_threads(1)
    build_default_model(tmp_path / "models" / "default")
    scope = run_block(python_block("### `rollout_func`"), tmp_path, monkeypatch)
    assert scope["trainer"].state.global_step == 2


def test_the_trl_environment_factory_block_runs(tmp_path, monkeypatch):
    """As written, with the hub model replaced by a local one that writes tool calls (nothing downloads here)."""
    pytest.importorskip("trl", reason="the TRL route needs trl: pip install -e '.[trl]'")
    from agentgym_bench.rollout.hf import load_model
    from tests.adapters.tool_model import tool_calling

    torch.set_num_threads(1)
    model, tokenizer = tool_calling(*load_model(build_default_model(tmp_path / "default")))
    model.save_pretrained(tmp_path / "tools")
    tokenizer.save_pretrained(tmp_path / "tools")
    code = python_block("### `environment_factory`")
    assert 'model_id = "Qwen/Qwen3-0.6B"' in code
    scope = run_block(code.replace('"Qwen/Qwen3-0.6B"', repr(str(tmp_path / "tools"))), tmp_path, monkeypatch)
    assert scope["trainer"].state.global_step == 2
