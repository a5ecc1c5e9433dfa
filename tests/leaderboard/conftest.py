"""Fixtures of the leaderboard tests: a tiny suite (two entries, a few test seeds each), honest results files for
it (oracle, random and the default model), and a helper that hashes a whole folder."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from agentgym_bench.benchmark.evaluate import evaluate_suite
from agentgym_bench.benchmark.results import dumps
from agentgym_bench.benchmark.suites import load_suite
from agentgym_bench.rollout.specs import Sampling, policy_from_spec

TINY_SUITE = {
    "name": "tiny", "version": 3, "split": "test", "seed_start": 1_000_000_000,
    "description": "two entries of the test range, for fast leaderboard tests",
    "entries": [
        {"name": "bandit", "env_id": "AgentBandit-v0", "env_kwargs": {}, "prompts": ["ragen", "compact"],
         "episodes": 12, "oracle_success": 1.0},
        {"name": "sokoban-6x6", "env_id": "AgentSokoban-v0", "env_kwargs": {}, "prompts": ["ragen", "compact"],
         "episodes": 8, "oracle_success": 1.0},
    ],
}


@pytest.fixture(scope="session")
def suite_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("suite") / "tiny.json"
    path.write_text(json.dumps(TINY_SUITE))
    return path


@pytest.fixture(scope="session")
def suite(suite_file):
    return load_suite(str(suite_file))


def play(spec: str, suite, **kwargs) -> bytes:
    """The bytes of a results file of ``spec`` on ``suite``."""
    sampling = kwargs.pop("sampling", Sampling(seed=7))
    policy, record = policy_from_spec(spec, sampling)
    return dumps(evaluate_suite(policy, suite, record, **kwargs))


@pytest.fixture(scope="session")
def oracle_bytes(suite) -> bytes:
    return play("oracle", suite)


@pytest.fixture(scope="session")
def random_bytes(suite) -> bytes:
    return play("random", suite)


TRAINER = {"algorithm": "gigpo", "config": {"preset": "gigpo", "learning_rate": 1e-4, "max_steps": 3},
           "curves": {"reward/success": [[1, 0.25], [2, 0.5], [3, 0.5]], "val/success": [[0, 0.25], [3, 0.75]],
                      "val/AgentBandit-v0/success": [[0, 0.5], [3, 1.0]],
                      "loss/entropy": [[1, 2.0], [2, 1.5], [3, 1.0]]},
           "selection": "the final checkpoint, fixed before the test read"}
"""A trainer record as ``agentgym-bench eval --trained-by`` writes it (benchmark.provenance.training_record)."""


@pytest.fixture(scope="session")
def trained_bytes(suite) -> bytes:
    """Random play, recorded as an endpoint's replies (kind ``openai``: replayed, never re-generated) of a model a
    reference trainer made: the board shows what files report (a model-free file may report no training)."""
    data = json.loads(gzip.decompress(play("random", suite, trainer=TRAINER)))
    data["metadata"]["policy"].update(kind="openai", model="my-trained-model")
    return gzip.compress(json.dumps(data).encode(), mtime=0)


@pytest.fixture(scope="session")
def models(model_dir, tmp_path_factory) -> tuple[Path, Path]:
    """Two default models that differ only in the seed of their weights (0: the session's ``model_dir``, and 1)."""
    from trainers.sft.default_model import build_default_model

    return model_dir, build_default_model(tmp_path_factory.mktemp("model-b") / "b", seed=1)


@pytest.fixture(scope="session")
def hf_bytes(suite, models) -> bytes:
    """The default model (seed 0 weights) on the tiny suite, compact prompt, current observation only."""
    return play(f"hf:{models[0]}", suite, sampling=Sampling(max_new_tokens=16, seed=3), prompt="compact", history=0)


def tree_digest(folder: Path) -> str:
    """SHA-256 over every file's relative path and bytes under ``folder`` (``"absent"`` if it does not exist)."""
    if not folder.exists():
        return "absent"
    digest = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        digest.update(p.relative_to(folder).as_posix().encode() + b"\0")
        if p.is_file():
            digest.update(p.read_bytes())
    return digest.hexdigest()
