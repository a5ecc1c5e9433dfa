"""What pyproject.toml declares is what the code uses."""

import os
import re
import subprocess
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


EXTRA_MODULES = {"openenv-core": "openenv", "gem-llm": "gem"}
"""Import name of an optional dependency where it differs from the distribution's name."""

BLOCKED_RUN = """
import sys

class Hidden:
    \"\"\"A meta-path finder that does not find the blocked packages, as if they were not installed.\"\"\"
    def __init__(self, finder):
        self.finder = finder
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            return None
        return self.finder.find_spec(name, path, target)
    def __getattr__(self, name):  # find_distributions, invalidate_caches: the finder's own
        return getattr(self.finder, name)

BLOCKED = set(sys.argv[1].split(","))
sys.meta_path[:] = [Hidden(f) if hasattr(f, "find_spec") else f for f in sys.meta_path]
from agentgym_bench.cli import main
for command in sys.argv[2:]:
    code = main(command.split())
    if code:
        sys.exit(code)
"""


def test_the_core_install_runs_init_model_and_the_two_player_suite(tmp_path):
    """With every optional dependency unimportable (what `pip install agentgym-bench` gives), the first commands of
    the README run: the default model's vocabulary reads every env, Bargain included."""
    core = {_name(r) for r in PROJECT["dependencies"]}
    optional = {_name(r) for extra in PROJECT["optional-dependencies"].values() for r in extra} - core
    blocked = sorted(EXTRA_MODULES.get(name, name).replace("-", "_") for name in optional)
    commands = [f"init-model --path {tmp_path / 'model'}",
                f"eval --policy random --suite agentgym-ma-v1 --out {tmp_path / 'ma.json.gz'}"]
    run = subprocess.run([sys.executable, "-c", BLOCKED_RUN, ",".join(blocked), *commands], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "AGENTGYM_BENCH_HOME": str(tmp_path / "home")})
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "model" / "config.json").exists() and (tmp_path / "ma.json.gz").exists()
