"""``eval`` says when a local model is played with another prompt template, history window or reply budget than it
was trained with, or put on its board with (on the validation suite the published checkpoint scores 0.063 under
eval's defaults and 0.577 under its own), and names the flags that match; it says nothing when they agree or nothing
is recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from agentgym_bench.benchmark.provenance import prompted_as, settings_note
from agentgym_bench.cli import main

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = "leaderboards/agentgym-v2/models/default-model-sft"
RAGEN = {"bandit": "ragen", "sokoban-6x6": "ragen"}
COMPACT = {"bandit": "compact", "sokoban-6x6": "compact"}


def test_the_published_checkpoint_is_played_as_its_board_entry_was(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert prompted_as(PUBLISHED) == ({"prompt": "compact", "history": 0, "max_new_tokens": 16},
                                      "as its board entry was played")
    note = settings_note(f"hf:{PUBLISHED}", RAGEN, None, 32)
    assert note is not None and "board entry" in note
    assert note.endswith("add: --prompt compact --history 0 --max-new-tokens 16")
    assert "this run uses --prompt ragen --history full --max-new-tokens 32" in note
    assert settings_note(f"hf:{PUBLISHED}", COMPACT, 0, 16) is None
    only_budget = settings_note(f"hf:{PUBLISHED}", COMPACT, 0, 32)
    assert only_budget is not None and only_budget.endswith("add: --max-new-tokens 16")
    assert settings_note(f"hf:{PUBLISHED}", {}, None, 32) is None  # a two-player suite: its games, not this record
    assert settings_note("scripted", {}, None, 32) is None  # the two-player suites' own policy
    mixed = settings_note(f"hf:{PUBLISHED}", {"bandit": "compact", "sokoban-6x6": "ragen"}, 0, 16)
    assert mixed is not None and "--prompt bandit=compact,sokoban-6x6=ragen" in mixed
    # served by `serve PATH`, which names the model by its path: the same note through the endpoint
    assert settings_note(f"openai:{PUBLISHED}@http://127.0.0.1:8000/v1", RAGEN, None, 32) == note
    assert settings_note(f"openai-responses:{PUBLISHED}@http://127.0.0.1:8000/v1", COMPACT, 0, 16) is None
    assert settings_note("openai:gpt-4o@https://api.openai.com/v1", RAGEN, None, 32) is None  # no local folder


def test_a_trainer_runs_checkpoint_is_played_as_its_run_validated(tmp_path, model_dir):
    run = tmp_path / "run"
    shutil.copytree(model_dir, run / "checkpoint-2" / "actor")
    config = {"pretrain": "x", "max_new_tokens": 12,
              "train_env_manager": {"env_kwargs": {"prompt": "ragen"}, "history_length": 2},
              "val_env_manager": {"env_kwargs": {"prompt": "compact"}, "history_length": None}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    for target in (str(run), str(run / "checkpoint-2" / "actor")):
        settings, source = prompted_as(target)
        assert settings == {"prompt": "compact", "history": None, "max_new_tokens": 12}
        assert "trainer run" in source
    note = settings_note(f"hf:{run}", RAGEN, None, 32)
    assert note is not None and note.endswith("add: --prompt compact --max-new-tokens 12")
    assert settings_note(f"hf:{run}", COMPACT, None, 12) is None


def test_no_record_no_note(tmp_path, model_dir):
    assert prompted_as(str(model_dir)) is None  # a bare model folder
    assert settings_note(f"hf:{model_dir}", RAGEN, None, 32) is None
    assert settings_note("oracle", RAGEN, None, 32) is None
    assert settings_note("openai:m@http://127.0.0.1:1/v1", RAGEN, None, 32) is None


def test_two_player_suites_play_their_scripted_policy_without_a_note(tmp_path, capsys):
    assert main(["eval", "--suite", "agentgym-ma-v2", "--policy", "scripted", "--episodes", "2",
                 "--out", str(tmp_path / "ma.json.gz")]) == 0
    assert "note:" not in capsys.readouterr().out


def test_eval_prints_the_note_before_playing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(["eval", "--policy", f"hf:{PUBLISHED}", "--entries", "bandit", "--episodes", "1",
                 "--out", str(tmp_path / "r.json.gz")]) == 0
    printed = capsys.readouterr()
    first = printed.out.splitlines()[0]
    assert first.startswith(f"note: {PUBLISHED} expects --prompt compact --history 0 --max-new-tokens 16")
    assert "entry 1/1: bandit (1 episodes)" in printed.err
