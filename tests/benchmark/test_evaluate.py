import json

import pytest

from agentgym_bench.benchmark.episodes import entry_prompts, play_suite_episodes
from agentgym_bench.benchmark.evaluate import evaluate_suite
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.specs import Sampling, model_sha256, parse_spec, policy_from_spec
from tests.benchmark.conftest import suite_of


def test_the_oracle_reaches_its_ceiling_and_seeds_are_the_suites():
    suite = suite_of(["frozenlake-noslip", "sokoban-8x8-2box"], 8)
    policy, record = policy_from_spec("oracle")
    results = evaluate_suite(policy, suite, record, prompt="compact")
    for entry in results.entries:
        assert [ep.seed for ep in entry.episodes] == list(suite.entry(entry.name).seeds)
        assert entry.successes().mean() == 1.0 and entry.prompt == "compact"


def test_prompts_per_entry():
    suite = suite_of(["bandit", "frozenlake"], 2)
    assert entry_prompts(suite, {"frozenlake": "compact"}) == {"bandit": "ragen", "frozenlake": "compact"}
    with pytest.raises(UserError, match="chess"):
        entry_prompts(suite, {"chess": "compact"})
    with pytest.raises(UserError, match="not allowed"):
        play_suite_episodes(policy_from_spec("random")[0], suite, prompt="mine")


def test_policy_specs():
    assert parse_spec("oracle") == ("oracle", None)
    # a model-free policy reads its seed alone, so its record keeps the other settings at their defaults
    record = policy_from_spec("random", Sampling(temperature=0.3, top_p=0.5, max_new_tokens=7, seed=9))[1]
    assert record["sampling"] == {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 32, "seed": 9, "keyed": True}
    assert parse_spec("openai:m@http://127.0.0.1:1/v1") == ("openai", "m@http://127.0.0.1:1/v1")
    for bad in ("", "hf:", "openai:model", "oracle:x", "gpt4"):
        with pytest.raises(UserError, match="is not one of"):
            parse_spec(bad)


def test_keyed_sampling_lets_any_episode_be_regenerated_alone(model_dir):
    """The leaderboard's 'reproduced' check: an episode played inside the whole batch and played again alone gives
    the same tokens, because its randomness depends on (seed, episode, turn) only."""
    suite = suite_of(["frozenlake", "sokoban-6x6", "bandit"], 12)
    sampling = Sampling(temperature=1.0, max_new_tokens=12, seed=5)
    policy, record = policy_from_spec(f"hf:{model_dir}", sampling)
    assert record["model_sha256"] == model_sha256(model_dir) and len(record["model_sha256"]) == 64
    full = evaluate_suite(policy, suite, record, prompt="compact", history=0)
    alone_suite = suite_of(["sokoban-6x6"], 3)  # the first three seeds only, in a batch of three
    again, _ = policy_from_spec(f"hf:{model_dir}", sampling)
    alone = evaluate_suite(again, alone_suite, record, prompt="compact", history=0)
    full_tokens = [[t.token_ids for t in ep.turns] for ep in full.entry("sokoban-6x6").episodes[:3]]
    alone_tokens = [[t.token_ids for t in ep.turns] for ep in alone.entry("sokoban-6x6").episodes]
    assert full_tokens == alone_tokens and all(full_tokens)
    other, _ = policy_from_spec(f"hf:{model_dir}", Sampling(temperature=1.0, max_new_tokens=12, seed=6))
    different = evaluate_suite(other, alone_suite, record, prompt="compact", history=0)
    assert [[t.token_ids for t in ep.turns] for ep in different.entry("sokoban-6x6").episodes] != alone_tokens
    assert full.metadata["compute"]["generated_tokens"] == sum(
        len(t.token_ids) for e in full.entries for ep in e.episodes for t in ep.turns)
    assert full.metadata["compute"]["prompt_tokens"] > 0


def test_a_prompt_the_model_cannot_read_is_an_invalid_turn_not_a_crash(tmp_path):
    """A model with 256 positions cannot read a WebShop page with the RAGEN prompt (about 630 tokens). Evaluation
    goes on and scores those turns as invalid (empty replies); training keeps the error."""
    from agentgym_bench.rollout.hf import HFPolicy
    from trainers.sft.default_model import ModelSize, build_default_model

    short = build_default_model(tmp_path / "short", size=ModelSize(n_layer=1, n_embd=32, n_head=2, n_positions=256))
    suite = suite_of(["webshop", "bandit"], 2)
    policy, record = policy_from_spec(f"hf:{short}", Sampling(max_new_tokens=8))
    results = evaluate_suite(policy, suite, record)
    webshop = results.entry("webshop")
    # the first page (instructions + search page) is too long; later, shorter pages may be read and answered
    assert all(ep.turns[0].reply == "" and ep.turns[0].token_ids == [] for ep in webshop.episodes)
    assert all(ep.turns[0].executed_actions == [] for ep in webshop.episodes)
    with pytest.raises(ValueError, match="exceeds"):
        strict = HFPolicy(policy.model, policy.tokenizer, max_new_tokens=8)
        play_suite_episodes(strict, suite_of(["webshop"], 1))


def test_eval_records_how_the_checkpoint_was_chosen(tmp_path, capsys):
    from agentgym_bench.benchmark.results import loads
    from agentgym_bench.cli import main

    suite_file = tmp_path / "tiny.json"
    tiny = suite_of(["bandit"], 4)
    suite_file.write_text(json.dumps({"name": tiny.name, "version": tiny.version, "split": tiny.split,
                                      "seed_start": tiny.seed_start, "entries": [
                                          {"name": "bandit", "env_id": "AgentBandit-v0", "prompts": ["ragen"],
                                           "episodes": 4, "oracle_success": 1.0}]}))
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("preset: starpo\nmax_steps: 3\nrollout_batch_size: 8\n")
    out = tmp_path / "r.json.gz"
    rule = "the final checkpoint of the reference recipe, fixed before the test read"
    args = ["eval", "--suite", str(suite_file), "--policy", "random", "--out", str(out)]
    assert main([*args, "--trained-by", str(run), "--selection", rule]) == 0
    assert loads(out.read_bytes()).metadata["trainer"]["selection"] == rule
    capsys.readouterr()
    assert main([*args, "--selection", rule]) == 2
    assert "give --trained-by too" in capsys.readouterr().err
