"""Scale-out: under ``torchrun --nproc_per_node 2`` (gloo, CPU) one update equals the one-process update on the same
global batch, with DDP and with FSDP2; the whole loop runs; an FSDP2 run killed with SIGKILL resumes to the same
weights and metrics as an uninterrupted one."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from tests.trainers.ddp_check import one_update
from trainers.runtime.metrics import read_metrics

SCRIPT = Path(__file__).with_name("ddp_check.py")
TORCHRUN = Path(sys.executable).parent / "torchrun"
pytestmark = pytest.mark.skipif(shutil.which("torchrun", path=str(TORCHRUN.parent)) is None,
                                reason="torchrun not installed next to the interpreter")


def torchrun(*args: str, kill_when: Path | None = None) -> None:
    """``torchrun --nproc_per_node 2 ddp_check.py ARGS`` in its own session (on a timeout the workers die with it);
    with ``kill_when``, SIGKILL the whole job as soon as that file exists."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(SCRIPT.parents[2])}
    with subprocess.Popen([str(TORCHRUN), "--standalone", "--nproc_per_node", "2", str(SCRIPT), *args], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        if kill_when is not None:
            deadline = time.time() + 600
            while not kill_when.exists():
                assert process.poll() is None, "the run ended before its checkpoint: " + process.stderr.read()[-2000:]
                assert time.time() < deadline, "no checkpoint within 600 s"
                time.sleep(0.02)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return
        try:
            _, stderr = process.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
    assert process.returncode == 0, stderr[-3000:]


def check_updates_match(tiny_model: Path, out: Path, suffix: str) -> None:
    initial = AutoModelForCausalLM.from_pretrained(tiny_model).state_dict()
    for preset in ("starpo_s", "gigpo"):
        if not (out / f"{preset}-world1.pt").exists():
            one_update(tiny_model, out, preset)  # one thread (conftest), as the torchrun workers: same rollouts
        one, two = torch.load(out / f"{preset}-world1.pt"), torch.load(out / f"{preset}-world2{suffix}.pt")
        # The weights move by ~1e-3 per step (lr 1e-3) and match to 1e-5, except GPT-2's attention *key* bias: its
        # gradient is exactly 0 in exact arithmetic (a softmax does not change when every logit of a row moves by
        # the same q.b_k), so it holds float noise that differs with the micro-batch split, and Adam, dividing by
        # sqrt(v), turns noise into steps of random sign up to lr. The loss and gradient norm (which a wrong gradient
        # scaling or a per-shard clipping norm would change) match to 1e-4.
        moved = max(float((one["actor"][k] - initial[k]).abs().max()) for k in initial)
        assert moved > 1e-3
        for part in ("actor", "critic") if preset == "starpo_s" else ("actor",):
            assert set(two[part]) == set(one[part])
            for name, value in one[part].items():
                other = two[part][name]
                if name.endswith("attn.c_attn.bias"):  # [query | key | value]: leave out the key part
                    third = len(value) // 3
                    value, other = torch.cat([value[:third], value[2 * third:]]), torch.cat(
                        [other[:third], other[2 * third:]])
                torch.testing.assert_close(other, value, rtol=1e-5, atol=1e-5)
        for key in ("loss/policy", "loss/entropy", "loss/grad_norm", "reward/advantage_abs"):
            assert two["metrics"][key] == pytest.approx(one["metrics"][key], rel=1e-4, abs=1e-6), key


def test_two_processes_make_the_same_update_as_one_with_ddp_and_fsdp2(tiny_model, tmp_path):
    """One launch for both strategies (torchrun's start-up is a good part of the time). FSDP2 runs on CPU with gloo
    (torch 2.13): sharded parameters, gradients and AdamW states, the norm of the whole sharded gradient, generation
    from the gathered weights; its checkpoint is an ordinary Hugging Face folder."""
    torchrun(str(tiny_model), str(tmp_path), "--loop", "--strategies", "ddp,fsdp2")
    check_updates_match(tiny_model, tmp_path, "")
    check_updates_match(tiny_model, tmp_path, "-fsdp2")
    for strategy in ("ddp", "fsdp2"):
        run = tmp_path / f"loop-{strategy}"
        assert [r["step"] for r in read_metrics(run / "metrics.jsonl")] == [0, 1, 2]
        assert (run / "checkpoint-2" / "rng_rank1.pt").exists()
        assert (run / "checkpoint-2" / "critic" / "config.json").exists()
        actor = run / "checkpoint-2" / "actor"
        assert type(AutoModelForCausalLM.from_pretrained(actor)).__name__ == "GPT2LMHeadModel"
        assert '"GPT2LMHeadModel"' in (actor / "config.json").read_text()  # not FSDP's subclass


@pytest.mark.slow
@pytest.mark.parametrize("lora", [False, True])
def test_an_fsdp2_run_killed_with_sigkill_resumes_to_the_same_weights(tiny_model, tmp_path, lora):
    """StarPO-S (actor and critic sharded), also with LoRA adapters on both (sharded with their frozen base)."""
    if lora:
        pytest.importorskip("peft", reason="peft is not installed (pip install -e '.[lora]')")
    run = ["max_steps=4", "save_steps=2", "eval_steps=2", "save_total_limit=1", "strategy=fsdp2",
           "train_env_manager.num_env_groups=2", "rollout_batch_size=8", "ppo_mini_batch_size=4"]
    run += ["lora_target=all", "lora_rank=4", "learning_rate=1e-2"] if lora else []
    torchrun(str(tiny_model), str(tmp_path), "--loop-run", "killed", *run,
             kill_when=tmp_path / "killed" / "checkpoint-2" / "trainer_state.pt")
    assert not (tmp_path / "killed" / "checkpoint-4").exists(), "the run finished before it could be killed"
    torchrun(str(tiny_model), str(tmp_path), "--loop-run", "killed", *run, "resume_from_checkpoint=auto")
    torchrun(str(tiny_model), str(tmp_path), "--loop-run", "straight", *run)
    strip = lambda records: [{k: v for k, v in r.items() if not k.startswith("time/")} for r in records]  # noqa: E731
    resumed = strip(read_metrics(tmp_path / "killed" / "metrics.jsonl"))
    assert [r["step"] for r in resumed] == [0, 1, 2, 3, 4]
    assert resumed == strip(read_metrics(tmp_path / "straight" / "metrics.jsonl"))
    for part in ("actor", "critic"):
        a = AutoModelForCausalLM.from_pretrained(tmp_path / "killed" / "checkpoint-4" / part).state_dict()
        b = AutoModelForCausalLM.from_pretrained(tmp_path / "straight" / "checkpoint-4" / part).state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a)
