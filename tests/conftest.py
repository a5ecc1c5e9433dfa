import pytest
import torch

import agentgym_bench  # noqa: F401  (registers the ids)


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """The CI machine has 2 shared cores; one intra-op thread avoids contention stalls (speed only)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    """The default model (untrained), built once per session."""
    from trainers.sft.default_model import build_default_model

    return build_default_model(tmp_path_factory.mktemp("model") / "default", seed=0)


@pytest.fixture(scope="session")
def model_and_tokenizer(model_dir):
    from agentgym_bench.rollout.hf import load_model

    return load_model(model_dir)
