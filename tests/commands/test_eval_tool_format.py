"""``eval --action-format tool`` end to end with the locally built default model: the tool format is recorded in
every entry's ``env_kwargs``, a board accepts it, replay plays it back, and re-generation renders the envs' tools
as the evaluation did, so the entry is *reproduced*.

The default model never learned tool calls (its vocabulary cannot even spell ``tool``: docs/rollout.md), so its
replies are invalid actions; what is tested is that the pipeline records, replays and re-generates them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentgym_bench.benchmark.kinds import replay_entry
from agentgym_bench.benchmark.replay import EpisodeText
from agentgym_bench.benchmark.results import read_results
from agentgym_bench.benchmark.suites import load_suite, quick_check
from agentgym_bench.cli import main
from agentgym_bench.leaderboard.regenerate import regenerate_all
from agentgym_bench.leaderboard.verify import REPRODUCED, verify
from tests.adapters.tool_model import TOOL_CHAT_TEMPLATE

SUITE = {
    "name": "tiny-tools", "version": 1, "split": "test", "seed_start": 1_000_000_000,
    "entries": [
        {"name": "bandit", "env_id": "AgentBandit-v0", "env_kwargs": {}, "prompts": ["ragen", "compact"],
         "episodes": 4, "oracle_success": 1.0},
        {"name": "sokoban", "env_id": "AgentSokoban-v0", "env_kwargs": {}, "prompts": ["compact", "ragen"],
         "episodes": 3, "oracle_success": 1.0},
    ],
}
RUN = ["--max-new-tokens", "12", "--history", "1", "--action-format", "tool"]


@pytest.fixture(scope="module")
def tool_template_model(model_dir, tmp_path_factory) -> Path:
    """The default model (the same weights and vocabulary) with a chat template that lists the offered tools in a
    system turn, as Qwen's do: its prompts in tool format differ from those without tools."""
    folder = tmp_path_factory.mktemp("tool-template") / "m"
    shutil.copytree(model_dir, folder)
    (folder / "chat_template.jinja").write_text(TOOL_CHAT_TEMPLATE)
    return folder


def texts_of(results) -> dict[str, dict[int, EpisodeText]]:
    return {e.name: replay_entry(e, keep={ep.seed for ep in e.episodes}) for e in results.entries}


def test_a_quick_check_of_the_bundled_suite_records_replays_and_regenerates_the_tool_format(tmp_path, model_dir,
                                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "--policy", f"hf:{model_dir}", "--suite", "agentgym-v2", "--entries", "bandit",
                 "sokoban-6x6", "--episodes", "2", "--prompt", "compact", *RUN, "--out", "q.json.gz"]) == 0
    results = read_results(tmp_path / "q.json.gz")
    assert [e.env_kwargs for e in results.entries] == [{"prompt": "compact", "action_format": "tool"}] * 2
    texts = texts_of(results)  # replay: every recorded reply through a fresh env in tool format
    assert all(t.tools and t.tools[0]["function"]["name"] == "take_actions" for e in texts.values()
               for t in e.values())
    turns = [t for e in results.entries for ep in e.episodes for t in ep.turns]
    assert len(turns) > 4 and all(t.actions == [] for t in turns)  # the default model writes no tool call
    suite, _ = quick_check(load_suite("agentgym-v2"), 2, ["bandit", "sokoban-6x6"])
    assert regenerate_all(results, suite, texts, str(model_dir)) is None  # every reply, token for token


def test_a_tool_format_entry_on_a_board_is_reproduced(tmp_path, model_dir, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.json").write_text(json.dumps(SUITE))
    assert main(["eval", "--policy", f"hf:{model_dir}", "--suite", "suite.json", *RUN, "--out", "t.json.gz"]) == 0
    results = read_results(tmp_path / "t.json.gz")
    assert [e.env_kwargs for e in results.entries] == [{"prompt": "ragen", "action_format": "tool"},
                                                       {"prompt": "compact", "action_format": "tool"}]
    capsys.readouterr()
    assert main(["submit", "t.json.gz", "--name", "tools", "--board", "board", "--suite", "suite.json"]) == 0
    assert "as reproduced" in capsys.readouterr().out
    assert main(["reproduce", "tools", "--board", "board"]) == 0
    assert "(100.0%) identical" in capsys.readouterr().out


def test_regeneration_renders_the_tools_the_evaluation_offered(tmp_path, tool_template_model, monkeypatch):
    """With a template that shows the tools, the tools change every prompt: re-generation that offered none would
    not give the recorded replies back; it offers the replayed envs' tools, and the file is reproduced."""
    from transformers import AutoTokenizer

    from agentgym_bench.benchmark.results import ResultsError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.json").write_text(json.dumps(SUITE))
    assert main(["eval", "--policy", f"hf:{tool_template_model}", "--suite", "suite.json", *RUN,
                 "--out", "t.json.gz"]) == 0
    results = read_results(tmp_path / "t.json.gz")
    suite = load_suite(str(tmp_path / "suite.json"))
    texts = texts_of(results)
    tokenizer = AutoTokenizer.from_pretrained(tool_template_model)
    episode = texts["sokoban"][SUITE["seed_start"]]
    messages = [{"role": "user", "content": episode.observations[0]}]
    with_tools = tokenizer.apply_chat_template(messages, tools=episode.tools, add_generation_prompt=True,
                                               tokenize=False)
    assert with_tools.startswith("<|system|>tools: take_actions<|end|>")
    assert with_tools != tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    assert verify(tmp_path / "t.json.gz", suite).mark == REPRODUCED
    without = {name: {seed: EpisodeText(t.system_prompt, t.observations, t.final_observation) for seed, t in e.items()}
               for name, e in texts.items()}
    with pytest.raises(ResultsError, match=r"^re-generation: entry \S+, seed \d+, turn 1: the recorded reply differs "
                                           r"from the re-generated one and is not a draw of the named weights"):
        regenerate_all(results, suite, without, str(tool_template_model))


def test_the_board_refuses_an_action_format_it_does_not_know(tmp_path, model_dir, monkeypatch):
    from agentgym_bench.benchmark.results import ResultsError, dumps

    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.json").write_text(json.dumps(SUITE))
    assert main(["eval", "--policy", "random", "--suite", "suite.json", "--action-format", "tool",
                 "--out", "r.json.gz"]) == 0
    results = read_results(tmp_path / "r.json.gz")
    suite = load_suite(str(tmp_path / "suite.json"))
    assert verify(tmp_path / "r.json.gz", suite).mark == REPRODUCED
    results.entries[0].env_kwargs["action_format"] = "xml"
    with pytest.raises(ResultsError, match=r"entry bandit: action_format 'xml' is not one of \['answer', 'tool'\]"):
        verify(dumps(results), suite)
