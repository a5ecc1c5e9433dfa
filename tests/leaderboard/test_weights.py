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


def test_the_default_board_is_the_repositorys_wherever_the_command_runs(source, tmp_path, monkeypatch, capsys):
    """As submit, board and reproduce find it: from a sub-folder of a clone, its leaderboards/; outside one, refused
    (it made ./leaderboards/... wherever it ran)."""
    clone = tmp_path / "clone"
    (clone / "leaderboards" / "agentgym-v2").mkdir(parents=True)
    (clone / "docs").mkdir()
    monkeypatch.chdir(clone / "docs")
    assert main(["publish-model", str(source), "--name", "m"]) == 0
    assert (clone / "leaderboards" / "agentgym-v2" / "models" / "m").is_dir()
    assert not (clone / "docs" / "leaderboards").exists()
    monkeypatch.chdir(tmp_path)
    assert main(["publish-model", str(source), "--name", "n"]) == 2
    assert "no leaderboards/ folder" in capsys.readouterr().err and not (tmp_path / "leaderboards").exists()
