"""The TRL route with a real ``GRPOTrainer`` and the locally built default model (CPU)."""

from __future__ import annotations

import os
import warnings
from functools import partial

import pytest

pytest.importorskip("trl", reason="the TRL route needs trl: pip install -e '.[trl]'")

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from agentgym_bench.adapters.trl import (  # noqa: E402
    AgentToolEnv,
    EpisodeRollout,
    checkpointing_off,
    completion_view,
    env_reward,
    environment_dataset,
    episode_dataset,
    episode_prompt,
    parse_episode_prompt,
)
from agentgym_bench.rollout.hf import load_model  # noqa: E402
from agentgym_bench.rollout.tokens import trajectory_token_view  # noqa: E402
from agentgym_bench.seeds import TEST_SEEDS  # noqa: E402
from tests.adapters.episodes import native_episode  # noqa: E402
from tests.adapters.tool_model import tool_calling  # noqa: E402
from trainers.sft.default_model import build_default_model  # noqa: E402

ENV = "AgentFrozenLake-v0"
KWARGS = {"prompt": "compact"}


def grpo_config(tmp_path, **overrides) -> GRPOConfig:
    settings = dict(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, report_to="none",
                    per_device_train_batch_size=4, num_generations=2, max_completion_length=256,
                    save_strategy="no", max_steps=2, logging_steps=1, seed=0, learning_rate=1e-3,
                    **checkpointing_off())
    return GRPOConfig(**{**settings, **overrides})


def test_checkpointing_off_is_off_without_a_deprecation_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        config = grpo_config(tmp_path)
    assert config.gradient_checkpointing is False
    assert getattr(config, "activation_checkpointing", False) is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # TRL's own default sets the old name
        assert GRPOConfig(output_dir=str(tmp_path / "on"), use_cpu=True, bf16=False).gradient_checkpointing is True


def assert_native(trajectory) -> None:
    """The episode is what the native env gives for the same seed and replies."""
    replies = [t.reply for t in trajectory.turns]
    expected = native_episode(trajectory.env_id, trajectory.seed, replies, **KWARGS)
    observations = [t.observation for t in trajectory.turns] + [trajectory.final_observation]
    assert observations == [step[0] for step in expected]
    assert [t.reward for t in trajectory.turns] == [step[1] for step in expected[1:]]
    assert trajectory.success == expected[-1][4]["success"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_default_model(tmp_path_factory.mktemp("model") / "default")


@pytest.fixture(scope="module")
def trainer(model_dir, tmp_path_factory):
    model, tokenizer = load_model(model_dir)
    return GRPOTrainer(model=model, reward_funcs=[env_reward], args=grpo_config(tmp_path_factory.mktemp("trl")),
                       train_dataset=episode_dataset(ENV, range(10_000, 10_008)), processing_class=tokenizer,
                       rollout_func=EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8))


def test_rollout_plays_native_episodes_and_returns_the_token_view(trainer):
    rollout = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8, seed=3)
    prompts = [episode_prompt(ENV, s) for s in (10_000, 10_000, 10_005, 10_005)]
    out = rollout(prompts, trainer)
    tokenizer = trainer.processing_class
    assert [t.seed for t in rollout.trajectories] == [10_000, 10_000, 10_005, 10_005]
    assert rollout.trajectories[0].turns[0].observation == rollout.trajectories[1].turns[0].observation  # one group
    for i, trajectory in enumerate(rollout.trajectories):
        assert_native(trajectory)
        view = trajectory_token_view(trajectory, tokenizer)
        assert out["prompt_ids"][i] + out["completion_ids"][i] == view.input_ids
        assert len(out["completion_ids"][i]) == len(out["logprobs"][i]) == len(out["env_mask"][i])
        model_tokens = [t for t, m in zip(out["completion_ids"][i], out["env_mask"][i], strict=True) if m]
        assert model_tokens == [tok for turn in trajectory.turns for tok in turn.token_ids]
        env_text = tokenizer.decode([t for t, m in zip(out["completion_ids"][i], out["env_mask"][i], strict=True)
                                     if not m], skip_special_tokens=True)
        for turn in trajectory.turns[1:]:
            assert turn.observation in env_text  # observations after the first are env tokens, masked out
        assert out["env_reward"][i] == pytest.approx(trajectory.episode_reward)
        sampled = [lp for turn in trajectory.turns for lp in turn.logprobs]
        assert [lp for lp, m in zip(out["logprobs"][i], out["env_mask"][i], strict=True) if m] == sampled
    assert out["prompt_ids"][0] == out["prompt_ids"][1] != out["prompt_ids"][2]


def test_completions_are_cut_at_max_completion_length_with_a_warning(trainer):
    prompts = [episode_prompt(ENV, s) for s in (10_000, 10_000, 10_005, 10_005)]
    whole = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8, seed=3)(prompts, trainer)
    limit = trainer.args.max_completion_length
    longest = max(len(c) for c in whole["completion_ids"])
    assert longest <= limit  # the fixture's limit cuts nothing
    trainer.args.max_completion_length = 12
    try:
        with pytest.warns(UserWarning, match=r"of 4 episodes ran past max_completion_length=12 tokens"):
            cut = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8, seed=3)(prompts, trainer)
    finally:
        trainer.args.max_completion_length = limit
    for key in ("completion_ids", "logprobs", "env_mask"):
        assert [row[:12] for row in whole[key]] == cut[key]
    assert cut["env_reward"] == whole["env_reward"] and cut["prompt_ids"] == whole["prompt_ids"]


def test_the_same_seed_gives_the_same_rollout(trainer):
    prompts = [episode_prompt(ENV, 10_001)] * 2
    first = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8, seed=1)(prompts, trainer)
    second = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8, seed=1)(prompts, trainer)
    assert first == second


def test_prompts_that_name_no_episode_are_clear_errors(trainer):
    with pytest.raises(ValueError, match="does not name an episode"):
        EpisodeRollout()(["tell me a story"], trainer)
    with pytest.raises(ValueError, match="unknown agent env id"):
        parse_episode_prompt('{"env_id": "AgentChess-v0", "seed": 1}')
    with pytest.raises(ValueError, match="non-negative"):
        episode_prompt(ENV, -3)
    with pytest.raises(ValueError, match=rf"^TRL training seeds {TEST_SEEDS.start + 5} meet the benchmark.s "
                       rf"held-out test seeds {TEST_SEEDS.start}\.\.{TEST_SEEDS.stop - 1} "):
        episode_dataset(ENV, [10_000, TEST_SEEDS.start + 5])
    assert parse_episode_prompt([{"role": "user", "content": episode_prompt(ENV, 4)}]) == (ENV, 4)


def test_training_seeds_cannot_play_webshop_test_goals(trainer):
    rollout = EpisodeRollout(env_kwargs={"split": "test"}, max_new_tokens=8)
    with pytest.raises(ValueError, match="test goals are held out"):
        rollout([episode_prompt("AgentWebShop-v0", 10_000)], trainer)


def test_completion_view_without_logprobs_fills_zeros(trainer):
    rollout = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8)
    rollout([episode_prompt(ENV, 10_002)], trainer)
    trajectory = rollout.trajectories[0]
    for turn in trajectory.turns:
        turn.logprobs = None
    _, completion_ids, logprobs, env_mask = completion_view(trajectory, trainer.processing_class)
    assert logprobs == [0.0] * len(completion_ids) and sum(env_mask) > 0


def episode_logprob(model, tokenizer, trajectory) -> float:
    """The model's log-probability of the episode's replies (its model tokens, given everything before them)."""
    view = trajectory_token_view(trajectory, tokenizer)
    ids = torch.tensor([view.input_ids])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1).gather(-1, ids[0, 1:, None])[:, 0]
    return float((logp * torch.tensor(view.loss_mask[1:], dtype=torch.float)).sum())


@pytest.mark.slow
def test_two_grpo_steps_on_cpu_change_the_model_and_train_on_the_env_rewards(model_dir, tmp_path):
    """A warm start on 600 non-slippery FrozenLake episodes (so rewards vary within groups), then 2 GRPO steps
    through ``rollout_func``: TRL trains on the env's rewards, and the update makes the better episodes of each
    group more likely and the worse ones less (advantage-weighted change of their log-probability > 0)."""
    import copy

    from trainers.sft.sft_config import SFTConfig
    from trainers.sft.warmstart import collect_demonstrations, finetune

    torch.set_num_threads(1)
    env_id = "AgentFrozenLakeNoSlip-v0"
    model, tokenizer = load_model(model_dir)
    config = SFTConfig(envs=(env_id,), episodes=600, epochs=3, batch_size=64, history=None)
    finetune(model, tokenizer, collect_demonstrations(config), config)
    start = copy.deepcopy(model)

    rollout = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=12)
    produced, seen = [], []

    def recording_rollout(prompts, trainer):
        out = rollout(prompts, trainer)
        produced.append((list(rollout.trajectories), list(out["env_reward"])))
        return out

    def recording_reward(completions, env_reward, **kwargs):
        seen.append(list(env_reward))
        return list(env_reward)

    trainer = GRPOTrainer(model=model, reward_funcs=[recording_reward],
                          args=grpo_config(tmp_path, per_device_train_batch_size=8, num_generations=4),
                          train_dataset=episode_dataset(env_id, range(10_000, 10_032)), processing_class=tokenizer,
                          rollout_func=recording_rollout)
    trainer.train()

    assert trainer.state.global_step == 2 and len(seen) == len(produced) == 2
    for (trajectories, rewards), rewards_seen, log in zip(produced, seen, trainer.state.log_history, strict=False):
        assert rewards_seen == rewards == [t.episode_reward for t in trajectories]
        for trajectory in trajectories:
            assert_native(trajectory)
        assert log["reward"] == pytest.approx(sum(rewards) / len(rewards), abs=1e-6)
    assert any(len(set(r)) > 1 for r in seen), "no reward variance: GRPO had nothing to learn from"
    trajectories = [t for ts, _ in produced for t in ts]
    rewards = torch.tensor([t.episode_reward for t in trajectories]).view(-1, 4)
    advantages = ((rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)).flatten()
    change = torch.tensor([episode_logprob(model, tokenizer, t) - episode_logprob(start, tokenizer, t)
                           for t in trajectories])
    assert float((advantages * change).sum()) > 0, "the update did not favour the better episodes"


@pytest.mark.slow
def test_the_example_script_runs(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "examples" / "trl_grpo_frozenlake.py"
    env = {**os.environ, "AGENTGYM_BENCH_HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(script), "--max-steps", "1", "--batch-size", "4", "--num-generations",
                          "2", "--output", str(tmp_path / "trained")], capture_output=True, text=True, timeout=600,
                         env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "step   1  reward" in out.stdout
    assert (tmp_path / "trained" / "config.json").exists()


# --- environment_factory: AgentToolEnv, with a tool-calling chat template on the local default model -------------

TOOL_ENV = "AgentFrozenLakeNoSlip-v0"
TOOL_KWARGS = {"prompt": "compact"}
NATIVE_TOOL_KWARGS = {**TOOL_KWARGS, "action_format": "tool"}  # what AgentToolEnv plays

def oracle_tool_conversations(tokenizer, seeds) -> list[tuple[list[int], list[int]]]:
    """``(input_ids, assistant_mask)`` of oracle episodes written as tool calls, the native env answering."""
    import gymnasium as gym

    from agentgym_bench.agent.policies import agent_env
    from agentgym_bench.agent.tools import format_tool_reply

    env = gym.make(TOOL_ENV, **NATIVE_TOOL_KWARGS)
    rows = []
    for seed in seeds:
        observation, _ = env.reset(seed=seed)
        messages, done = [{"role": "user", "content": observation}], False
        while not done:
            agent = agent_env(env)
            # at most 2 actions a turn, so that episodes take several turns
            actions = agent.game.unwrapped.oracle_turn(agent.turns_left, agent.actions_left, 2)
            call = {"type": "function", "function": {"name": "take_actions", "arguments": {"actions": list(actions)}}}
            observation, _, terminated, truncated, _ = env.step(format_tool_reply(list(actions)))
            messages += [{"role": "assistant", "content": "", "tool_calls": [call]},
                         {"role": "tool", "name": "take_actions", "content": observation}]
            done = terminated or truncated
        messages.append({"role": "assistant", "content": ""})  # the episode is over: stop
        out = tokenizer.apply_chat_template(messages, tools=[AgentToolEnv().take_actions], return_dict=True,
                                            return_assistant_tokens_mask=True)
        rows.append((out["input_ids"], out["assistant_masks"]))
    return rows


def imitate(model, tokenizer, rows, *, epochs: int, batch_size: int = 16, lr: float = 2e-3) -> float:
    """Supervised fine-tuning on the assistant tokens of ``rows``; returns the last batch's loss."""
    from trainers.sft.warmstart import reply_loss

    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(rows), generator=generator).tolist()
        for i in range(0, len(order), batch_size):
            batch = [rows[j] for j in order[i:i + batch_size]]
            width = max(len(ids) for ids, _ in batch)
            padded = [(ids + [tokenizer.pad_token_id] * (width - len(ids)), [1] * len(ids) + [0] * (width - len(ids)),
                       mask + [0] * (width - len(ids))) for ids, mask in batch]
            loss = reply_loss(model, {name: torch.tensor([row[i] for row in padded])
                                      for i, name in enumerate(["input_ids", "attention_mask", "loss_mask"])})
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    return float(loss.detach())


def test_tool_env_plays_the_native_episode_in_tool_format():
    env = AgentToolEnv(TOOL_ENV, **TOOL_KWARGS)
    first = env.reset(seed=10_003, prompt=[{"role": "user", "content": ""}], env_id=TOOL_ENV)  # a whole dataset row
    answers = [env.take_actions(actions) for actions in (["Up", "Left"], ["Fly"], ["Down", "Right", "Right"])]
    expected = native_episode(TOOL_ENV, 10_003, env.replies, **NATIVE_TOOL_KWARGS)
    assert [first, *answers] == [step[0] for step in expected][:4]
    assert env.replies[0] == ('<think></think>\n<tool_call>\n{"name": "take_actions", "arguments": {"actions": '
                              '["Up", "Left"]}}\n</tool_call>')
    assert env.get_reward() == pytest.approx(sum(step[1] for step in expected[1:4]))
    assert env.infos[2]["format_valid"] is True and env.infos[2]["invalid_actions"] == ["Fly"]
    assert env.reset(seed=10_003) == first and env.replies == [] and env.get_reward() == 0.0
    assert env.take_actions(["Up", "Left"]) == answers[0]
    assert "take_actions" in AgentToolEnv(TOOL_ENV).reset(seed=10_003)  # the ragen prompt asks for the tool


def test_tool_env_refuses_what_is_not_a_training_episode():
    env = AgentToolEnv(TOOL_ENV)
    with pytest.raises(ValueError, match="reset"):
        env.take_actions(["Up"])
    with pytest.raises(ValueError, match="needs a seed"):
        env.reset()
    with pytest.raises(ValueError, match="held-out test seeds"):
        env.reset(seed=TEST_SEEDS.start)
    with pytest.raises(ValueError, match="unknown agent env id"):
        AgentToolEnv("AgentChess-v0")
    env.reset(seed=10_000)
    with pytest.raises(ValueError, match="list of action words"):
        env.take_actions("Up")
    while not env.done:
        env.take_actions(["Up"])
    with pytest.raises(ValueError, match="episode is over"):
        env.take_actions(["Up"])
    with pytest.raises(ValueError, match="action_format"):
        AgentToolEnv(TOOL_ENV, action_format="answer")
    dataset = environment_dataset(TOOL_ENV, [10_000, 10_001], instruction="play")
    assert dataset[1] == {"prompt": [{"role": "user", "content": "play"}], "env_id": TOOL_ENV, "seed": 10_001}
    with pytest.raises(ValueError, match="held-out test seeds"):
        environment_dataset(TOOL_ENV, [TEST_SEEDS.start])


class RecordingToolEnv(AgentToolEnv):
    """``AgentToolEnv`` that records each rollout as TRL scores it: ``(seed, replies, reward)``."""

    played: list[tuple[int, list[str], float]] = []

    def get_reward(self) -> float:
        RecordingToolEnv.played.append((self.seed, list(self.replies), super().get_reward()))
        return super().get_reward()


def train_with_tools(model, tokenizer, tmp_path, seeds) -> tuple[GRPOTrainer, list]:
    """2 GRPO steps of 2 groups x 4 rollouts through ``environment_factory``; the trainer and the rollouts played."""
    RecordingToolEnv.played = []
    trainer = GRPOTrainer(model=model, processing_class=tokenizer,
                          args=grpo_config(tmp_path, per_device_train_batch_size=8, num_generations=4,
                                           temperature=1.0),
                          train_dataset=environment_dataset(TOOL_ENV, seeds),
                          environment_factory=partial(RecordingToolEnv, TOOL_ENV, **TOOL_KWARGS))
    trainer.train()
    played = RecordingToolEnv.played
    assert trainer.state.global_step == 2 and len(played) == 16
    for step, log in enumerate(trainer.state.log_history[:2]):
        rewards = [r for _, _, r in played[8 * step:8 * step + 8]]
        assert log["reward"] == pytest.approx(sum(rewards) / 8, abs=1e-6)  # TRL's reward is get_reward's
        starts = [s for s, _, _ in played[8 * step:8 * step + 8]]
        assert starts[:4] == [starts[0]] * 4 and starts[4:] == [starts[4]] * 4  # 2 groups, each from one start
        assert set(starts) <= set(seeds)
    for seed, replies, reward in played:  # every rollout is the native episode of its seed and replies
        expected = native_episode(TOOL_ENV, seed, replies, **NATIVE_TOOL_KWARGS)
        assert reward == pytest.approx(sum(step[1] for step in expected[1:]))
    return trainer, played


def test_environment_factory_runs_grpo_steps(model_dir, tmp_path):
    """TRL builds the envs, resets each to its row's seed and scores it with ``get_reward`` (an untrained model
    seldom writes a well-formed call, so this checks the plumbing; the slow test below checks the tool calls)."""
    torch.set_num_threads(1)
    model, tokenizer = tool_calling(*load_model(model_dir))
    trainer, _ = train_with_tools(model, tokenizer, tmp_path, range(20_000, 20_016))
    assert all(isinstance(env, RecordingToolEnv) for env in trainer.environments)


@pytest.mark.slow
def test_environment_factory_trains_with_grpo_on_tool_calls(model_dir, tmp_path):
    """A short imitation of oracle tool calls (minutes of CPU), then 2 real GRPO steps in which TRL
    generates, calls ``take_actions`` several times an episode and scores with ``get_reward``; rewards vary within
    groups and the update moves the model."""
    torch.set_num_threads(1)
    model, tokenizer = tool_calling(*load_model(model_dir))
    imitate(model, tokenizer, oracle_tool_conversations(tokenizer, range(10_000, 10_250)), epochs=8)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    trainer, played = train_with_tools(model, tokenizer, tmp_path, near_seeds(range(20_000, 20_600), 32))
    print("rollouts (seed, calls, reward):", [(s, len(r), w) for s, r, w in played])

    logs = trainer.state.log_history[:2]
    assert sum(log["tools/call_frequency"] for log in logs) > 0, "the model never called the tool"
    assert max(len(replies) for _, replies, _ in played) >= 2, "no episode of several tool calls"
    assert any(log["reward_std"] > 0 for log in logs), "no reward variance: GRPO had nothing to learn from"
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert changed, "GRPO steps left every parameter unchanged"


def near_seeds(seeds, n: int) -> list[int]:
    """``n`` of ``seeds`` whose goal is one move from the start and two moves, alternating (a short imitation wins
    some, not all; a won two-move start takes two tool calls, where a one-move start ends at its first)."""
    import gymnasium as gym

    from agentgym_bench.agent.policies import agent_env

    env = gym.make(TOOL_ENV, **TOOL_KWARGS)
    agent, by_moves = agent_env(env), {1: [], 2: []}
    for seed in seeds:
        env.reset(seed=seed)
        moves = len(agent.game.unwrapped.oracle_turn(agent.turns_left, agent.actions_left, 10))
        if moves in by_moves:
            by_moves[moves].append(seed)
    assert min(map(len, by_moves.values())) >= n // 2
    return [seed for pair in zip(by_moves[1][:n // 2], by_moves[2][:n // 2], strict=True) for seed in pair]
