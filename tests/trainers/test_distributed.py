"""Scale-out: under ``torchrun --nproc_per_node 2`` (gloo, CPU) one update equals the one-process update on the same
global batch, and the whole loop runs."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from tests.trainers.ddp_check import one_update
from trainers.metrics import read_metrics

SCRIPT = Path(__file__).with_name("ddp_check.py")


@pytest.mark.skipif(shutil.which("torchrun", path=str(Path(sys.executable).parent)) is None,
                    reason="torchrun not installed next to the interpreter")
def test_two_processes_make_the_same_update_as_one(tiny_model, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(SCRIPT.parents[2])}
    torchrun = str(Path(sys.executable).parent / "torchrun")
    # own session: on a timeout the workers are killed with torchrun instead of being left behind
    with subprocess.Popen([torchrun, "--standalone", "--nproc_per_node", "2", str(SCRIPT), str(tiny_model),
                           str(tmp_path), "--loop"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, start_new_session=True) as process:
        try:
            _, stderr = process.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
    assert process.returncode == 0, stderr[-3000:]
    initial = AutoModelForCausalLM.from_pretrained(tiny_model).state_dict()
    for preset in ("starpo_s", "gigpo"):
        one_update(tiny_model, tmp_path, preset)  # one thread (conftest), as the torchrun workers: same rollouts
        one, two = torch.load(tmp_path / f"{preset}-world1.pt"), torch.load(tmp_path / f"{preset}-world2.pt")
        # Adam divides by sqrt(v): a gradient entry near eps turns float noise (micro-batches are split and padded
        # differently) into up to a few % of one lr-sized step, hence atol 1e-4 at lr 1e-3. The moved weights move by
        # ~1e-3 per step; the loss and gradient norm (which a wrong DDP scaling would change) match to 1e-4.
        moved = max(float((one["actor"][k] - initial[k]).abs().max()) for k in initial)
        assert moved > 1e-3
        for part in ("actor", "critic") if preset == "starpo_s" else ("actor",):
            for name, value in one[part].items():
                torch.testing.assert_close(two[part][name], value, rtol=1e-4, atol=1e-4)
        for key in ("loss/policy", "loss/entropy", "loss/grad_norm", "reward/advantage_abs"):
            assert two["metrics"][key] == pytest.approx(one["metrics"][key], rel=1e-4, abs=1e-6), key
    records = read_metrics(tmp_path / "loop" / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2]
    assert (tmp_path / "loop" / "checkpoint-2" / "rng_rank1.pt").exists()
