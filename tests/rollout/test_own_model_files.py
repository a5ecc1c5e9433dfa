"""A model of one's own whose files cannot play: each mistake is one line naming the fix, before anything is played
or trained (no chat template, no eos token, more tokens than embedding rows, no tokenizer files, a context too short
for the first prompt or for the warm start's rows)."""

from __future__ import annotations

import shutil

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from agentgym_bench.errors import UserError
from agentgym_bench.rollout.hf import load_model
from tests.cli import cli, one_line
from trainers.runtime.launch import error_line
from trainers.sft.default_model import ModelSize, build_default_model

SMALL = dict(n_layer=1, n_embd=32, n_head=2)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return build_default_model(tmp_path_factory.mktemp("own") / "small", size=ModelSize(**SMALL))


def altered(small, tmp_path, name, *, tokenizer=None, model=None):
    """A copy of ``small`` with its tokenizer or model changed by the given functions."""
    folder = tmp_path / name
    tok, mod = AutoTokenizer.from_pretrained(small), AutoModelForCausalLM.from_pretrained(small)
    (tokenizer or (lambda t: t))(tok)
    mod = (model or (lambda m: m))(mod) or mod
    tok.save_pretrained(folder)
    mod.save_pretrained(folder)
    return folder


def test_a_tokenizer_without_a_chat_template_is_one_line(small, tmp_path):
    def drop(tok):
        tok.chat_template = None

    with pytest.raises(UserError, match="tokenizer has no chat template, and every turn is rendered with"):
        load_model(altered(small, tmp_path, "nochat", tokenizer=drop))


def test_no_eos_token_is_one_line(small, tmp_path):
    def drop_tok(tok):
        tok.eos_token = None

    def drop_model(model):
        model.generation_config.eos_token_id = None

    with pytest.raises(UserError, match="nor its tokenizer names an eos token, so no reply would end"):
        load_model(altered(small, tmp_path, "noeos", tokenizer=drop_tok, model=drop_model))


def test_more_tokens_than_embedding_rows_is_one_line(small, tmp_path):
    def shrink(model):
        model.resize_token_embeddings(500)

    with pytest.raises(UserError, match=r"tokenizer has \d+ tokens and its embedding 500 rows"):
        load_model(altered(small, tmp_path, "smallvocab", model=shrink))


def test_a_folder_without_tokenizer_files_says_so(small, tmp_path):
    folder = tmp_path / "notok"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "generation_config.json"):
        shutil.copy(small / name, folder / name)
    with pytest.raises(UserError, match=r"the folder holds no tokenizer files \(tokenizer.json"):
        load_model(folder)
    out = cli("train", "baseline-starpo", f"pretrain={folder}", f"output_dir={tmp_path / 'run'}", "max_steps=1",
              cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "train: error: cannot use pretrain" in out.stderr and "holds no tokenizer files" in out.stderr
    assert not (tmp_path / "run" / "start.json").exists()  # a refused start records no start


def test_a_context_too_short_for_the_first_prompt_is_refused_before_playing(tmp_path):
    short = build_default_model(tmp_path / "short", size=ModelSize(**SMALL, n_positions=64))
    line = one_line(cli("eval", "--policy", f"hf:{short}", "--suite", "agentgym-v2-validation", "--episodes", "1",
                        "--entries", "sokoban-6x6", "--out", "r.json.gz", cwd=tmp_path))
    assert "before playing, entry sokoban-6x6's first prompt is" in line and "exceeds the model's 64 positions" in line
    assert "--prompt compact, a shorter prompt" in line and line.endswith("nothing was played")
    assert not (tmp_path / "r.json.gz").exists()
    line = one_line(cli("warmstart", f"model={short}", f"output={tmp_path / 'ws'}", "envs=[AgentSokoban-v0]",
                        "episodes=4", "prompt=ragen", cwd=tmp_path))
    assert "the demonstrations' longest row is" in line and "the model has 64 positions" in line


def test_a_process_that_failed_on_a_user_error_reports_its_message_without_the_class():
    assert error_line("Traceback ...\nagentgym_bench.errors.UserError: cannot load a model") == "cannot load a model"
    bug = "IndexError: index out of range in self"
    assert error_line(f"Traceback ...\n{bug}") == bug
