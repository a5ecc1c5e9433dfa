"""Smoke test of an installed agentgym-bench, run outside the clone (``scripts/wheel_check.sh``: in a fresh venv).

It checks what a user of the wheel meets first: the package imports from site-packages, every agent env id makes and
resets (WebShop reads its bundled catalogue), the bundled suites, results schema, board page and trainer configs are
there, ``agentgym-bench --help`` works, and the oracle plays a tiny suite (2 episodes of 2 entries) into a results
file that the schema accepts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

import gymnasium as gym

import agentgym_bench
from agentgym_bench.benchmark.results import read_results
from agentgym_bench.benchmark.suites import available_suites
from agentgym_bench.registration import AGENT_ENVS


def main() -> None:
    assert "site-packages" in agentgym_bench.__file__, f"imported from {agentgym_bench.__file__}, not the install"
    for env_id in AGENT_ENVS:
        env = gym.make(env_id)
        obs, _ = env.reset(seed=0)
        assert isinstance(obs, str) and obs, env_id
        env.close()
    print(f"made and reset {len(AGENT_ENVS)} agent envs")

    assert {"agentgym-v2", "agentgym-v2-validation", "agentgym-ma-v2"} <= set(available_suites())
    for package, name in [("agentgym_bench.benchmark", "results.schema.json"), ("agentgym_bench.leaderboard",
                                                                               "page.html")]:
        assert resources.files(package).joinpath(name).is_file(), name
    assert any(p.name.endswith(".yaml") for p in resources.files("trainers").joinpath("configs").iterdir())

    cli = Path(sys.executable).with_name("agentgym-bench")
    for args in (["--help"], ["train", "--list"]):
        out = subprocess.run([str(cli), *args], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
    print("agentgym-bench --help and train --list work")

    with tempfile.TemporaryDirectory() as tmp:
        suite = json.loads(resources.files("agentgym_bench.benchmark").joinpath(
            "data/agentgym-v2-validation.json").read_text())
        suite["entries"] = [dict(entry, episodes=2) for entry in suite["entries"]
                            if entry["env_id"] in ("AgentBandit-v0", "AgentFrozenLake-v0")]
        suite_file = Path(tmp) / "tiny-suite.json"
        suite_file.write_text(json.dumps(suite))
        results_file = Path(tmp) / "oracle.json.gz"
        out = subprocess.run([str(cli), "eval", "--policy", "oracle", "--suite", str(suite_file), "--out",
                              str(results_file)], capture_output=True, text=True, timeout=600, cwd=tmp)
        assert out.returncode == 0, out.stdout + out.stderr
        results = read_results(results_file)
        assert [len(e.episodes) for e in results.entries] == [2, 2], results.entries
    print("the oracle played a tiny suite into a valid results file")
    where = Path(agentgym_bench.__file__).parent
    print(f"wheel smoke test passed: agentgym-bench {agentgym_bench.__version__} from {where}")


if __name__ == "__main__":
    main()
