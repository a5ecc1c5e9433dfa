"""Smoke runs of the loop on a tiny model of the default architecture, resume after SIGKILL, and the row builders."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from transformers import AutoModelForCausalLM, AutoTokenizer

from agentgym_bench.benchmark.provenance import training_record
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.hf import HFPolicy
from agentgym_bench.rollout.scripted import NoisyOraclePolicy
from tests.killing import kill_once_written
from tests.trainers.conftest import TINY_ENV_KWARGS, tiny_config_dict
from trainers.rl.config import ConfigError, config_from_dict
from trainers.rl.samples import adjust_batch, step_samples, success_rewards, trajectory_samples
from trainers.rl.train import main
from trainers.runtime.metrics import read_metrics, success_gain

FINITE_KEYS = ["loss/policy", "loss/entropy", "loss/grad_norm", "loss/approx_kl", "loss/clipfrac"]


def weights(path: Path) -> dict[str, torch.Tensor]:
    return AutoModelForCausalLM.from_pretrained(path).state_dict()


@pytest.mark.parametrize("preset", ["starpo", "starpo_s", "gigpo"])
def test_each_algorithm_changes_the_parameters_and_keeps_losses_finite(tiny_model, tmp_path, preset):
    result = main(config_from_dict(tiny_config_dict(tiny_model, tmp_path, preset)))
    records = result.records
    assert [r["step"] for r in records] == [0, 1, 2, 3]
    assert all("val/success" in r for r in (records[0], records[2], records[3]))
    for record in records[1:]:
        keys = FINITE_KEYS + (["critic/value_loss", "critic/grad_norm"] if preset == "starpo_s" else [])
        keys += ["loss/kl"] if preset != "starpo_s" else []
        for key in keys:
            assert math.isfinite(record[key]), (key, record)
        assert record["rollout/logprob_diff"] < 1e-4  # the rows hold exactly what the model read and sampled
    assert any(r["reward/advantage_abs"] > 0 for r in records[1:])  # episode scores varied: a real update
    if preset == "starpo_s":
        assert all(r["rollout/groups_kept"] == 2 for r in records[1:])  # half of the 4 groups
        assert all(r["reward/in_group_std_kept"] >= r["reward/in_group_std"] for r in records[1:])
    before, after = weights(tiny_model), weights(tmp_path / "checkpoint-3" / "actor")
    assert max(float((after[k] - before[k]).abs().max()) for k in before) > 1e-4
    assert (tmp_path / "checkpoint-3" / "critic").exists() == (preset == "starpo_s")
    assert not (tmp_path / "checkpoint-2").exists() or (tmp_path / "checkpoint-2" / "trainer_state.pt").exists()
    AutoTokenizer.from_pretrained(tmp_path / "checkpoint-3" / "actor")
    assert read_metrics(tmp_path / "metrics.jsonl") == [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in records]
    assert (tmp_path / "curves.png").stat().st_size > 10_000
    assert (tmp_path / "summary.json").exists()
    trainer, compute = training_record(tmp_path)  # what `agentgym-bench eval --trained-by` records of this run
    assert trainer["algorithm"] == preset and compute["steps"] == 3
    assert compute["processes"] == 1 and compute["device"] == "cpu"  # what it trained on, from summary.json
    assert trainer["curves"]["val/success"] == [[r["step"], r["val/success"]] for r in records if "val/success" in r]
    assert [step for step, _ in trainer["curves"]["reward/success"]] == [1, 2, 3]


def test_a_frozen_run_plays_the_start_model_on_the_runs_own_rooms(tiny_model, tmp_path):
    """``learning_rate: 0`` (the control the training curves are read against): the weights stay the start's bit for
    bit, and every iteration plays what a training run of the same seed plays before its policy moves (the same
    rooms, the same sampling streams), so its first iteration is that run's first iteration."""
    frozen = main(config_from_dict(tiny_config_dict(tiny_model, tmp_path / "frozen", "gigpo", learning_rate=0)))
    trained = main(config_from_dict(tiny_config_dict(tiny_model, tmp_path / "trained", "gigpo")))
    before, after = weights(tiny_model), weights(tmp_path / "frozen" / "checkpoint-3" / "actor")
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert max(float((weights(tmp_path / "trained" / "checkpoint-3" / "actor")[k] - before[k]).abs().max())
               for k in before) > 1e-4
    first = [{k: r[1][k] for k in ("reward/success", "reward/score", "rollout/response_length", "rollout/turns")}
             for r in (frozen.records, trained.records)]
    assert first[0] == first[1]
    assert all(r["loss/lr"] == 0 and "loss/policy" not in r for r in frozen.records[1:])  # no update was made
    with pytest.raises(ConfigError, match="learning_rate=-1e-05 must be >= 0"):
        config_from_dict(tiny_config_dict(tiny_model, tmp_path / "bad", "gigpo", learning_rate=-1e-5))


def test_a_run_resumed_for_more_iterations_follows_the_new_schedule_from_its_first_new_iteration(tiny_model,
                                                                                                    tmp_path):
    """Two cosine iterations, then resumed to four: iteration 3 trains at the four-iteration schedule's rate, not at
    the finished schedule's 0 that the optimiser's saved state holds."""
    from trainers.runtime.schedule import iteration_schedule

    config = config_from_dict(tiny_config_dict(tiny_model, tmp_path / "run", "starpo", max_steps=2, save_steps=1,
                                               lr_scheduler_type="cosine", warmup_steps=0))
    main(config)
    longer = config_from_dict({**config.to_dict(), "max_steps": 4, "resume_from_checkpoint": "auto"})
    result = main(longer)
    factor = iteration_schedule("cosine", 0, 4)
    rates = {r["step"]: r["loss/lr"] for r in read_metrics(tmp_path / "run" / "metrics.jsonl") if "loss/lr" in r}
    assert rates[2] == pytest.approx(config.learning_rate * iteration_schedule("cosine", 0, 2)(1))
    assert rates[3] == pytest.approx(config.learning_rate * factor(2)) and rates[3] > 0
    assert rates[4] == pytest.approx(config.learning_rate * factor(3))
    assert result.records[-1]["step"] == 4


def test_whole_episode_rows_with_the_full_conversation(tiny_model, tmp_path):
    overrides = {"train_env_manager": {"history_length": None}, "val_env_manager": {"history_length": None},
                 "max_steps": 2, "ppo_mini_batch_size": 4}
    result = main(config_from_dict(tiny_config_dict(tiny_model, tmp_path, "starpo_s", **overrides)))
    assert result.records[-1]["rollout/samples"] == 8  # 2 groups kept x 4 episodes, one row each
    assert math.isfinite(result.records[-1]["critic/value_loss"])


def strip_time(records):
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in records]


def test_a_run_killed_with_sigkill_resumes_to_the_same_metrics(tiny_model, tmp_path, capsys):
    """The killed run goes through the command line in a fresh process, as a user's would; the resumed and the
    uninterrupted runs call ``main`` here (one torch thread everywhere)."""
    overrides = {"max_steps": 6, "save_steps": 2, "eval_steps": 3, "save_total_limit": 1,
                 "train_env_manager": {"num_env_groups": 2}, "rollout_batch_size": 8, "ppo_mini_batch_size": 4}
    killed, straight = tmp_path / "killed", tmp_path / "straight"
    config = config_from_dict(tiny_config_dict(tiny_model, killed, "starpo_s", **overrides))
    config.save(tmp_path / "run.yaml")
    kill_once_written(["-m", "trainers.cli", str(tmp_path / "run.yaml")], killed / "checkpoint-2" / "trainer_state.pt")
    assert not (killed / "checkpoint-6").exists(), "the run finished before it could be killed"
    main(config_from_dict({**config.to_dict(), "resume_from_checkpoint": "auto"}))
    main(config_from_dict({**config.to_dict(), "output_dir": str(straight)}))
    resumed, uninterrupted = read_metrics(killed / "metrics.jsonl"), read_metrics(straight / "metrics.jsonl")
    assert [r["step"] for r in resumed] == list(range(7))
    for a, b in zip(strip_time(resumed), strip_time(uninterrupted), strict=True):
        assert a == b, {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
    a, b = weights(killed / "checkpoint-6" / "actor"), weights(straight / "checkpoint-6" / "actor")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [p.name for p in killed.iterdir() if p.name.startswith("checkpoint")] == ["checkpoint-6"]
    # the resumed run kept the first evaluation (from the checkpoint), so it reports the same before/after gain
    summary = lambda run: json.loads((run / "summary.json").read_text())  # noqa: E731
    assert summary(killed)["val"] == summary(straight)["val"] and summary(killed)["val"]["n_before"] == 8
    episodes = summary(killed)["val_episodes"]  # per episode, so two runs can be paired
    assert episodes == summary(straight)["val_episodes"] and len(episodes["before"]) == len(episodes["after"]) == 8
    assert success_gain(episodes["before"], episodes["after"]) == summary(killed)["val"]
    # killed after its last checkpoint, before summary.json: the resumed run writes it from the checkpoint's record
    written = (killed / "summary.json").read_text()
    (killed / "summary.json").unlink()
    main(config_from_dict({**config.to_dict(), "resume_from_checkpoint": "auto"}))
    assert summary(killed)["val_episodes"] == json.loads(written)["val_episodes"]
    # a fresh start into the finished run's folder would overwrite it: refused, naming the way to continue
    with pytest.raises(ConfigError, match=r"already holds a run \(latest: checkpoint-6\).*resume_from_checkpoint="):
        main(config)
    assert summary(killed)["val"] == summary(straight)["val"]
    # the same command once more: nothing to train, and the command says so with what the run recorded
    from agentgym_bench.cli import main as cli_main

    assert cli_main(["train", str(tmp_path / "run.yaml"), "resume_from_checkpoint=auto", "progress=false"]) == 0
    out = capsys.readouterr().out
    assert "nothing to train: the run had already trained 6 iterations (max_steps=6)" in out
    assert f"validation success {summary(killed)['val']['before']:.3f} -> " in out
    # resumed with settings that train otherwise: refused before anything is loaded, the run's record unchanged
    record = (killed / "config.yaml").read_text()
    changed = {**config.to_dict(), "resume_from_checkpoint": "auto", "learning_rate": 5e-4,
               "train_env_manager": {**config.to_dict()["train_env_manager"], "tags": ["AgentBandit-v0"]}}
    refusal = (r"train_env_manager\.tags \['AgentFrozenLake-v0'\] -> \['AgentBandit-v0'\]; "
               r"learning_rate 0\.001 -> 0\.0005\..*pretrain=")
    with pytest.raises(ConfigError, match=refusal):
        main(config_from_dict(changed))
    assert (killed / "config.yaml").read_text() == record


# ------------------------------------------------------------------------------------------------ rows


@pytest.fixture(scope="module")
def episodes(tiny_model):
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    groups = EnvGroups(["AgentFrozenLake-v0"], [3], 2, env_kwargs=TINY_ENV_KWARGS, seed=10_000)
    policy = HFPolicy(model, tokenizer, max_new_tokens=8, seed=0)
    return groups.rollout(policy), groups.rollout(policy, history=0), tokenizer


def test_trajectory_rows_hold_every_reply(episodes):
    full, _, tokenizer = episodes
    samples = trajectory_samples(full, tokenizer)
    assert len(samples) == 6
    assert samples.loss_mask.sum(1).tolist() == [sum(len(u.token_ids) for u in t.turns) for t in full]
    assert samples.group_ids.tolist() == [0, 0, 1, 1, 2, 2]
    assert samples.scores.tolist() == pytest.approx([t.episode_reward for t in full])
    assert samples.token_rewards.sum(1).tolist() == pytest.approx([t.episode_reward for t in full])


def test_step_rows_hold_one_reply_each(episodes):
    _, windowed, tokenizer = episodes
    samples = step_samples(windowed, tokenizer)
    turns = [(e, k, u) for e, t in enumerate(windowed) for k, u in enumerate(t.turns)]
    assert len(samples) == len(turns)
    assert samples.loss_mask.sum(1).tolist() == [len(u.token_ids) for _, _, u in turns]
    assert samples.episode_ids.tolist() == [e for e, _, _ in turns]
    assert samples.step_index.tolist() == [k for _, k, _ in turns]
    assert samples.step_rewards.tolist() == pytest.approx([u.reward for _, _, u in turns])
    keys = [u.state_key for _, _, u in turns]
    same = samples.state_ids[:, None] == samples.state_ids[None, :]
    assert same.tolist() == [[a == b for b in keys] for a in keys]
    picked = samples.select(torch.tensor([2, 0, 0]))
    assert picked.episode_ids.tolist() == [samples.episode_ids[2], samples.episode_ids[0], samples.episode_ids[0]]


def test_success_rewards_keep_success_and_format_penalties_only(episodes):
    full, _, tokenizer = episodes
    sokoban = EnvGroups(["AgentSokoban-v0"], [2], 2, seed=10_000).rollout(NoisyOraclePolicy(0.5, seed=1))
    for trajectory in [*full, *sokoban]:
        rewritten = success_rewards(trajectory)
        penalties = sum(u.info["format_penalty"] for u in trajectory.turns)
        assert rewritten.episode_reward == pytest.approx(float(trajectory.success) + penalties)
        assert [u.reply for u in rewritten.turns] == [u.reply for u in trajectory.turns]
    assert any(t.success for t in sokoban) and any(u.info["format_penalty"] < 0 for t in full for u in t.turns)
    assert {t.episode_reward for t in sokoban} - {0.0, 1.0}  # the env's own rewards were shaped (step penalty)
    samples = trajectory_samples([success_rewards(t) for t in full], tokenizer)
    assert samples.token_rewards.sum(1).tolist() == pytest.approx(samples.scores.tolist())


@pytest.mark.parametrize(("n", "mode", "size", "added", "removed"), [
    (10, "copy", 12, 2, 0), (10, "delete", 8, 0, 2), (9, "auto", 8, 0, 1), (10, "auto", 12, 2, 0),
    (3, "delete", 4, 1, 0), (10, "random_sample", 4, 0, 6), (8, "copy", 8, 0, 0), (2, "copy", 4, 2, 0),
])
def test_adjust_batch(n, mode, size, added, removed):
    index, a, r = adjust_batch(n, 4, mode, np.random.default_rng(0))
    assert (len(index), a, r) == (size, added, removed)
    assert set(index.tolist()) <= set(range(n))
    if mode in ("copy", "auto") and added:
        assert set(range(n)) <= set(index.tolist())  # copying keeps every row


def test_config_file_round_trip_for_the_subprocess(tiny_model, tmp_path):
    config = config_from_dict(tiny_config_dict(tiny_model, tmp_path, "gigpo"))
    config.save(tmp_path / "c.yaml")
    assert yaml.safe_load((tmp_path / "c.yaml").read_text())["preset"] == "gigpo"


def test_sampled_logprobs_are_the_recomputed_ones(tiny_model, episodes):
    from trainers.rl.models import load_models
    from trainers.rl.ppo import score_samples
    from trainers.rl.train import sampler_logprob_batch
    from trainers.runtime.distributed import Dist

    _, windowed, tokenizer = episodes
    config = config_from_dict(tiny_config_dict(tiny_model, Path("unused"), "gigpo"))
    samples = step_samples(windowed, tokenizer)
    models = load_models(config, Dist(0, 1, torch.device("cpu")))
    recomputed = score_samples(config, models, samples, Dist(0, 1, torch.device("cpu")))["old_logprob"]
    sampled = sampler_logprob_batch(windowed, samples, step_rows=True)
    mask = samples.loss_mask[:, 1:]
    assert int(mask.sum()) > 20
    torch.testing.assert_close(sampled[mask], recomputed[mask], atol=1e-4, rtol=0)
    assert bool((sampled[~mask] == 0).all())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_vllm_generation_and_bf16_on_gpu(tiny_model, tmp_path):
    pytest.importorskip("vllm")
    overrides = {"device": "cuda", "dtype": "bfloat16", "generation_backend": "vllm", "max_steps": 2,
                 "vllm_gpu_memory_utilization": 0.3}
    result = main(config_from_dict(tiny_config_dict(tiny_model, tmp_path, "starpo_s", **overrides)))
    assert [r["step"] for r in result.records] == [0, 1, 2]
    assert all(math.isfinite(r["loss/policy"]) for r in result.records[1:])


def test_sequence_length_caps_every_row(tiny_model, tmp_path):
    """ROLL's ``sequence_length``: with room for one prompt and one reply only, every episode ends after its first
    turn (truncated), and the run trains on those rows."""
    import gymnasium as gym

    from agentgym_bench.rollout.tokens import encode, render

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    env = gym.make("AgentFrozenLake-v0", **TINY_ENV_KWARGS)
    lengths = []
    for seed in range(10_000, 10_016):
        obs, info = env.reset(seed=seed)
        messages = ([{"role": "system", "content": info["system_prompt"]}] if info.get("system_prompt") else [])
        lengths.append(len(encode(tokenizer, render(tokenizer, messages + [{"role": "user", "content": obs}]))))
    cap = max(lengths) + 8 + 2  # the first prompt and an 8-token reply fit; a second prompt cannot
    overrides = {"train_env_manager": {"history_length": None}, "val_env_manager": {"history_length": None},
                 "max_steps": 1, "ppo_mini_batch_size": 4, "rollout_filter_ratio": 1.0, "sequence_length": cap}
    record = main(config_from_dict(tiny_config_dict(tiny_model, tmp_path, "starpo", **overrides))).records[-1]
    assert record["rollout/turns"] == 1.0 and record["rollout/samples"] == 16
    assert math.isfinite(record["loss/policy"])


def test_progress_lines_count_the_iteration_they_report(tiny_model, tmp_path, monkeypatch):
    """A multi-agent walkthrough of 2026-12-02 read `train: 0/4 its ... train success 0.000` after iteration 1: the
    postfix was printed before the iteration was counted."""
    import io
    import re

    from agentgym_bench.progress import LineProgress
    from trainers.rl import train

    out = io.StringIO()
    monkeypatch.setattr(train, "progress_bar", lambda total, desc, unit, enabled, initial=0: LineProgress(
        total, desc, unit, 0.0, file=out, initial=initial))
    main(config_from_dict(tiny_config_dict(tiny_model, tmp_path, "starpo", progress=True)))
    lines = [line for line in out.getvalue().splitlines() if "train success" in line]
    assert [re.match(r"train: (\d)/3 its", line)[1] for line in lines] == ["1", "2", "3"], lines
    assert "validation success" in lines[1] and "validation success" not in lines[0]  # eval_steps=2


def test_a_device_or_backend_this_machine_lacks_is_one_line_before_anything_loads(tiny_model, tmp_path):
    """The GPU recipes name ``device: cuda`` and vLLM; on a CPU build without vLLM each is refused by name (they
    were tracebacks from deep in the model loading)."""
    import importlib.util

    from agentgym_bench.errors import UserError
    from trainers.rl.models import require_backend

    with pytest.raises(UserError, match="device 'gpu' is not a torch device: cpu, cuda or cuda:N"):
        main(config_from_dict(tiny_config_dict(tiny_model, tmp_path / "gpu", "starpo", device="gpu")))
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="this torch .*in a trainer's config, device=cpu"):
            main(config_from_dict(tiny_config_dict(tiny_model, tmp_path / "cuda", "starpo", device="cuda")))
    assert not (tmp_path / "gpu").exists() and not (tmp_path / "cuda").exists()
    with pytest.raises(ConfigError, match="generation_backend=vllm generates on a GPU"):
        config_from_dict(tiny_config_dict(tiny_model, tmp_path / "v", "starpo", device="cpu",
                                          generation_backend="vllm"))
    if importlib.util.find_spec("vllm") is None:
        vllm_on_cuda = config_from_dict(tiny_config_dict(tiny_model, tmp_path / "v", "starpo", device="cuda",
                                                         generation_backend="vllm"))
        with pytest.raises(ConfigError, match=r"vLLM is not installed.*or set generation_backend: hf"):
            require_backend(vllm_on_cuda, torch.device("cuda"))


def test_a_prompt_that_outgrows_the_model_names_the_trainer_s_own_fix(tiny_model, tmp_path):
    """The policy's advice (``overlong='empty'``) is no config key; the trainer's is ``sequence_length``."""
    positions = json.loads((tiny_model / "config.json").read_text())["n_positions"]
    config = config_from_dict(tiny_config_dict(tiny_model, tmp_path / "run", "starpo", max_new_tokens=positions - 4))
    with pytest.raises(ConfigError, match=rf"outgrows the model's {positions} positions: set sequence_length: "
                                          rf"{positions}"):
        main(config)


def test_a_run_folder_in_use_by_a_live_process_is_refused(tiny_model, tmp_path):
    """A requeued job while the old one still runs: the second took a checkpoint the first was pruning, and crashed
    in transformers' loading. The lock goes with its process, however that ends."""
    import os

    from trainers.runtime.checkpoint import hold

    config = config_from_dict(tiny_config_dict(tiny_model, tmp_path / "run", "starpo", max_steps=1))
    held = hold(tmp_path / "run")  # as a live training process holds it
    with pytest.raises(ConfigError, match=rf"in use by a training process \(pid {os.getpid()}\) still running"):
        main(config)
    held.close()
    assert main(config).records[-1]["step"] == 1


def test_fsdp2_in_a_plain_launch_says_it_trains_unsharded(tiny_model, tmp_path, capsys, monkeypatch):
    """``config.yaml`` records ``strategy: fsdp2`` either way; a one-process launch without torchrun shards nothing,
    and says so."""
    if torch.distributed.is_initialized():
        pytest.skip("a process group is open in this process: the run would join it")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    main(config_from_dict(tiny_config_dict(tiny_model, tmp_path / "run", "starpo", max_steps=1, strategy="fsdp2")))
    assert "strategy fsdp2 in a plain launch: one process, unsharded" in capsys.readouterr().err
