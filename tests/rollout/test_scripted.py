import gymnasium as gym
import pytest

from agentgym_bench.agent.parsing import parse_reply
from agentgym_bench.agent.policies import oracle_reply
from agentgym_bench.rollout.scripted import NoisyOraclePolicy, OraclePolicy, RandomPolicy
from tests.rollout.toy_game import TOY_ID


def envs(n=20):
    out = []
    for seed in range(n):
        env = gym.make(TOY_ID)
        env.reset(seed=seed)
        out.append(env.unwrapped)
    return out


def test_oracle_and_noisy_oracle_at_epsilon_0_agree():
    batch = envs()
    conversations = [[]] * len(batch)
    oracle = [g.text for g in OraclePolicy().generate(conversations, batch)]
    assert oracle == [oracle_reply(e) for e in batch]
    assert [g.text for g in NoisyOraclePolicy(0.0, seed=3).generate(conversations, batch)] == oracle


def test_random_replies_are_valid_seeded_and_within_the_turn_limit():
    batch = envs()
    a = [g.text for g in RandomPolicy(1).generate([[]] * 20, batch)]
    b = [g.text for g in RandomPolicy(1).generate([[]] * 20, batch)]
    assert a == b
    for reply, env in zip(a, batch, strict=True):
        parsed = parse_reply(reply)
        assert parsed.format_ok and 1 <= len(parsed.actions) <= env.max_actions_per_turn
        assert set(parsed.actions) <= set(env.valid_actions)
    assert max(len(parse_reply(r).actions) for r in a) == 2  # the toy id allows 2 actions a turn
    assert {len(parse_reply(g.text).actions) for g in RandomPolicy(1, max_actions=1).generate([[]] * 20, batch)} == {1}


def test_noisy_oracle_mixes_in_random_turns():
    batch = envs(200)
    oracle = [oracle_reply(e) for e in batch]
    noisy = [g.text for g in NoisyOraclePolicy(0.5, seed=0).generate([[]] * 200, batch)]
    differ = sum(n != o for n, o in zip(noisy, oracle, strict=True))
    assert 20 < differ < 100  # about half the turns are random, and a random turn sometimes equals the oracle's


def test_scripted_policies_need_the_envs():
    with pytest.raises(ValueError, match="envs"):
        OraclePolicy().generate([[]])
    with pytest.raises(ValueError, match="epsilon"):
        NoisyOraclePolicy(1.5)
    with pytest.raises(ValueError, match="max_actions"):
        RandomPolicy(max_actions=0)


def test_noisy_oracle_can_plan_fewer_actions_a_turn():
    batch = envs(40)
    full = [parse_reply(oracle_reply(e)).actions for e in batch]
    capped = [parse_reply(g.text).actions
              for g in NoisyOraclePolicy(0.0, max_oracle_actions=1).generate([[]] * 40, batch)]
    assert max(len(a) for a in full) == 2 and max(len(a) for a in capped) == 1
    assert all(c == f[:1] for c, f in zip(capped, full, strict=True))  # the toy oracle walks straight to the goal
    with pytest.raises(ValueError, match="max_oracle_actions"):
        NoisyOraclePolicy(0.1, max_oracle_actions=0)


def test_noisy_oracle_follows_another_demonstrator_where_named():
    webshop = gym.make("AgentWebShop-v0", prompt="compact")
    webshop.reset(seed=10_000)
    mixed = [webshop.unwrapped, *envs(2)]
    policy = NoisyOraclePolicy(0.0, max_oracle_actions=1, demonstrators={"AgentWebShop-v0": "first-hit"})
    replies = [parse_reply(g.text).actions for g in policy.generate([[]] * 3, mixed)]
    instruction = webshop.unwrapped.game.backend.session.goal["instruction_text"]
    assert replies[0] == [f"search[{instruction}]"]  # the oracle would search "<type> <attributes>"
    assert replies[0] != parse_reply(oracle_reply(webshop.unwrapped)).actions
    assert replies[1:] == [parse_reply(oracle_reply(e)).actions[:1] for e in mixed[1:]]
    with pytest.raises(ValueError, match="has no 'first-hit' demonstrator"):
        NoisyOraclePolicy(0.0, demonstrators={TOY_ID: "first-hit"}).generate([[]], envs(1))
    with pytest.raises(ValueError, match="demonstrator 'best'"):
        NoisyOraclePolicy(0.0, demonstrators={TOY_ID: "best"})
