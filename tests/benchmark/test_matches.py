"""The two-player suites (agentgym-ma-v2 and its validation twin) and their evaluation into match records."""

from __future__ import annotations

import json

import pytest

from agentgym_bench.benchmark.evaluate import evaluate_suite
from agentgym_bench.benchmark.kinds import suite_policy
from agentgym_bench.benchmark.matches import match_key_tag, play_entry
from agentgym_bench.benchmark.results import dumps, loads
from agentgym_bench.benchmark.scores import summarize
from agentgym_bench.benchmark.suites import load_suite, parse_suite
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.specs import Sampling
from agentgym_bench.seeds import TEST_SEEDS, TRAIN_SEED_START
from agentgym_bench.stats import wilson_interval
from tests.benchmark.conftest import suite_of


def test_the_test_suite_holds_held_out_seeds_disjoint_from_the_single_agent_suite():
    ma, single = load_suite("agentgym-ma-v2"), load_suite("agentgym-v2")
    assert ma.multiagent and not single.multiagent and ma.split == "test"
    single_seeds = {s for e in single.entries for s in e.seeds}
    for e in ma.entries:
        assert e.seeds.start in TEST_SEEDS and e.seeds.stop - 1 in TEST_SEEDS
        assert not single_seeds & set(e.seeds)
        assert e.env_id == "Bargain-v0" and e.prompts == () and e.ceiling == 1.0
    assert [e.opponent for e in ma.entries] == ["random", "scripted", "self"]
    # 400 matches: the 95% Wilson interval of a rate near 0.5 is about +-0.05
    assert all(e.episodes == 400 for e in ma.entries)
    low, high = wilson_interval(200, 400)
    assert high - low <= 0.1


def test_the_validation_twin_has_the_same_entries_on_validation_seeds():
    ma, val = load_suite("agentgym-ma-v2"), load_suite("agentgym-ma-v2-validation")
    assert val.split == "validation"
    assert [(e.name, e.env_id, e.env_kwargs, e.opponent, e.episodes) for e in ma.entries] == [
        (e.name, e.env_id, e.env_kwargs, e.opponent, e.episodes) for e in val.entries]
    for e in val.entries:
        assert e.seeds.stop <= TRAIN_SEED_START and not set(e.seeds) & set(range(TEST_SEEDS.start, TEST_SEEDS.start
                                                                                  + 10**6))


def test_seats_alternate_by_seed():
    entry = load_suite("agentgym-ma-v2").entries[0]
    seats = [entry.learner_seat(s) for s in entry.seeds]
    assert seats[:4] == ["player_0", "player_1", "player_0", "player_1"]
    assert seats.count("player_0") == seats.count("player_1") == 200


@pytest.mark.parametrize("change, message", [
    (lambda e: e.update(opponent="grandmaster"), "opponent 'grandmaster' is not one of"),
    (lambda e: e.update(prompts=["ragen"]), "no prompts and no oracle_success"),
    (lambda e: e.update(env_id="Chess-v9"), "not a two-player env id"),
])
def test_bad_match_entries_are_refused(change, message):
    data = json.loads(json.dumps(ma_suite_data(4)))
    change(data["entries"][0])
    with pytest.raises(ValueError, match=message):
        parse_suite(data)


def test_a_suite_cannot_mix_single_agent_and_match_entries():
    data = ma_suite_data(4)
    data["entries"].append({"name": "bandit", "env_id": "AgentBandit-v0", "env_kwargs": {}, "prompts": ["ragen"],
                            "episodes": 4, "oracle_success": 1.0})
    with pytest.raises(ValueError, match="mixes single-agent and match entries"):
        parse_suite(data)


def ma_suite_data(matches: int) -> dict:
    full = load_suite("agentgym-ma-v2")
    return {"name": "tiny-ma", "version": 2, "split": "test", "seed_start": full.seed_start, "description": "tiny",
            "entries": [{"name": e.name, "env_id": e.env_id, "env_kwargs": e.env_kwargs, "opponent": e.opponent,
                         "episodes": matches} for e in full.entries]}


@pytest.fixture(scope="module")
def tiny():
    return parse_suite(ma_suite_data(6))


def test_scripted_results_hold_every_move_of_both_seats_and_a_consistent_summary(tiny):
    policy, record = suite_policy("scripted", tiny, Sampling())
    results = loads(dumps(evaluate_suite(policy, tiny, record, history=None)))  # through the schema and back
    assert results.metadata["policy"]["kind"] == "scripted" and results.metadata["compute"]["episodes"] == 18
    for entry, suite_entry in zip(results.entries, tiny.entries, strict=True):
        assert entry.opponent == suite_entry.opponent and "prompt" not in entry.env_kwargs
        assert [ep.seed for ep in entry.episodes] == list(suite_entry.seeds)
        for i, ep in enumerate(entry.episodes):
            m = ep.match
            assert m.learner == f"player_{i % 2}" and m.opponent == suite_entry.opponent
            assert [t.agent for t in ep.turns] == ["player_0", "player_1"] * (len(ep.turns) // 2)  # both seats
            assert all("<answer>" in t.reply for t in ep.turns)
            assert ep.return_ == m.payoffs[m.learner] and ep.success == (m.outcome == "win")
            other = "player_1" if m.learner == "player_0" else "player_0"
            assert m.outcome == ("win" if m.payoffs[m.learner] > m.payoffs[other] else
                                 "loss" if m.payoffs[m.learner] < m.payoffs[other] else "draw")
            assert m.deal or m.payoffs == {"player_0": 0.0, "player_1": 0.0}  # no deal pays nothing
    summary = summarize(results, tiny)
    by_name = {e.name: e for e in summary.entries}
    vs_random = results.entry("bargain-vs-random")
    assert by_name["bargain-vs-random"].success.successes == sum(ep.match.outcome == "win" for ep in
                                                                 vs_random.episodes)
    assert by_name["bargain-vs-random"].match.loss.successes == sum(ep.match.outcome == "loss" for ep in
                                                                    vs_random.episodes)
    means = [sum(ep.return_ for ep in e.episodes) / 6 for e in results.entries]
    assert summary.score[0] == pytest.approx(sum(means) / 3)


def test_the_score_ranks_scripted_above_random(tiny):
    scores = {}
    for spec in ("scripted", "random"):
        policy, record = suite_policy(spec, tiny, Sampling(seed=1))
        scores[spec] = summarize(evaluate_suite(policy, tiny, record), tiny).score[0]
    assert scores["scripted"] > scores["random"] + 0.1


def test_a_model_match_replies_the_same_played_in_the_entry_or_alone(tiny, model_dir):
    """Keyed sampling: the default model's replies in a match depend on the match alone."""
    from agentgym_bench.multiagent.selfplay import play_matches

    policy, _ = suite_policy(f"hf:{model_dir}", tiny, Sampling(max_new_tokens=8, seed=5))
    entry = tiny.entry("bargain-self-play")
    together = play_entry(policy, entry)
    alone = play_matches(entry.env_id, [entry.seeds[3]], policy, policy, env_kwargs=entry.env_kwargs,
                         learner_seats=[entry.learner_seat(entry.seeds[3])],
                         key_tag=match_key_tag(entry.env_id, "self"))[0]
    replies = {a: [t.token_ids for t in t_.turns] for a, t_ in together[3].trajectories.items()}
    assert replies == {a: [t.token_ids for t in t_.turns] for a, t_ in alone.trajectories.items()}
    assert all(replies.values())


def test_policies_that_do_not_fit_the_suite_are_refused(tiny):
    with pytest.raises(UserError, match="no oracle exists"):
        suite_policy("oracle", tiny, Sampling())
    with pytest.raises(UserError, match="single-agent: use oracle"):
        suite_policy("scripted", suite_of(["bandit"], 2), Sampling())
    with pytest.raises(UserError, match=r"policy 'foo' is not one of: random, scripted, hf:PATH"):  # its own names
        suite_policy("foo", tiny, Sampling())
    policy, record = suite_policy("random", tiny, Sampling())
    with pytest.raises(UserError, match="no prompt template"):
        evaluate_suite(policy, tiny, record, prompt="compact")


def test_eval_command_writes_a_two_player_results_file(tmp_path, capsys):
    from agentgym_bench.cli import main

    suite_file = tmp_path / "tiny-ma.json"
    suite_file.write_text(json.dumps(ma_suite_data(4)))
    out = tmp_path / "r.json.gz"
    assert main(["eval", "--suite", str(suite_file), "--policy", "random", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "12 matches" in printed and "score (mean over entries of the policy's mean payoff)" in printed
    assert loads(out.read_bytes()).entries[2].opponent == "self"
    other = tmp_path / "other.json.gz"  # not out: an existing --out is refused before anything else
    assert main(["eval", "--suite", str(suite_file), "--policy", "oracle", "--out", str(other)]) == 2
    assert "no oracle exists" in capsys.readouterr().err
    assert main(["eval", "--suite", str(suite_file), "--policy", "random", "--prompt", "compact",
                 "--out", str(other)]) == 2
    printed = capsys.readouterr()
    assert "there is no prompt template to choose" in printed.err and "entry 1/" not in printed.out  # before any work
    assert not other.exists()
