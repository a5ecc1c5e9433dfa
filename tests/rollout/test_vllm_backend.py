"""vLLM backend. The GPU tests need CUDA and vLLM (`pytest -m gpu -rs` prints why they skip)."""

import importlib.util

import pytest

from agentgym_bench.rollout.policy import key_seed
from agentgym_bench.rollout.vllm_backend import (
    INSTALL_HINT,
    VLLMPolicy,
    named_weights,
    request_seeds,
    single_process_launch_env,
)

HAS_VLLM = importlib.util.find_spec("vllm") is not None


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed; this checks the message shown when it is not")
def test_missing_vllm_names_the_install_command_in_one_line():
    from agentgym_bench.errors import UserError

    with pytest.raises(ImportError, match=r"pip install 'agentgym-bench\[vllm\]' \(in a clone: pip install -e") as e:
        VLLMPolicy("any-model")
    assert isinstance(e.value, UserError)  # the command line prints it as one line
    assert "pip install 'agentgym-bench[vllm]'" in INSTALL_HINT


def test_one_process_gets_the_launch_variables_torchrun_would_set():
    env = {}
    added = single_process_launch_env(env)
    assert env == added and (env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"]) == ("0", "0", "1")
    assert 0 < int(env["MASTER_PORT"]) < 65536
    under_torchrun = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "h", "MASTER_PORT": "29500"}
    assert single_process_launch_env(under_torchrun) == {} and under_torchrun["RANK"] == "1"


def test_named_weights_are_the_state_dict_names_unwrapped(model_and_tokenizer):
    import torch

    model = model_and_tokenizer[0]
    wrapped = torch.nn.Module()
    wrapped.module = model  # as DDP holds it
    names = [name for name, _ in named_weights(wrapped)]
    assert names == list(model.state_dict()) and all(not t.requires_grad for _, t in named_weights(model))


def test_keyed_request_seeds_depend_on_the_key_alone():
    keys = [(7, 0, 0, 0), (7, 0, 1, 0), (7, 1, 0, 0)]
    batch = request_seeds(5, 0, 3, keys)
    assert batch == [key_seed(5, k) for k in keys] and len(set(batch)) == 3
    assert request_seeds(5, 40, 1, keys[1:2]) == batch[1:2]  # alone, later: the same draws
    assert request_seeds(6, 0, 3, keys) != batch
    assert all(0 <= s < 2**63 for s in batch)  # torch.Generator.manual_seed's range


def test_unkeyed_request_seeds_count_the_requests_made():
    assert request_seeds(5, 0, 3, None) == [5, 6, 7] and request_seeds(5, 3, 2, None) == [8, 9]
    with pytest.raises(ValueError, match="2 keys for 3 prompts"):
        request_seeds(5, 0, 3, [(1,), (2,)])


needs_vllm = pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed (pip install -e '.[vllm]')")
needs_cuda = pytest.mark.skipif(not _cuda(), reason="no CUDA GPU")


@pytest.fixture(scope="module")
def vllm_policy(model_dir):
    return VLLMPolicy(str(model_dir), temperature=0, max_new_tokens=8, gpu_memory_utilization=0.2, sleep_mode=True)


@pytest.mark.gpu
@needs_vllm
@needs_cuda
def test_vllm_greedy_matches_transformers(vllm_policy, model_and_tokenizer):
    from agentgym_bench.rollout.hf import HFPolicy
    from tests.rollout.test_hf import conversations

    convs = conversations(4)
    ours = HFPolicy(*model_and_tokenizer, temperature=0, max_new_tokens=8).generate(convs)
    theirs = vllm_policy.generate(convs)
    assert [g.token_ids for g in theirs] == [g.token_ids for g in ours]


@pytest.mark.gpu
@needs_vllm
@needs_cuda
def test_vllm_weight_push_changes_the_replies(vllm_policy, model_and_tokenizer):
    import copy

    import torch

    from tests.rollout.test_hf import conversations

    convs = conversations(4)
    before = [g.token_ids for g in vllm_policy.generate(convs)]
    model = copy.deepcopy(model_and_tokenizer[0])
    with torch.no_grad():
        model.lm_head.weight.mul_(-1.0)  # tied to the input embeddings: a different model
    vllm_policy.sleep()  # frees the engine's memory; loading weights wakes it
    vllm_policy.sync_weights(model)
    assert [g.token_ids for g in vllm_policy.generate(convs)] != before
    vllm_policy.sync_weights(model_and_tokenizer[0])
    assert [g.token_ids for g in vllm_policy.generate(convs)] == before


@pytest.mark.gpu
@needs_vllm
@needs_cuda
def test_vllm_keyed_sampling_is_fixed_by_the_keys(vllm_policy):
    from tests.rollout.test_hf import conversations

    convs = conversations(4)
    keys = [(1, seed, 0, 0) for seed in range(4)]
    vllm_policy.temperature = 1.0
    try:
        first = [g.token_ids for g in vllm_policy.generate(convs, keys=keys)]
        assert [g.token_ids for g in vllm_policy.generate(convs, keys=keys)] == first
        other = [g.token_ids for g in vllm_policy.generate(convs, keys=[(2, *k[1:]) for k in keys])]
        assert other != first
    finally:
        vllm_policy.temperature = 0
