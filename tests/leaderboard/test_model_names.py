"""A results file names its model as the user did (a trainer run folder, as the checkpoint it played; a name under the
home); verification resolves it the same way eval did, so such entries can be re-generated and marked
*reproduced*."""

from pathlib import Path

import pytest

from agentgym_bench.benchmark.evaluate import evaluate_suite
from agentgym_bench.benchmark.results import dumps
from agentgym_bench.leaderboard.verify import REPRODUCED, verify
from agentgym_bench.rollout.specs import Sampling, local_model_path, policy_from_spec
from tests.benchmark.conftest import suite_of
from trainers.sft.default_model import ModelSize, build_default_model

SMALL = ModelSize(n_layer=1, n_embd=32, n_head=2, n_positions=256)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    root = tmp_path_factory.mktemp("home")
    build_default_model(root / "models" / "mine", size=SMALL, seed=3)
    run = root / "run"
    build_default_model(run / "checkpoint-2" / "actor", size=SMALL, seed=4)
    (run / "checkpoint-1" / "actor").mkdir(parents=True)  # incomplete: no config.json
    (run / "config.yaml").write_text("preset: starpo\nmax_steps: 2\n")
    return root


@pytest.mark.parametrize("target", ["run", "mine"])
def test_named_models_are_re_generated(home, target, monkeypatch):
    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(home))
    monkeypatch.chdir(home)
    suite = suite_of(["bandit", "frozenlake"], 3)
    policy, record = policy_from_spec(f"hf:{target}", Sampling(max_new_tokens=8, seed=1))
    # recorded as named, not as this machine's absolute path; a run folder as the checkpoint it played, which stays
    assert record["model"] == ("run/checkpoint-2/actor" if target == "run" else target)
    expected = home / "run" / "checkpoint-2" / "actor" if target == "run" else home / "models" / "mine"
    assert Path(local_model_path(target)).resolve() == expected.resolve()
    results = evaluate_suite(policy, suite, record, prompt="compact", history=0)
    verified = verify(dumps(results), suite)
    assert verified.mark == REPRODUCED, verified.regeneration
    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(home / "elsewhere"))
    if target == "mine":  # the name resolves nowhere now: replayed, with the reason
        verified = verify(dumps(results), suite)
        assert verified.mark != REPRODUCED and "not on this machine" in verified.regeneration
