"""Docs that are generated from code must match the code."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_env_docs_are_up_to_date():
    spec = importlib.util.spec_from_file_location("gen_env_docs", ROOT / "scripts" / "gen_env_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "envs.md").read_text() == module.render(), \
        "docs/envs.md is stale: run .venv/bin/python scripts/gen_env_docs.py"
