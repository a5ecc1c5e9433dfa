"""Asynchronous rollouts (``async_rollout.max_staleness``, trainers/async_rollout.py): 0 is the synchronous loop, the
bound holds under a slow learner, the decoupled PPO weights, and resume after a kill (learner or worker)."""

import math
import time
from pathlib import Path

import pytest
import torch

from tests.killing import kill_once_written
from tests.trainers.conftest import tiny_config_dict
from trainers.async_rollout import RolloutWorker, over_bound
from trainers.config import ConfigError, config_from_dict
from trainers.losses import behaviour_weights, ppo_policy_loss
from trainers.metrics import read_metrics
from trainers.train import main

SMALL = {"max_steps": 4, "eval_steps": 4, "save_steps": 2, "num_threads": 1,
         "train_env_manager": {"num_env_groups": 2}, "rollout_batch_size": 8, "ppo_mini_batch_size": 4}


def strip_time(records):
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in records]


def test_max_staleness_0_is_the_synchronous_loop(tiny_model, tmp_path):
    overrides = {**SMALL, "max_steps": 2, "eval_steps": 2}
    main(config_from_dict(tiny_config_dict(tiny_model, tmp_path / "sync", "starpo_s", **overrides)))
    main(config_from_dict(tiny_config_dict(tiny_model, tmp_path / "zero", "starpo_s", **overrides,
                                           async_rollout={"max_staleness": 0})))
    sync, zero = read_metrics(tmp_path / "sync" / "metrics.jsonl"), read_metrics(tmp_path / "zero" / "metrics.jsonl")
    assert [r["step"] for r in zero] == [0, 1, 2]
    assert strip_time(zero) == strip_time(sync)
    assert not any(k.startswith("async/") for r in zero for k in r)
    assert not (tmp_path / "zero" / "async_policy").exists()  # no worker, no weight files


def _learner_waits_for_a_full_queue(monkeypatch):
    """A learner slower than any worker: before taking batch k it waits until the worker has made every batch the
    bound allows (k .. k + max_staleness, or up to max_steps), so each batch is as stale as the bound permits."""
    take = RolloutWorker.next_batch

    def slow(self, iteration):
        wanted = min(self.config.async_rollout.max_staleness + 1, self.config.max_steps - iteration + 1)
        deadline = time.time() + 300
        while self.queue.qsize() < wanted and self.process.is_alive() and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # a worker that broke the bound would have made one more batch by now
        return take(self, iteration)

    monkeypatch.setattr(RolloutWorker, "next_batch", slow)


@pytest.mark.parametrize(("preset", "staleness", "history"),
                         [("gigpo", 1, 0), ("starpo", 2, 0), ("starpo_s", 1, None)])
def test_a_slow_learner_never_trains_on_samples_older_than_the_bound(tiny_model, tmp_path, monkeypatch, preset,
                                                                    staleness, history):
    """Each algorithm (StarPO with its reward KL, StarPO-S's filter and critic on whole-episode rows, GiGPO's step
    groups) under a learner slower than the worker."""
    _learner_waits_for_a_full_queue(monkeypatch)
    window = {"history_length": history}
    config = config_from_dict(tiny_config_dict(tiny_model, tmp_path, preset, **{
        **SMALL, "train_env_manager": {**SMALL["train_env_manager"], **window}, "val_env_manager": window},
        async_rollout={"max_staleness": staleness}))
    records = main(config).records[1:]
    lags = [r["async/version_lag"] for r in records]
    # batch k is played by the newest weights once version k - 1 - S exists; the learner takes it at version k - 1
    assert lags == [min(k - 1, staleness) for k in range(1, 5)]
    assert [r["async/policy_version"] for r in records] == [max(0, k - 1 - staleness) for k in range(1, 5)]
    assert all(r["async/dropped_share"] == 0 for r in records)
    # batch 1 was played by the learner's own weights: behaviour = proximal policy
    assert records[0]["async/logprob_gap"] < 1e-4 and records[0]["async/is_weight_max"] == pytest.approx(1, abs=1e-4)
    assert any(r["async/logprob_gap"] > 1e-3 for r in records[1:])  # the stale batches really were off-policy
    for r in records:
        assert r["async/is_weight_p05"] <= r["async/is_weight_p50"] <= r["async/is_weight_p95"]
        assert r["async/is_weight_p95"] <= r["async/is_weight_max"]
        for key in ("loss/policy", "loss/grad_norm", "async/is_weight_mean", "async/behaviour_kl"):
            assert math.isfinite(r[key]), (key, r)
    assert (tmp_path / "checkpoint-4" / "actor").exists()


def test_over_bound():
    assert not over_bound(iteration=1, policy_version=0, max_staleness=0)
    assert not over_bound(iteration=4, policy_version=1, max_staleness=2)  # lag 2
    assert over_bound(iteration=4, policy_version=0, max_staleness=2)  # lag 3


def test_a_batch_over_the_bound_is_dropped_and_the_run_goes_on(tiny_model, tmp_path, monkeypatch):
    """The worker's rule makes it unreachable, so the learner's check is forced here: iteration 2's batch counts as
    over the bound; it is logged as dropped, nothing of it reaches the loss, and the run finishes."""
    import trainers.train

    monkeypatch.setattr(trainers.train, "over_bound", lambda iteration, version, staleness: iteration == 2)
    records = main(config_from_dict(tiny_config_dict(tiny_model, tmp_path, "starpo", **SMALL,
                                                     async_rollout={"max_staleness": 1}))).records[1:]
    assert [r["async/dropped_share"] for r in records] == [0, 1, 0, 0]
    assert "loss/policy" not in records[1] and all("loss/policy" in r for r in records if r["step"] != 2)
    assert (tmp_path / "checkpoint-4" / "trainer_state.pt").exists() and (tmp_path / "curves.png").exists()


def test_behaviour_weights_by_hand():
    prox = torch.log(torch.tensor([[0.5, 0.6, 0.9]]))
    behav = torch.log(torch.tensor([[0.25, 0.6, 0.1]]))
    weight, kept = behaviour_weights(prox, behav, cap=5.0)
    assert torch.allclose(weight, torch.tensor([[2.0, 1.0, 0.0]]))  # 0.9 / 0.1 = 9 > cap: weight 0
    assert kept.tolist() == [[True, True, False]]
    assert torch.allclose(behaviour_weights(prox, behav)[0], torch.tensor([[2.0, 1.0, 9.0]]))
    # on-policy (behaviour = proximal) the decoupled loss is PPO's
    logprob, advantages = torch.randn(2, 5), torch.randn(2, 5)
    old = logprob + 0.1 * torch.randn(2, 5)
    weight, _ = behaviour_weights(old, old.clone(), cap=5.0)
    assert torch.equal(weight * ppo_policy_loss(logprob, old, advantages).loss,
                       ppo_policy_loss(logprob, old, advantages).loss)


def test_async_options_the_worker_does_not_support_are_refused(tiny_model, tmp_path):
    on = {"max_staleness": 1}
    for overrides, match in [({"async_rollout": on, "use_sampler_logprobs": True}, "use_sampler_logprobs"),
                             ({"async_rollout": on, "top_p": 0.9}, "top_p"),
                             ({"async_rollout": {"max_staleness": -1}}, "must be an integer >= 0"),
                             ({"async_rollout": {**on, "behaviour_weight_cap": 0.5}}, "must be > 1")]:
        with pytest.raises(ConfigError, match=match):
            config_from_dict(tiny_config_dict(tiny_model, tmp_path, "starpo", **overrides))


def test_a_killed_rollout_worker_stops_the_run_which_resumes(tiny_model, tmp_path, monkeypatch):
    take = RolloutWorker.next_batch

    def kill_at_3(self, iteration):
        if iteration == 3:  # the worker dies; what it had queued is lost with it
            self.process.kill()
            self.process.join()
            self.queue = torch.multiprocessing.get_context("spawn").Queue()
        return take(self, iteration)

    data = tiny_config_dict(tiny_model, tmp_path, "starpo_s", **SMALL, async_rollout={"max_staleness": 1})
    with monkeypatch.context() as patch:
        patch.setattr(RolloutWorker, "next_batch", kill_at_3)
        with pytest.raises(RuntimeError, match="rollout worker exited.*resume_from_checkpoint=auto"):
            main(config_from_dict(data))
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [0, 1, 2]
    main(config_from_dict({**data, "resume_from_checkpoint": "auto"}))
    records = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4]
    assert records[3]["async/policy_version"] == 2 and records[3]["async/version_lag"] == 0  # a fresh worker at v2
    assert all(r["async/version_lag"] <= 1 for r in records[1:])


def test_a_learner_killed_with_sigkill_resumes_and_its_worker_exits(tiny_model, tmp_path):
    """The learner runs the command line in a fresh process and is killed once checkpoint-2 is written; its worker
    notices and exits; the resumed run finishes with every iteration's metrics once."""
    run = tmp_path / "run"
    config = config_from_dict(tiny_config_dict(tiny_model, run, "starpo_s", **SMALL,
                                               async_rollout={"max_staleness": 1}))
    config.save(tmp_path / "run.yaml")
    kill_once_written(["-m", "trainers.cli", str(tmp_path / "run.yaml")], run / "checkpoint-2" / "trainer_state.pt")
    assert not (run / "checkpoint-4").exists(), "the run finished before it could be killed"
    orphan = int((run / "async_policy" / "worker.pid").read_text())
    deadline = time.time() + 30  # the killed learner's worker polls for its parent and exits
    while _running(orphan) and time.time() < deadline:
        time.sleep(0.2)
    assert not _running(orphan)
    main(config_from_dict({**config.to_dict(), "resume_from_checkpoint": "auto"}))
    records = read_metrics(run / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4]
    assert all(r["async/version_lag"] <= 1 and r["async/dropped_share"] == 0 for r in records[1:])
    assert (run / "checkpoint-4" / "trainer_state.pt").exists()


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (an orphan's zombie stays until init reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_lora_runs_asynchronously_and_hands_over_merged_weights(tiny_model, tmp_path, monkeypatch):
    """With LoRA the learner publishes its actor's weights merged into the base (``PlainWeights``): files the worker
    loads strictly into the plain architecture it builds from the model folder, which then differ from the base."""
    pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    _learner_waits_for_a_full_queue(monkeypatch)
    records = main(config_from_dict(tiny_config_dict(
        tiny_model, tmp_path, "starpo", **SMALL, lora_target="all", lora_rank=4, learning_rate=1e-2,
        async_rollout={"max_staleness": 1}))).records[1:]
    assert [r["async/version_lag"] for r in records] == [0, 1, 1, 1]
    assert all(math.isfinite(r["loss/policy"]) for r in records)
    base = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).eval()
    handed = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).eval()
    handed.load_state_dict(torch.load(tmp_path / "async_policy" / "policy-4.pt", weights_only=True))  # strict
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        assert not torch.allclose(base(ids).logits, handed(ids).logits, atol=1e-4)
