"""``dtype: auto`` (trainers/runtime/compute_dtype.py): the probe times real forward + backward passes and leaves the
model and the random state as it found them; a run records its choice, keeps it on resume, and computes in it."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

from agentgym_bench import run_folder
from tests.trainers.conftest import tiny_config_dict
from trainers.rl.config import ConfigError, config_from_dict
from trainers.rl.train import main
from trainers.runtime import compute_dtype


@pytest.fixture
def model(tiny_model):
    from agentgym_bench.rollout.hf import load_model

    return load_model(str(tiny_model))[0]


def test_the_probe_times_both_dtypes_and_chooses_by_its_margin(model):
    record = compute_dtype.probe(model, torch.device("cpu"), rounds=1)
    assert record["float32_s"] > 0 and record["bfloat16_s"] > 0
    faster = record["float32_s"] / record["bfloat16_s"] >= compute_dtype.MARGIN
    assert record["dtype"] == ("bfloat16" if faster else "float32")
    assert "this CPU" in record["reason"]


def test_a_probe_step_leaves_no_gradients_no_mode_change_and_no_random_state(model):
    model.train()
    before = torch.get_rng_state()
    weights = [p.detach().clone() for p in model.parameters()]
    assert compute_dtype.time_step(model, torch.device("cpu"), "bfloat16", rows=4, length=8, reps=2) > 0
    assert all(p.grad is None for p in model.parameters())
    assert model.training
    assert torch.equal(torch.get_rng_state(), before)
    assert all(torch.equal(p, w) for p, w in zip(model.parameters(), weights, strict=True))


def test_resolve_keeps_a_fixed_dtype_and_reads_a_recorded_choice_only_when_resuming(tmp_path, model):
    cpu = torch.device("cpu")
    assert compute_dtype.resolve("float32", cpu, tmp_path, model, is_main=True, resumed=False) == "float32"
    assert not (tmp_path / compute_dtype.FILE).exists()
    # a CPU probe needs the model
    assert compute_dtype.resolve("auto", cpu, tmp_path, None, is_main=True, resumed=False) == "auto"
    (tmp_path / compute_dtype.FILE).write_text(json.dumps({"dtype": "bfloat16"}))  # what a run wrote before resuming
    assert compute_dtype.resolve("auto", cpu, tmp_path, None, is_main=True, resumed=True) == "bfloat16"
    # a fresh run in the same folder measures again and replaces the record with its own
    chosen = compute_dtype.resolve("auto", cpu, tmp_path, model, is_main=True, resumed=False)
    record = json.loads((tmp_path / compute_dtype.FILE).read_text())
    assert record["dtype"] == chosen and record["float32_s"] > 0 and record["bfloat16_s"] > 0


def test_a_run_with_dtype_auto_records_its_choice_and_trains_in_it(tiny_model, tmp_path):
    out = tmp_path / "run"
    main(config_from_dict(tiny_config_dict(tiny_model, out, "starpo", max_steps=1, eval_steps=1, save_steps=1,
                                           dtype="auto")))
    record = json.loads((out / compute_dtype.FILE).read_text())
    assert record["dtype"] in ("float32", "bfloat16") and record["float32_s"] > 0
    assert yaml.safe_load((out / run_folder.CONFIG).read_text())["dtype"] == record["dtype"]


def test_bfloat16_autocast_runs_on_a_cpu(tiny_model, tmp_path):
    """``dtype: bfloat16`` computes in bfloat16 on a CPU too (it used to mean float32 there), weights kept float32."""
    out = tmp_path / "run"
    result = main(config_from_dict(tiny_config_dict(tiny_model, out, "starpo", max_steps=1, eval_steps=1,
                                                    save_steps=1, dtype="bfloat16")))
    assert result.records[-1]["step"] == 1
    from safetensors.torch import load_file

    saved = load_file(run_folder.final_actor(out) / "model.safetensors")
    assert {t.dtype for t in saved.values()} == {torch.float32}


def test_dtype_names_are_checked():
    with pytest.raises(ConfigError, match="dtype"):
        config_from_dict({"dtype": "fp16"})
