"""Learning, as a user would see it (slow: minutes per run; ``pytest -m slow tests/trainers/test_learning.py``).

From the warm-started default model on CPU, each bundled config (StarPO, StarPO-S, GiGPO on FrozenLake and Sokoban)
must raise validation success, the gain separated by its 95% confidence interval over the config's validation
episodes (>= 256). The warm start is the one ``agentgym-bench warmstart`` writes to its default folder; it is made
first if missing (about 10 minutes). Measured results and wall times: docs/trainers.md.
"""

from pathlib import Path

import pytest

from trainers.cli import CONFIG_DIR
from trainers.config import load_config
from trainers.metrics import success_gain
from trainers.train import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def warm_model() -> Path:
    from agentgym_bench.paths import model_dir
    from agentgym_bench.rollout.warmstart import WarmStartConfig, warm_start

    if not (model_dir("warmstart") / "warmstart.json").exists():
        warm_start(WarmStartConfig(), progress=True)
    return model_dir("warmstart")


@pytest.mark.parametrize("env", ["frozenlake", "sokoban"])
@pytest.mark.parametrize("algorithm", ["starpo", "starpo_s", "gigpo"])
def test_training_raises_validation_success(algorithm, env, warm_model, tmp_path):
    config = load_config(CONFIG_DIR / f"{algorithm}-{env}.yaml",
                         [f"pretrain={warm_model}", f"output_dir={tmp_path}", "progress=false"])
    result = main(config)
    gain = success_gain(result.first_eval, result.last_eval)
    assert gain["n_before"] >= 256
    assert gain["ci_low"] > 0, gain
    assert (tmp_path / "curves.png").exists()
