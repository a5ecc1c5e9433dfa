"""scripts/gpu_check.py, the GPU trainers' offline check (issue 48): its pieces here, and its CPU mode end to end
(``-m slow``). The GPU run itself happens on a lent GPU machine (docs/trainers.md, GPU section)."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_template_is_qwen3s_as_the_token_tests_use_it(gpu_check):
    from tests.rollout.test_tokens import QWEN3

    assert gpu_check.QWEN3_TEMPLATE.read_text() == QWEN3


@pytest.mark.parametrize("tiny", [True, False])
def test_every_run_config_is_valid(gpu_check, tiny, tmp_path):
    from trainers.rl.config import config_from_dict

    args = gpu_check.parse(["--device", "cpu" if tiny else "cuda"] + (["--tiny"] if tiny else []))
    for preset, extra in [("starpo", {}), ("starpo_s", {}), ("gigpo", {}), ("starpo_s", {"strategy": "fsdp2"}),
                          ("starpo_s", {"lora_target": "all", "lora_rank": 16})]:
        config = config_from_dict(gpu_check.train_config(args, tmp_path, tmp_path / "run", preset, **extra))
        assert config.gradient_checkpointing and config.dtype == "bfloat16" and config.generation_backend == "hf"
        assert config.token_in_token_out == (preset != "gigpo")


def test_the_bf16_peak_comes_from_the_card_name(gpu_check):
    assert gpu_check.bf16_peak("NVIDIA H100 80GB HBM3") == 989e12
    assert gpu_check.bf16_peak("NVIDIA H100 PCIe") == 756e12
    assert gpu_check.bf16_peak("NVIDIA H200") == 989e12
    assert gpu_check.bf16_peak("NVIDIA L40S") == 362e12
    assert gpu_check.bf16_peak("Some Future Card") is None


def test_the_tokenizer_is_byte_level_bpe_with_qwen3s_template(gpu_check):
    tokenizer = gpu_check.build_tokenizer(gpu_check.TINY, tiny=True)
    text = "Sokoban ünïcode ☃ 12345\n<think>x</think><answer>Left</answer>"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text and len(ids) < len(text.encode())
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    assert tokenizer.convert_tokens_to_ids("<think>") != tokenizer.unk_token_id


@pytest.mark.slow
def test_the_cpu_mode_runs_every_check(tmp_path):
    """The whole script on a tiny model on this CPU (~2 minutes): training with each algorithm, checkpoint and
    resume, FSDP2 under torchrun (gloo), LoRA, token-in-token-out, eval twice, asynchronous rollouts, pytest -m gpu."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--device", "cpu", "--tiny",
                           "--work", str(tmp_path)], capture_output=True, text=True, timeout=1500, cwd=ROOT)
    lines = re.findall(r"^\[gpu-check\] ([\w-]+): (ok|FAIL)", done.stdout, re.MULTILINE)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    names = [name for name, _ in lines]
    for name in ("imports", "device", "model", "starpo_s", "tito-qwen3", "starpo", "gigpo", "fsdp2", "lora", "eval",
                 "async", "pytest-gpu"):
        assert (name, "ok") in lines, names
    assert "summary: 12 ok, 0 FAIL" in done.stdout


def test_checks_past_the_budget_are_named_with_the_command_that_runs_them(gpu_check, capsys):
    """A lent machine takes one command of at most 10 minutes: what the budget stopped is named as a second one."""
    checks = gpu_check.Checks(budget=0.0, only=None)
    checks.results.append(gpu_check.Result("imports", True, 1.0, "ok"))
    checks.run("starpo", lambda: "ran")
    checks.run("async", lambda: "ran")
    args = gpu_check.parse(["--device", "cpu", "--tiny"])
    assert gpu_check.summary(checks, args, None) == 1
    out = capsys.readouterr().out
    assert "starpo: FAIL" in out and "not run: past the budget of 0 s" in out
    assert "bash scripts/gpu_check.sh --only starpo,async" in out


def test_only_takes_the_checks_main_runs_and_refuses_any_other_name(gpu_check):
    """A typo in ``--only`` (``fsdp`` for ``fsdp2``) ran nothing it asked for and summed up as a pass."""
    source = (ROOT / "scripts" / "gpu_check.py").read_text()
    assert set(re.findall(r'checks\.run\("([\w-]+)"', source)) == set(gpu_check.CHECK_NAMES)
    with pytest.raises(SystemExit):
        gpu_check.parse(["--only", "fsdp"])
    assert gpu_check.parse(["--only", "fsdp2,lora"]).only == "fsdp2,lora"


def test_the_gpu_smoke_runs_overrides_make_valid_configs_of_both_recipes(tmp_path):
    """``scripts/gpu_smoke.sh`` shrinks the Qwen recipes with one line of overrides; both recipes set their own
    validation groups, which a smaller ``val_batch_size`` alone contradicts."""
    from trainers.rl.config import load_config

    small = re.search(r'^SMALL="([^"]+)"', (ROOT / "scripts" / "gpu_smoke.sh").read_text(), re.M)[1].split()
    for recipe in ("starpo_s-sokoban-qwen2.5-0.5b-gpu", "starpo_s-sokoban-qwen3-0.6b-gpu"):
        config = load_config(ROOT / "trainers" / "configs" / f"{recipe}.yaml", [*small, f"output_dir={tmp_path}"])
        assert config.max_steps == 2 and config.val_batch_size == 16
