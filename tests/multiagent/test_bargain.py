"""Bargain: rules (hand-checked cases), the Parallel API, determinism, the scripted opponent, fuzzed replies."""

import random
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo", reason="PettingZoo envs need the multiagent extra: pip install -e '.[multiagent]'")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test  # noqa: E402
from pettingzoo.utils.conversions import parallel_to_aec  # noqa: E402

from agentgym_bench.agent.parsing import format_reply  # noqa: E402
from agentgym_bench.multiagent import bargain_rules as rules  # noqa: E402
from agentgym_bench.multiagent.bargain import BargainEnv, scripted_reply  # noqa: E402


def reply(demand):
    return format_reply([" ".join(map(str, demand))])


@pytest.mark.parametrize(("a", "b", "counts", "expected"), [
    ((2, 0, 1), (1, 1, 1), (3, 1, 2), True),
    ((2, 1, 1), (1, 1, 1), (3, 1, 2), False),  # two hats asked, one in the pool
    ((0, 0, 0), (3, 1, 2), (3, 1, 2), True),
])
def test_fits(a, b, counts, expected):
    assert rules.fits(a, b, counts) is expected


@pytest.mark.parametrize(("move", "expected"), [
    ("2 1 0", (2, 1, 0)), ("books 3, hats 1, balls 2", (3, 1, 2)), ("4 0 0", None), ("1 2", None),
    ("1 1 1 1", None), (None, None), ("001 0 0", None), ("-1 0 0", None), ("books -1, hats 0, balls 0", None),
    ("2-1-0", (2, 1, 0)),
])
def test_read_demand(move, expected):
    assert rules.read_demand(move, (3, 1, 2)) == expected


def test_deals_are_worth_ten_to_each_player_and_come_from_the_rng_only():
    for seed in range(50):
        counts, a, b = rules.sample_deal(np.random.default_rng(seed))
        assert rules.value(counts, a) == rules.value(counts, b) == rules.TOTAL_VALUE
        assert a != b and all(1 <= c <= rules.MAX_COUNT for c in counts)
        assert (counts, a, b) == rules.sample_deal(np.random.default_rng(seed))


def test_scripted_demand_takes_a_fitting_deal_it_likes_and_concedes_over_rounds():
    counts, values = (3, 1, 2), (2, 4, 0)
    assert rules.scripted_demand(counts, values, 0, 5, None) == (3, 1, 0)  # all it values
    assert rules.scripted_demand(counts, values, 1, 5, (0, 0, 2)) == (3, 1, 0)  # fits and worth 10
    first = rules.scripted_demand(counts, values, 1, 5, (3, 1, 2))
    last = rules.scripted_demand(counts, values, 4, 5, (1, 0, 2))
    assert rules.value(first, values) >= 8 and last == (2, 1, 0)  # last round: any fitting bundle worth > 0


def test_parallel_api_and_its_aec_conversion():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parallel_api_test(BargainEnv(), num_cycles=200)
        api_test(parallel_to_aec(BargainEnv()), num_cycles=200)
        parallel_seed_test(BargainEnv)


def test_docstring_example_is_the_real_first_observation():
    obs, _ = BargainEnv().reset(seed=0)
    text = obs["player_0"]["text"]
    doc = BargainEnv.__doc__
    for line in ["split a pool of 3 books, 2 hats, 2 balls.", "Your values: book 2, hat 0, ball 2",
                 "Round 1 of 5. Answer with three numbers, books hats balls, e.g. <answer>1 0 1</answer>."]:
        assert line in text and line in doc


def test_a_deal_pays_each_its_own_values_and_observations_are_private():
    env = BargainEnv()
    obs, _ = env.reset(seed=3)
    assert obs["player_0"]["text"] != obs["player_1"]["text"]
    assert f"book {env.values['player_1'][0]}," in obs["player_1"]["text"]
    counts = env.counts
    _, rewards, terms, _, infos = env.step({"player_0": reply(counts), "player_1": reply(counts)})  # both greedy
    assert not any(terms.values()) and rewards == {"player_0": 0.0, "player_1": 0.0}
    give = (counts[0], 0, 0)
    _, rewards, terms, _, infos = env.step({"player_0": reply(give), "player_1": reply((0, counts[1], counts[2]))})
    assert all(terms.values()) and infos["player_0"]["deal"]
    assert rewards["player_0"] == rules.payoff(give, env.values["player_0"])
    assert rewards["player_1"] == rules.payoff((0, counts[1], counts[2]), env.values["player_1"])
    assert env.agents == []


def test_no_deal_after_max_rounds_pays_nothing():
    env = BargainEnv(max_rounds=2)
    env.reset(seed=1)
    for _ in range(2):
        _, rewards, terms, _, infos = env.step({"player_0": "nonsense", "player_1": reply(env.counts)})
    assert all(terms.values()) and rewards == {"player_0": 0.0, "player_1": 0.0}
    assert infos["player_0"]["valid_demand"] is False and infos["player_0"]["outcome"] == "draw"


def test_same_seed_same_game_and_state_keys_and_caller_rng_untouched():
    random.seed(0)
    np.random.seed(0)
    py, npy = random.getstate(), np.random.get_state()

    def run(seed):
        env, out = BargainEnv(), []
        obs, infos = env.reset(seed=seed)
        out.append((obs, infos))
        while env.agents:
            out.append(env.step({a: scripted_reply(env, a) for a in env.agents}))
        return out

    assert run(4) == run(4) and run(4) != run(5)
    assert random.getstate() == py and np.array_equal(np.random.get_state()[1], npy[1])


FUZZ = ["", "é😀√" * 5000, "<answer>" * 20_000, "<think><answer>1 1 1</answer></think>", None, 42,
        "<think></think><answer>" + "9 " * 400_000 + "</answer>", "<think></think><answer>\x00\x1b[31m</answer>",
        "<think></think><answer><answer>1 0 0</answer></answer>", "<think></think><answer>1e9 1 1</answer>"]


def test_fuzzed_replies_never_crash():
    env = BargainEnv(max_rounds=3)
    env.reset(seed=0)
    for i, junk in enumerate(FUZZ * 2):
        if not env.agents:
            env.reset(seed=i)
        obs, *_ = env.step({"player_0": junk, "player_1": FUZZ[-1 - i % len(FUZZ)]})
        for agent, o in obs.items():
            assert o in env.observation_space(agent)


def test_two_scripted_bargainers_almost_always_deal():
    """The claim in BargainEnv's docstring and docs/multiagent.md."""
    deals, payoffs = 0, []
    for seed in range(300):
        env = BargainEnv()
        env.reset(seed=seed)
        while env.agents:
            _, rewards, _, _, infos = env.step({a: scripted_reply(env, a) for a in env.agents})
        deals += infos["player_0"]["deal"]
        payoffs += list(rewards.values())
    assert deals >= 0.95 * 300 and np.mean(payoffs) > 0.6


def test_pettingzoo_max_cycles_test_runs_on_the_module():
    from pettingzoo.test import max_cycles_test

    from agentgym_bench.multiagent import bargain

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        max_cycles_test(bargain)


def test_max_cycles_truncates_both_without_a_deal_and_says_so():
    env = BargainEnv(max_cycles=2)
    env.reset(seed=0)
    nothing = {a: "no answer" for a in env.agents}
    _, _, terms, truncs, _ = env.step(nothing)
    assert not any(terms.values()) and not any(truncs.values())
    obs, rewards, terms, truncs, infos = env.step(nothing)
    assert truncs == {"player_0": True, "player_1": True} and not any(terms.values())
    assert rewards == {"player_0": 0.0, "player_1": 0.0} and not infos["player_0"]["deal"]
    assert "Stopped after round 2 (the cycle limit)" in obs["player_0"]["text"] and env.agents == []
    with pytest.raises(ValueError, match="max_cycles"):
        BargainEnv(max_cycles=0)


def test_max_cycles_at_or_above_max_rounds_changes_nothing():
    for max_cycles in (None, 5, 9):
        env = BargainEnv(max_cycles=max_cycles)
        env.reset(seed=0)
        for _ in range(5):
            _, _, terms, truncs, _ = env.step({a: "no answer" for a in env.agents})
        assert all(terms.values()) and not any(truncs.values())


def test_best_against_random_is_the_best_plan_and_a_hand_count():
    """Against demands drawn afresh each round, nothing seen informs the future, so the best policy is a fixed plan of
    demands: the dynamic programme equals the best of every plan, enumerated; and one pool by hand."""
    import itertools

    def plan_value(plan, counts, values):  # exact: the first demand that fits ends the game
        value, reach = 0.0, 1.0
        for bundle in plan:
            fit = np.prod([(c - x + 1) / (c + 1) for x, c in zip(bundle, counts, strict=True)])
            value, reach = value + reach * fit * rules.payoff(bundle, values), reach * (1 - fit)
        return value

    # one book worth 10 (the rest worth 0): demand it; 1/2 it fits each round; 0.5, then 0.5 + 0.25
    assert rules.best_against_random((1, 1, 1), (10, 0, 0), 1) == pytest.approx(0.5)
    assert rules.best_against_random((1, 1, 1), (10, 0, 0), 2) == pytest.approx(0.75)
    rng = np.random.default_rng(0)
    for _ in range(6):
        counts, values, _ = rules.sample_deal(rng)
        bundles = rules.all_bundles(counts)
        for rounds in (1, 2):
            best = max(plan_value(plan, counts, values) for plan in itertools.product(bundles, repeat=rounds))
            assert rules.best_against_random(counts, values, rounds) == pytest.approx(best, abs=1e-12)


def test_a_step_before_any_reset_says_so():
    with pytest.raises(RuntimeError, match=r"step\(\) called before any game started; call reset\(\) first"):
        BargainEnv().step({"player_0": "<answer>1 0 0</answer>", "player_1": "<answer>0 0 0</answer>"})


def test_v1_restates_the_deal_every_round_and_plays_the_same_game_as_v0():
    """Bargain-v1: a prompt with history 0 still says what the items are worth to the seat (v0's only say it in
    the first observation); deals, rewards and state keys are v0's."""
    from agentgym_bench.multiagent.bargain import BARGAIN_IDS

    v0, v1 = BARGAIN_IDS["Bargain-v0"](), BARGAIN_IDS["Bargain-v1"]()
    first0, _ = v0.reset(seed=5)
    first1, _ = v1.reset(seed=5)
    assert first0 == first1 and v1.metadata["name"] == "bargain_v1" and v0.metadata["name"] == "bargain_v0"
    moves = [{"player_0": reply(v0.counts), "player_1": reply(v0.counts)},  # both greedy: no deal
             {"player_0": "nonsense", "player_1": reply(v0.counts)}]
    for actions in moves:
        obs0, rewards0, _, _, infos0 = v0.step(actions)
        obs1, rewards1, _, _, infos1 = v1.step(actions)
        assert rewards0 == rewards1 and infos0 == infos1
        for agent in ("player_0", "player_1"):
            own = ", ".join(f"{item} {v}" for item, v in zip(rules.ITEMS, v1.values[agent], strict=True))
            restated = f"Pool: {rules.describe(v1.counts)}. Your values: {own}."
            assert obs1[agent]["text"] == restated + "\n" + obs0[agent]["text"]
            assert "Your values" not in obs0[agent]["text"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parallel_api_test(BARGAIN_IDS["Bargain-v1"](), num_cycles=200)
