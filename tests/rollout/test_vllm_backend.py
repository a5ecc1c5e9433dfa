"""vLLM backend. The GPU tests need CUDA and vLLM (`pytest -m gpu -rs` prints why they skip)."""

import importlib.util

import pytest

from agentgym_bench.rollout.vllm_backend import INSTALL_HINT, VLLMPolicy

HAS_VLLM = importlib.util.find_spec("vllm") is not None


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed; this checks the message shown when it is not")
def test_missing_vllm_names_the_install_command():
    with pytest.raises(ImportError, match=r"agentgym-bench\[vllm\]"):
        VLLMPolicy("any-model")
    assert "pip install" in INSTALL_HINT


needs_vllm = pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed (pip install 'agentgym-bench[vllm]')")
needs_cuda = pytest.mark.skipif(not _cuda(), reason="no CUDA GPU")


@pytest.fixture(scope="module")
def vllm_policy(model_dir):
    import os

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return VLLMPolicy(str(model_dir), temperature=0, max_new_tokens=8, gpu_memory_utilization=0.2)


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
    vllm_policy.sync_weights(model)
    assert [g.token_ids for g in vllm_policy.generate(convs)] != before
    vllm_policy.sync_weights(model_and_tokenizer[0])
    assert [g.token_ids for g in vllm_policy.generate(convs)] == before
