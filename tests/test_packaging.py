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


EXTRA_MODULES = {"gem-llm": "gem"}
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


PACKAGE_DATA = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["*"]


def data_files() -> list[str]:
    """The files of the packages that are not Python, as git tracks them (``agentgym_bench/...``, ``trainers/...``)."""
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "agentgym_bench", "trainers"], capture_output=True,
                         text=True, timeout=60)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [f for f in out.stdout.split() if not f.endswith(".py")]


def test_every_data_file_of_the_packages_is_package_data():
    """Suites, the results schema, the board page, the WebShop catalogue, trainer configs: a file the code reads at
    run time goes into the wheel only if a package-data pattern names it."""
    from fnmatch import fnmatch

    files = data_files()
    assert {"agentgym_bench/benchmark/results.schema.json", "agentgym_bench/leaderboard/page.html",
            "agentgym_bench/benchmark/data/agentgym-v2.json"} <= set(files)
    missed = [f for f in files if not any(fnmatch(Path(f).name, pattern) for pattern in PACKAGE_DATA)]
    assert not missed, f"not in pyproject's package-data, so not in the wheel: {missed}"


def test_readme_and_docs_install_from_a_clone():
    """agentgym-bench is not on PyPI: no install line names it alone; they install a clone (``pip install -e
    '.[trl]'``), or an extra of the package once it is installed (``pip install 'agentgym-bench[trl]'``, which pip
    takes from the installed package's metadata)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    wrong = [f"{p.name}: {line.strip()}" for p in pages for line in p.read_text().splitlines()
             if re.search(r"pip install [^`]*agentgym-bench(?!\[)", line)]
    assert not wrong, wrong


def build_wheel(out: Path) -> Path:
    pytest.importorskip("build", reason="the wheel tests need build: pip install build")
    # From out, not the clone: the clone's build/ folder (setuptools' work folder) would shadow the `build` package.
    run = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)], cwd=out,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (wheel,) = out.glob("agentgym_bench-*.whl")
    return wheel


@pytest.mark.slow
def test_the_wheel_holds_the_data_files_and_the_command(tmp_path):
    """``python -m build`` makes a wheel (about 30 s) with every data file and the ``agentgym-bench`` command."""
    import zipfile

    wheel = zipfile.ZipFile(build_wheel(tmp_path))
    names = set(wheel.namelist())
    missing = [f for f in data_files() if f not in names]
    assert not missing, f"data files missing from the wheel: {missing}"
    assert "agentgym_bench/cli.py" in names and "trainers/cli.py" in names
    assert not [n for n in names if n.startswith(("tests/", "leaderboards/", "benchmarks/"))]
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "agentgym-bench = agentgym_bench.cli:main" in wheel.read(entry_points).decode()
    (licence,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert wheel.read(licence).decode().startswith("MIT License")
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    assert "License-Expression: MIT" in wheel.read(metadata).decode()


@pytest.mark.slow
def test_the_wheel_installs_in_a_fresh_venv_and_passes_the_smoke_test(tmp_path):
    """``scripts/wheel_check.sh``: build, install into a new venv (torch's CPU wheel first), and from outside the
    clone import, make every env, ``agentgym-bench --help``, the oracle on a tiny suite. Minutes: pip installs the
    dependencies."""
    pytest.importorskip("build", reason="the wheel tests need build: pip install build")
    run = subprocess.run(["bash", str(ROOT / "scripts" / "wheel_check.sh"), str(tmp_path / "work")],
                         capture_output=True, text=True, timeout=1800, env={**os.environ, "PYTHON": sys.executable})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "wheel smoke test passed" in run.stdout
