"""What pyproject.toml declares is what the code uses."""

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
IMPORT_NAMES = {"pyyaml": "yaml"}
USED_INDIRECTLY = {"safetensors": "transformers' save_pretrained writes model.safetensors with it"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def _imported(module: str) -> bool:
    pattern = re.compile(rf"^\s*(import|from) {re.escape(module)}\b", re.MULTILINE)
    return any(pattern.search(path.read_text()) for folder in ("agentgym_bench", "trainers")
               for path in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("requirement", PROJECT["dependencies"])
def test_every_core_dependency_is_imported(requirement):
    name = _name(requirement)
    if name in USED_INDIRECTLY:
        return
    assert _imported(IMPORT_NAMES.get(name, name).replace("-", "_")), f"{requirement} is declared but never imported"


def test_vllm_has_a_tested_upper_bound():
    (vllm,) = PROJECT["optional-dependencies"]["vllm"]
    assert re.fullmatch(r"vllm>=\d+\.\d+,<\d+\.\d+", vllm), vllm
