"""Published weights: a model folder beside the board with bfloat16 weights, loaded on a CPU in float32."""

import pytest
import torch

from agentgym_bench.cli import main
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.weights import publish_model, published_path
from agentgym_bench.rollout.hf import load_model
from trainers.sft.default_model import build_default_model


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return build_default_model(tmp_path_factory.mktemp("m") / "model", seed=3)


def test_published_weights_are_the_source_rounded_to_bfloat16_and_load_in_float32(source, tmp_path):
    folder = publish_model(source, tmp_path / "board", "My model + SFT")
    assert folder == published_path(tmp_path / "board", "My model + SFT") == tmp_path / "board/models/my-model-sft"
    assert (folder / "model.safetensors").stat().st_size < 0.55 * (source / "model.safetensors").stat().st_size
    original, _ = load_model(source)
    published, tokenizer = load_model(folder)
    assert {p.dtype for p in published.parameters()} == {torch.float32}
    for (name, a), (_, b) in zip(original.state_dict().items(), published.state_dict().items(), strict=True):
        assert torch.equal(a.to(torch.bfloat16).float(), b), name
    rounded = [not torch.equal(a, b) for a, b in zip(original.parameters(), published.parameters(), strict=True)]
    assert any(rounded)  # bfloat16 changes some weights
    assert tokenizer("Up").input_ids == load_model(source)[1]("Up").input_ids


def test_an_existing_entry_is_kept_unless_replaced(source, tmp_path, capsys):
    publish_model(source, tmp_path, "m")
    with pytest.raises(UserError, match="exists; pass --replace"):
        publish_model(source, tmp_path, "m")
    assert main(["publish-model", str(source), "--name", "m", "--board", str(tmp_path), "--replace"]) == 0
    assert "weights in bfloat16" in capsys.readouterr().out and not list(tmp_path.glob("models/.staging-*"))
    assert main(["publish-model", str(tmp_path / "nothing"), "--name", "n", "--board", str(tmp_path)]) != 0
    assert not (tmp_path / "models" / "n").exists()
