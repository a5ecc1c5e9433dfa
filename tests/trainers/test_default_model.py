import dataclasses

import gymnasium as gym
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoModelForCausalLM, AutoTokenizer

from agentgym_bench.agent.parsing import format_reply
from trainers.sft import default_model
from trainers.sft.default_model import (
    ARCHITECTURES,
    ModelSize,
    build_default_model,
    build_tokenizer,
    build_vocab,
)

TINY = ModelSize(n_layer=1, n_embd=16, n_head=2, n_positions=64)


def test_loads_with_auto_classes_as_gpt2_with_learned_positions(model_dir):
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    assert model.config.model_type == "gpt2"
    assert model.transformer.wpe.weight.shape == (1024, 128)  # learned absolute positions
    assert 200_000 <= sum(p.numel() for p in model.parameters()) <= 2_000_000
    assert tokenizer.eos_token == "<|end|>" and tokenizer.pad_token == "<|pad|>"
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_building_is_deterministic_from_the_seed_and_leaves_the_global_rng_alone(tmp_path, architecture):
    size = dataclasses.replace(TINY, architecture=architecture)
    state = torch.random.get_rng_state()
    a = build_default_model(tmp_path / "a", seed=3, size=size)
    b = build_default_model(tmp_path / "b", seed=3, size=size)
    c = build_default_model(tmp_path / "c", seed=4, size=size)
    assert torch.equal(torch.random.get_rng_state(), state)
    for name in ["model.safetensors", "tokenizer.json", "config.json"]:
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "model.safetensors").read_bytes() != (c / "model.safetensors").read_bytes()


@pytest.mark.parametrize("env_id", ["AgentFrozenLake-v0", "AgentFrozenLakeNoSlip-v0"])
def test_compact_frozen_lake_prompt_is_about_25_tokens_with_one_token_per_cell(model_and_tokenizer, env_id):
    _, tokenizer = model_and_tokenizer
    env = gym.make(env_id, prompt="compact")
    obs, _ = env.reset(seed=0)
    text = tokenizer.apply_chat_template([{"role": "user", "content": obs}], add_generation_prompt=True,
                                         tokenize=False)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(ids) <= 36
    header, grid = ("slippery ice\n", obs.split("\n", 1)[1]) if env_id == "AgentFrozenLake-v0" else ("", obs)
    assert obs.startswith(header)
    grid = grid.split("\nactions")[0]
    grid_tokens = tokenizer.convert_ids_to_tokens(tokenizer(grid, add_special_tokens=False)["input_ids"])
    assert grid_tokens == list(grid)


@pytest.mark.parametrize("row", ["#PX_O#", "WWA.CB@W", "_√_G", "PXS"])
def test_grid_rows_are_single_character_tokens(model_and_tokenizer, row):
    _, tokenizer = model_and_tokenizer
    assert tokenizer.convert_ids_to_tokens(tokenizer(row, add_special_tokens=False)["input_ids"]) == list(row)


def test_replies_are_few_tokens_and_round_trip(model_and_tokenizer):
    _, tokenizer = model_and_tokenizer
    reply = format_reply(["Up", "Left"])
    ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == ["<think>", "</think>", "<answer>", "Up", " || ", "Left",
                                                    "</answer>"]
    assert tokenizer.decode(ids) == reply


def test_sokoban_row_breaks_keep_one_token_per_interior_cell_at_fixed_positions(model_and_tokenizer):
    _, tokenizer = model_and_tokenizer
    env = gym.make("AgentSokoban-v0", prompt="compact")
    layouts = set()
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        grid = obs.split("\nactions")[0]
        tokens = tokenizer.convert_ids_to_tokens(tokenizer(grid, add_special_tokens=False)["input_ids"])
        assert "".join(tokens) == grid and len(tokens) == 31  # 5 + 4 * 4 + 5 cells, 5 row breaks
        layouts.add(tuple(i for i, t in enumerate(tokens) if t == "#\n#"))
    assert layouts == {(5, 10, 15, 20, 25)}


def test_a_webshop_episode_reads_without_unknown_words_within_the_positions(model_and_tokenizer):
    from agentgym_bench.agent.policies import oracle_reply

    model, tokenizer = model_and_tokenizer
    env = gym.make("AgentWebShop-v0", prompt="compact")
    obs, _ = env.reset(seed=0)
    done, lengths = False, []
    while not done:
        text = tokenizer.apply_chat_template([{"role": "user", "content": obs}], add_generation_prompt=True,
                                             tokenize=False)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.unk_token_id not in ids, tokenizer.convert_ids_to_tokens(ids)
        lengths.append(len(ids))
        obs, _, done, _, _ = env.step(oracle_reply(env.unwrapped))
    assert max(lengths) + 32 <= model.config.n_positions  # the longest page (results) and a reply fit
    code = tokenizer.convert_ids_to_tokens(tokenizer("click[b0vw9v1i16]", add_special_tokens=False)["input_ids"])
    assert code == ["click", "[", *"b0vw9v1i16", "]"]  # product codes are spelled out, so they can be copied


def test_a_bargain_match_reads_without_unknown_words_within_the_positions(model_and_tokenizer):
    from agentgym_bench.multiagent.bargain import AGENTS, BargainEnv
    from agentgym_bench.multiagent.bargain_rules import scripted_demand

    model, tokenizer = model_and_tokenizer
    env = BargainEnv()
    for seed in range(5):
        observations, _ = env.reset(seed=seed)
        while env.agents:
            for agent in env.agents:
                ids = tokenizer(observations[agent]["text"], add_special_tokens=False)["input_ids"]
                assert tokenizer.unk_token_id not in ids, tokenizer.convert_ids_to_tokens(ids)
                assert len(ids) + 64 <= model.config.n_positions
            rnd = len(env.history)
            last = env.history[-1] if env.history else {}
            demands = {a: scripted_demand(env.counts, env.values[a], rnd, env.max_rounds,
                                          last.get(AGENTS[1 - AGENTS.index(a)])) for a in env.agents}
            observations, *_ = env.step({a: f"<think>x</think><answer>{' '.join(map(str, d))}</answer>"
                                         for a, d in demands.items()})


def test_unknown_words_become_unk(model_and_tokenizer):
    _, tokenizer = model_and_tokenizer
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("xyzzy Up é", add_special_tokens=False)["input_ids"])
    assert tokens == ["<|unk|>", " ", "Up", " ", "<|unk|>"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_encodes_without_error_and_known_text_round_trips(text):
    tokenizer = _tokenizer()
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if tokenizer.unk_token_id not in ids:
        assert tokenizer.decode(ids) == text


def test_chat_template_marks_assistant_content_for_return_assistant_tokens_mask(model_and_tokenizer):
    _, tokenizer = model_and_tokenizer
    reply = format_reply(["Down"])
    out = tokenizer.apply_chat_template([{"role": "user", "content": "P_G"}, {"role": "assistant", "content": reply}],
                                        tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    masked = [t for t, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    assert tokenizer.decode(masked) == reply + "<|end|>"


def test_vocabulary_holds_env_words():
    vocab = build_vocab(default_model.env_words()[0])
    for word in ["Left", "Right", "Up", "Down", "actions", "left", "Phoenix", "Dragon"]:
        assert word in vocab


def test_init_model_command(tmp_path, capsys):
    from agentgym_bench.cli import main

    assert main(["init-model", "--path", str(tmp_path / "m"), "--layers", "1", "--width", "16", "--heads", "2"]) == 0
    assert "parameters" in capsys.readouterr().out
    assert AutoModelForCausalLM.from_pretrained(tmp_path / "m").config.n_layer == 1


def test_init_model_builds_a_llama_model_with_rotary_positions_and_the_same_tokenizer(tmp_path, capsys, model_dir):
    from agentgym_bench.cli import main

    assert main(["init-model", "--path", str(tmp_path / "m"), "--layers", "1", "--width", "16", "--heads", "2",
                 "--architecture", "llama"]) == 0
    assert "LlamaForCausalLM" in capsys.readouterr().out
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "m")
    assert model.config.model_type == "llama" and model.config.num_hidden_layers == 1
    assert not any("position" in name for name, _ in model.named_parameters())  # rotary: no position table
    assert model.config.tie_word_embeddings and model.lm_head.weight is model.model.embed_tokens.weight
    same_words = AutoTokenizer.from_pretrained(model_dir).get_vocab()
    assert AutoTokenizer.from_pretrained(tmp_path / "m").get_vocab() == same_words


def test_an_unknown_architecture_is_a_user_error(tmp_path):
    from agentgym_bench.errors import UserError

    with pytest.raises(UserError, match="unknown architecture 'bert'"):
        build_default_model(tmp_path, size=ModelSize(architecture="bert"), words=[])


_TOKENIZERS: dict[str, object] = {}


def _tokenizer(kind="words"):
    if kind not in _TOKENIZERS:
        _TOKENIZERS[kind] = build_tokenizer(build_vocab(default_model.env_words()[0], kind), kind)
    return _TOKENIZERS[kind]


def test_space_words_merge_a_space_into_the_word_after_it_and_nothing_else():
    words, spaced = _tokenizer("words"), _tokenizer("space-words")
    text = "i need a blue shoes, 10000mah b0vw9v1i16 and price lower than 40.00 dollars\n#PX_O#\nactions left: 3"
    tokens = spaced.convert_ids_to_tokens(spaced(text, add_special_tokens=False)["input_ids"])
    assert tokens[:6] == ["i", " need", " a", " blue", " shoes", ","]
    assert tokens[6:17] == [" ", *"10000mah", " ", "b"]  # next to a digit: characters, the space its own token
    assert [*"#PX_O#"] == tokens[tokens.index("\n") + 1:tokens.index("\n") + 7]  # grid rows: one token a cell
    assert tokens[-5:] == ["actions", " left", ":", " ", "3"]
    assert spaced.decode(spaced(text, add_special_tokens=False)["input_ids"]) == text
    assert "".join(tokens) == text
    reply = format_reply(["Up", "Left"])  # the action separator " || " stays one token
    assert spaced.convert_ids_to_tokens(spaced(reply, add_special_tokens=False)["input_ids"]) == [
        "<think>", "</think>", "<answer>", "Up", " || ", "Left", "</answer>"]
    assert set(words.get_vocab()) < set(spaced.get_vocab())
    assert len(spaced(text)["input_ids"]) < len(words(text)["input_ids"])


def test_space_words_read_a_webshop_episode_without_unknown_words_in_fewer_tokens():
    from agentgym_bench.agent.policies import oracle_reply

    env = gym.make("AgentWebShop-v0", prompt="compact")
    obs, _ = env.reset(seed=0)
    done, counts = False, {"words": 0, "space-words": 0}
    while not done:
        for kind in counts:
            ids = _tokenizer(kind)(obs, add_special_tokens=False)["input_ids"]
            assert _tokenizer(kind).unk_token_id not in ids
            counts[kind] += len(ids)
        obs, _, done, _, _ = env.step(oracle_reply(env.unwrapped))
    assert counts["space-words"] < 0.9 * counts["words"]


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab Up left#_\n1.,"), max_size=60))
def test_space_words_round_trip_known_text(text):
    tokenizer = _tokenizer("space-words")
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if tokenizer.unk_token_id not in ids:
        assert tokenizer.decode(ids) == text


def test_init_model_builds_the_space_words_tokenizer(tmp_path, capsys):
    from agentgym_bench.cli import main

    assert main(["init-model", "--path", str(tmp_path / "m"), "--layers", "1", "--width", "16", "--heads", "2",
                 "--tokenizer", "space-words"]) == 0
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "m")
    assert tokenizer.convert_ids_to_tokens(tokenizer("blue shoes")["input_ids"]) == ["blue", " shoes"]
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "m")
    assert model.get_input_embeddings().weight.shape[0] == len(tokenizer)


def test_models_load_by_name_under_the_home_and_by_a_tilde_path(model_dir, tmp_path, monkeypatch):
    from agentgym_bench.rollout.hf import HFPolicy

    (tmp_path / "bench" / "models").mkdir(parents=True)
    (tmp_path / "bench" / "models" / "warmstart").symlink_to(model_dir)
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "m").symlink_to(model_dir)
    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(tmp_path / "bench"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    by_name = HFPolicy.from_pretrained("warmstart", temperature=0, max_new_tokens=4)
    by_tilde = HFPolicy.from_pretrained("~/m", temperature=0, max_new_tokens=4)
    messages = [[{"role": "user", "content": "Left"}]]
    assert by_name.generate(messages)[0].text == by_tilde.generate(messages)[0].text


def test_loading_a_missing_model_says_what_to_run(tmp_path, monkeypatch):
    from agentgym_bench.errors import UserError
    from agentgym_bench.rollout.hf import load_model

    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(tmp_path))
    with pytest.raises(UserError, match="agentgym-bench init-model"):
        load_model()
    with pytest.raises(UserError, match="init-model"):
        load_model("~/no/such/model")


def test_a_local_model_builds_and_loads_without_progress_bars_and_the_setting_is_restored(tmp_path, capfd):
    from transformers.utils import logging as hf_logging

    from agentgym_bench.rollout.hf import load_model

    hf_logging.enable_progress_bar()  # a user's setting (an in-process `train` before this test turns it off)
    load_model(build_default_model(tmp_path / "m"))
    err = capfd.readouterr().err
    assert "Loading weights" not in err and "Writing model shards" not in err and "it/s]" not in err
    assert hf_logging.is_progress_bar_enabled()  # a user's own loads keep their bars
