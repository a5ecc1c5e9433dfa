"""LoRA through peft (``lora_target``): a clear error without the extra; the merge equals peft's own; a run trains
only adapters (and the critic's value head), its KL reference is the base, its checkpoints keep adapters and its
actor folder is the merged plain model that ``hf:RUN_FOLDER`` evaluates; a LoRA run resumes to the same result.

The tests that need peft skip without it (``pip install -e '.[lora]'``)."""

import copy
import json
import math
import shutil
import sys

import pytest
import torch
from transformers import AutoModelForCausalLM

from tests.trainers.conftest import tiny_config_dict
from trainers.rl.config import ConfigError, config_from_dict
from trainers.rl.train import main
from trainers.runtime.metrics import read_metrics

try:
    import peft  # noqa: F401
except ImportError:
    peft = None
needs_peft = pytest.mark.skipif(peft is None, reason="peft is not installed (pip install -e '.[lora]')")


def lora_config(model, out, preset="starpo", **overrides):
    return config_from_dict(tiny_config_dict(model, out, preset, lora_target="all", lora_rank=4,
                                             learning_rate=1e-2, **overrides))


def test_without_peft_the_error_names_the_extra(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "peft", None)  # an import of peft now fails, installed or not
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[lora\]'"):
        main(lora_config(tiny_model, tmp_path))


def test_lora_target_reads_as_roll_reads_it():
    from trainers.runtime.lora import target_modules

    assert target_modules("all") == "all-linear"
    assert target_modules("c_attn, c_proj") == ["c_attn", "c_proj"]
    assert target_modules(".*attn.*") == ".*attn.*"  # a regular expression is kept whole


def test_strategy_is_checked():
    assert config_from_dict({"strategy": "fsdp2"}).strategy == "fsdp2"
    with pytest.raises(ConfigError, match="strategy"):
        config_from_dict({"strategy": "fsdp"})


def test_lora_dropout_is_refused():
    with pytest.raises(ConfigError, match="lora_dropout"):
        config_from_dict({"lora_target": "all", "lora_dropout": 0.05})


@needs_peft
def test_merged_state_dict_is_peft_merge_and_unload(model_and_tokenizer):
    """The default model with adapters on every linear layer (GPT-2's Conv1D: fan-in-fan-out) and random B."""
    from trainers.runtime import lora

    config = config_from_dict({"lora_target": "all", "lora_rank": 4})
    model = lora.add_adapters(copy.deepcopy(model_and_tokenizer[0]), config, "CAUSAL_LM")
    with torch.no_grad():
        generator = torch.Generator().manual_seed(0)
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.1, generator=generator)
    merged = lora.merged_state_dict(model.state_dict(), lora.layer_scales(model))
    expected = copy.deepcopy(model).merge_and_unload().state_dict()
    assert set(merged) == set(expected) == set(model_and_tokenizer[0].state_dict())
    assert all(torch.equal(merged[k], expected[k]) for k in expected)
    assert any(not torch.equal(merged[k], model_and_tokenizer[0].state_dict()[k]) for k in expected)
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():  # the reference: adapters off is the base model
        assert torch.equal(lora.AdaptersOff(model)(input_ids=ids).logits, model_and_tokenizer[0](input_ids=ids).logits)


@needs_peft
@pytest.mark.parametrize("preset", ["starpo", "starpo_s"])
def test_a_lora_run_trains_adapters_and_saves_a_merged_model(tiny_model, tmp_path, preset):
    from peft import PeftModel

    from agentgym_bench.paths import resolve_model
    from agentgym_bench.rollout.specs import policy_from_spec

    result = main(lora_config(tiny_model, tmp_path, preset))
    records = result.records
    assert all(math.isfinite(r["loss/policy"]) for r in records[1:])
    if preset == "starpo":  # the reward KL's reference is the base: the first iteration's policy is exactly it;
        # after an update the policy differs (k1's sample mean may have either sign, so only "not 0" is asserted)
        assert records[1]["reward/kl"] == 0.0 and records[2]["reward/kl"] != 0.0
    last = tmp_path / "checkpoint-3"
    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    merged = AutoModelForCausalLM.from_pretrained(last / "actor")  # a plain Hugging Face folder
    assert not (last / "actor" / "adapter_config.json").exists()
    assert max(float((merged.state_dict()[k] - v).abs().max()) for k, v in base.state_dict().items()) > 1e-4
    with_adapters = PeftModel.from_pretrained(base, last / "actor_adapter").merge_and_unload()
    assert all(torch.equal(with_adapters.state_dict()[k], v) for k, v in merged.state_dict().items())
    assert (last / "critic_adapter").exists() == (preset == "starpo_s")
    assert resolve_model(str(tmp_path)) == str(last / "actor")  # what `agentgym-bench eval --policy hf:RUN` loads
    policy, _ = policy_from_spec(f"hf:{tmp_path}")
    assert policy.generate([[{"role": "user", "content": "hello"}]])[0].token_ids


@pytest.mark.slow
@needs_peft
def test_a_lora_run_resumes_to_the_same_result(tiny_model, tmp_path):
    """Stopped after its checkpoint at iteration 1 and resumed (pretrain + the checkpoint's adapters), a StarPO-S run
    (actor and critic adapters) ends with the metrics and weights of an uninterrupted one."""
    steps = {"eval_steps": 1, "save_steps": 1}
    main(lora_config(tiny_model, tmp_path / "resumed", "starpo_s", max_steps=1, **steps))
    main(lora_config(tiny_model, tmp_path / "resumed", "starpo_s", max_steps=2, resume_from_checkpoint="auto",
                     **steps))
    main(lora_config(tiny_model, tmp_path / "straight", "starpo_s", max_steps=2, **steps))
    strip = lambda run: [{k: v for k, v in r.items() if not k.startswith("time/")}  # noqa: E731
                         for r in read_metrics(run / "metrics.jsonl")]
    assert [r["step"] for r in strip(tmp_path / "resumed")] == [0, 1, 2]
    assert strip(tmp_path / "resumed") == strip(tmp_path / "straight")
    a = AutoModelForCausalLM.from_pretrained(tmp_path / "resumed" / "checkpoint-2" / "actor").state_dict()
    b = AutoModelForCausalLM.from_pretrained(tmp_path / "straight" / "checkpoint-2" / "actor").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_run_whose_start_model_changed_is_not_resumed_onto_the_new_one(tiny_model, tmp_path):
    """``models/warmstart`` is rebuilt in place by the warm start's stages: a LoRA run resumed after that would put its
    adapters on the new base (and any run's KL reference would be the new model) without a word."""
    start = tmp_path / "start"
    shutil.copytree(tiny_model, start)
    config = config_from_dict(tiny_config_dict(start, tmp_path / "run", "starpo", max_steps=1, save_steps=1,
                                               lora_target="all"))
    main(config)
    assert json.loads((tmp_path / "run" / "start.json").read_text())["pretrain"] == str(start)
    # the same weights by another path (a moved clone, another working folder): resumed, the weights being compared
    (tmp_path / "link").symlink_to(start)
    main(config_from_dict({**config.to_dict(), "pretrain": str(tmp_path / "link"), "max_steps": 2,
                           "resume_from_checkpoint": "auto"}))
    assert (tmp_path / "run" / "checkpoint-2").is_dir()
    weights = next(start.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-1] + b"\x01")  # another model at the same path
    longer = config_from_dict({**config.to_dict(), "max_steps": 3, "resume_from_checkpoint": "auto"})
    with pytest.raises(ConfigError, match="holds other weights than the run .* started from"):
        main(longer)
    assert not (tmp_path / "run" / "checkpoint-3").exists()
