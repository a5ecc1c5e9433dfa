import pytest

from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.policy import Generation
from agentgym_bench.rollout.scripted import NoisyOraclePolicy, OraclePolicy, RandomPolicy
from agentgym_bench.rollout.trajectory import Trajectory, read_jsonl, write_jsonl
from agentgym_bench.seeds import TRAIN_SEED_START
from tests.rollout.toy_game import TOY_ID


class FixedReply:
    """Always the same reply; records the batch sizes it was called with."""

    def __init__(self, reply="<think></think><answer>Right || Left</answer>"):
        self.reply, self.batch_sizes = reply, []

    def generate(self, conversations, envs=None):
        self.batch_sizes.append(len(conversations))
        return [Generation(self.reply) for _ in conversations]


def play(groups, policy, **kw):
    trajectories = groups.rollout(policy, **kw)
    return [(t.turns[0].observation, [(u.reply, u.reward, u.info["state_key"]) for u in t.turns], t.success)
            for t in trajectories]


def test_members_of_a_group_start_alike_and_identical_actions_give_identical_outcomes():
    groups = EnvGroups([TOY_ID], [6], 4, env_kwargs={"prompt": "compact"})
    outcomes = play(groups, FixedReply())  # the toy game slips at random: outcomes depend on the seeded env RNG
    for g in range(6):
        members = outcomes[4 * g : 4 * g + 4]
        assert all(m == members[0] for m in members)
    assert len({outcomes[4 * g][0] for g in range(6)}) > 1  # groups differ


def test_seeds_follow_groups_tags_and_iterations():
    groups = EnvGroups([TOY_ID, "AgentFrozenLake-v0"], [3, 2], 2)
    assert groups.num_env_groups == 5
    assert groups.group_seeds() == [TRAIN_SEED_START + j for j in (0, 1, 2, 0, 1)]
    first = groups.rollout(RandomPolicy(0))
    assert [t.seed for t in first] == [TRAIN_SEED_START + j for j in (0, 0, 1, 1, 2, 2, 0, 0, 1, 1)]
    assert [t.env_id for t in first] == [TOY_ID] * 6 + ["AgentFrozenLake-v0"] * 4
    assert [t.group for t in first] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert groups.iteration == 1
    assert groups.group_seeds() == [TRAIN_SEED_START + 5 + j for j in (0, 1, 2, 0, 1)]


def test_validation_set_uses_fixed_seeds_per_tag():
    val = EnvGroups.validation([TOY_ID, "AgentFrozenLake-v0"], [4, 3], env_kwargs={"prompt": "compact"})
    a = val.rollout(OraclePolicy())
    b = val.rollout(OraclePolicy())
    assert [t.seed for t in a] == [0, 1, 2, 3, 0, 1, 2]
    assert [t.to_dict() for t in a] == [t.to_dict() for t in b]


def test_each_turn_is_one_batched_call_and_finished_envs_drop_out():
    policy = FixedReply("<think></think><answer>Right</answer>")
    groups = EnvGroups([TOY_ID], [8], 2, env_kwargs={"prompt": "compact"})
    trajectories = groups.rollout(policy)
    assert policy.batch_sizes[0] == 16
    assert policy.batch_sizes == sorted(policy.batch_sizes, reverse=True)
    assert policy.batch_sizes == [sum(len(t.turns) > k for t in trajectories) for k in range(len(policy.batch_sizes))]
    assert all(t.terminated for t in trajectories)


def test_thread_pool_gives_the_same_trajectories():
    kwargs = {"env_kwargs": {"prompt": "compact"}}
    inline = EnvGroups([TOY_ID], [4], 3, **kwargs).rollout(NoisyOraclePolicy(0.5, seed=1))
    pooled = EnvGroups([TOY_ID], [4], 3, max_workers=4, **kwargs).rollout(NoisyOraclePolicy(0.5, seed=1))
    assert [t.to_dict() for t in inline] == [t.to_dict() for t in pooled]


def test_history_window_shapes_the_prompts():
    seen = []

    class Recorder(FixedReply):
        def generate(self, conversations, envs=None):
            seen.append(conversations[0])
            return super().generate(conversations, envs)

    EnvGroups([TOY_ID], [1], 1, seed=5).rollout(Recorder("nonsense"), history=1)
    assert [len(c) for c in seen] == [2, 4, 4, 4]  # system + user, then one past (user, assistant) pair
    assert seen[0][0]["role"] == "system"
    seen.clear()
    trajectory = EnvGroups([TOY_ID], [1], 1, seed=5).rollout(Recorder("nonsense"))[0]
    assert [len(c) for c in seen] == [2, 4, 6, 8]
    assert [trajectory.messages(t) for t in range(4)] == seen


def test_trajectory_records_turns_and_round_trips_through_jsonl(tmp_path):
    trajectories = EnvGroups([TOY_ID], [3], 2).rollout(NoisyOraclePolicy(0.3, seed=0))
    t = trajectories[0]
    for turn in t.turns:
        assert turn.actions == turn.info["actions"] and turn.executed_actions == turn.info["executed_actions"]
    assert t.episode_reward == pytest.approx(sum(u.reward for u in t.turns))
    assert t.group_key == f"{TOY_ID}_0_{TRAIN_SEED_START}"
    path = tmp_path / "t.jsonl"
    write_jsonl(path, trajectories)
    back = list(read_jsonl(path))
    assert all(isinstance(b, Trajectory) for b in back)
    assert [b.to_dict() for b in back] == [a.to_dict() for a in trajectories]


def test_state_key_is_the_state_replied_to():
    t = EnvGroups([TOY_ID], [1], 1, env_kwargs={"prompt": "compact"}).rollout(OraclePolicy())[0]
    assert t.turns[0].state_key == t.turns[0].observation.split("\n")[0]
    for previous, turn in zip(t.turns, t.turns[1:], strict=False):
        assert turn.state_key == previous.info["state_key"]


def test_oracle_beats_random_on_frozen_lake():
    groups = EnvGroups.validation(["AgentFrozenLake-v0"], [200], env_kwargs={"prompt": "compact"})
    oracle = sum(t.success for t in groups.rollout(OraclePolicy()))
    random = sum(t.success for t in groups.rollout(RandomPolicy(0)))
    assert oracle > random + 20


@pytest.mark.parametrize("args, match", [
    (([TOY_ID], [1, 2]), "same length"),
    (([TOY_ID], [0]), "positive"),
    (([TOY_ID, TOY_ID], [1, 1]), "repeats"),
    ((["NoSuchEnv-v0"], [1]), "not registered"),
    (([TOY_ID], 4), r"must be lists, one entry per env id: EnvGroups\(\['AgentFrozenLake-v0'\], \[4\]"),
    ((TOY_ID, [4]), "must be lists"),
])
def test_bad_configuration(args, match):
    with pytest.raises(ValueError, match=match):
        EnvGroups(*args)


def test_bad_group_size_and_tag_kwargs():
    with pytest.raises(ValueError, match="group_size"):
        EnvGroups([TOY_ID], [1], 0)
    with pytest.raises(ValueError, match="tag_kwargs"):
        EnvGroups([TOY_ID], [1], tag_kwargs={"Other-v0": {}})


def test_shards_play_exactly_the_groups_and_seeds_of_one_process():
    one = EnvGroups([TOY_ID, "AgentFrozenLake-v0"], [4, 2], 2, env_kwargs={"prompt": "compact"})
    shards = [EnvGroups([TOY_ID, "AgentFrozenLake-v0"], [4, 2], 2, env_kwargs={"prompt": "compact"}, shard=(r, 3))
              for r in range(3)]
    for _ in range(2):  # the counter advances per rollout over the global groups
        expected = [(t.env_id, t.seed, t.group, t.group_key) for t in one.rollout(RandomPolicy(0))]
        got = [(t.env_id, t.seed, t.group, t.group_key) for s in shards for t in s.rollout(RandomPolicy(0))]
        assert got == expected
    assert [s.num_env_groups for s in shards] == [6, 6, 6] and shards[1].groups == [2, 3]
    with pytest.raises(ValueError, match="6 env groups cannot be split evenly over 4 processes"):
        EnvGroups([TOY_ID], [6], 1, shard=(0, 4))


def test_a_length_cap_ends_episodes_before_a_turn_that_does_not_fit():
    policy = FixedReply("<think></think><answer>Right</answer>")
    groups = EnvGroups([TOY_ID], [2], 1, env_kwargs={"prompt": "compact"})
    capped = groups.rollout(policy, history=None, prompt_fits=lambda messages: len(messages) <= 4)
    for t in capped:  # system + user, then + assistant + user: the third prompt has 6 messages
        assert len(t.turns) <= 2 and (t.truncated or t.terminated)
    assert any(t.truncated and len(t.turns) == 2 for t in capped)
    with pytest.raises(ValueError, match="first prompt of .* does not fit the length cap"):
        groups.rollout(policy, prompt_fits=lambda messages: False)


def test_progress_lines_count_each_episode_once_as_ended_or_playing(monkeypatch):
    """An API walkthrough of 2026-12-02 read `1/400 episodes ... 400 playing`: the playing count was the turn's
    starting count, shown beside the episodes that turn ended."""
    import io
    import re

    from agentgym_bench.progress import LineProgress
    from agentgym_bench.rollout import engine

    out = io.StringIO()
    monkeypatch.setattr(engine, "progress_bar", lambda total, desc, unit, **kw: LineProgress(total, desc, unit, 0.0,
                                                                                           file=out))
    with EnvGroups.validation(["AgentFrozenLake-v0"], [64]) as groups:
        groups.rollout(RandomPolicy(0), progress=True)
    lines = [re.search(r": (\d+)/64 .*, (\d+) playing", line) for line in out.getvalue().splitlines()]
    counts = [(int(m[1]), int(m[2])) for m in lines if m]
    assert len(counts) >= 2 and all(ended + playing == 64 for ended, playing in counts), counts
    assert "turn 2/5, " in out.getvalue()  # FrozenLake's 5 turns: how far the episodes can still go


class Returns:
    """A policy of one's own whose generate returns ``make(conversations)``."""

    def __init__(self, make):
        self.make = make

    def generate(self, conversations, envs=None):
        return self.make(conversations)


@pytest.mark.parametrize(("make", "match"), [
    (lambda cs: ["<answer>Right</answer>" for _ in cs], r"returned '<answer>Right</answer>' among its replies; each "
                                                         r"must be a Generation whose text is a string"),
    (lambda cs: (Generation("x") for _ in cs), "generate returned generator; it must return a list of Generation"),
    (lambda cs: None, "generate returned NoneType; it must return a list of Generation"),
    (lambda cs: [Generation(None) for _ in cs], r"returned Generation\(None\) among its replies"),
    (lambda cs: [Generation("x")], "the policy returned 1 replies for 4 conversations"),
])
def test_a_policy_that_breaks_the_protocol_is_named_before_any_env_steps(make, match):
    with EnvGroups([TOY_ID], [2], group_size=2) as groups, pytest.raises((TypeError, RuntimeError), match=match):
        groups.rollout(Returns(make))
