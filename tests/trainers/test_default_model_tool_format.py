"""The default model's word-level vocabulary has no ``tool`` or ``arguments`` (the published checkpoint's no ``call``
either): it cannot spell a tool call
(``<tool_call>{"name": ..., "arguments": ...}</tool_call>``). Those words become ``<|unk|>``, which decoding drops, so
in the tool format (``action_format="tool"``) every reply of this model is of bad format, even a perfect imitation
of the oracle. Nothing crashes: the env scores the reply as bad format, and a warm start in tool format runs. The
published checkpoint keeps its vocabulary (new tokens would change its embedding shape)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import agentgym_bench  # noqa: F401 - registers the ids
from agentgym_bench.agent.tools import format_tool_reply

PUBLISHED = Path(__file__).resolve().parents[2] / "leaderboards" / "agentgym-v2" / "models" / "default-model-sft"


@pytest.mark.parametrize("which", ["built here", "published"])
def test_the_default_vocabulary_cannot_spell_a_tool_call(model_and_tokenizer, which):
    from transformers import AutoTokenizer

    tokenizer = model_and_tokenizer[1] if which == "built here" else AutoTokenizer.from_pretrained(PUBLISHED)
    vocabulary = tokenizer.get_vocab()
    assert [w for w in ("tool", "arguments", "tool_call") if w in vocabulary] == []
    assert all(w in vocabulary for w in ("name", "take", "actions", "Up", "Left"))
    reply = format_tool_reply(["Up", "Left"])
    ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
    assert ids.count(tokenizer.unk_token_id) == (5 if "call" not in vocabulary else 3)  # tool (twice), arguments
    assert tokenizer.unk_token in tokenizer.all_special_tokens
    spelled = tokenizer.decode(ids, skip_special_tokens=True)  # what a model that wrote these tokens replies
    unknown = [w for w in ("tool", "call", "arguments") if w not in vocabulary]
    for word in unknown:
        reply = reply.replace(word, "")
    assert spelled == reply and "<_" in spelled  # no <tool_call> left: not a tool call

    env = gym.make("AgentSokoban-v0", action_format="tool", prompt="compact")
    env.reset(seed=3)
    _, reward, _, _, info = env.step(spelled)
    assert info["format_valid"] is False and info["actions"] == [] and reward < 0  # bad format, the penalty
    answer = "<think></think><answer>Up || Left</answer>"  # the answer format round-trips exactly
    assert tokenizer.decode(tokenizer(answer, add_special_tokens=False)["input_ids"]) == answer


def test_a_warm_start_in_tool_format_runs_and_never_writes_a_valid_call(model_dir, tmp_path):
    from trainers.sft.sft_config import SFTConfig
    from trainers.sft.warmstart import warm_start

    config = SFTConfig(model=str(model_dir), output=str(tmp_path / "out"), envs=("AgentBandit-v0",),
                             episodes=24, epochs=2, batch_size=8, eval_episodes=8,
                             env_kwargs={"action_format": "tool"})
    report = warm_start(config)
    assert report["train"]["final_loss"] < report["train"]["first_loss"]
    table = report["evaluation"]
    assert table["oracle"]["AgentBandit-v0"]["format_valid"] == 1.0  # the demonstrations are valid tool calls
    assert table["warm_start"]["AgentBandit-v0"]["format_valid"] == 0.0  # the model cannot write one
