"""Asynchronous rollouts (``async_rollout.max_staleness``, trainers/rl/async_rollout.py): 0 is the synchronous loop,
the bound holds under a slow learner, the decoupled PPO weights and loss on a really stale batch, and resume after a
kill (learner or worker, the worker at any moment, mid-write included)."""

import copy
import itertools
import math
import multiprocessing
import os
import pickle
import signal
import threading
import time
from pathlib import Path

import pytest
import torch

from tests.killing import kill_once_written
from tests.trainers import async_writer
from tests.trainers.conftest import tiny_config_dict
from trainers.algos.losses import behaviour_weights, ppo_policy_loss
from trainers.rl.async_rollout import BatchFiles, RolloutWorker, RolloutWorkerExited, over_bound
from trainers.rl.config import ConfigError, config_from_dict
from trainers.rl.train import main
from trainers.runtime.distributed import Dist
from trainers.runtime.metrics import read_metrics

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
        while len(self.batches.ready()) < wanted and self.process.is_alive() and time.time() < deadline:
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
    import trainers.rl.train

    monkeypatch.setattr(trainers.rl.train, "over_bound", lambda iteration, version, staleness: iteration == 2)
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


def _logprobs(model: torch.nn.Module, samples, temperature: float) -> torch.Tensor:
    """(B, L-1) log-probs of each row's tokens 1..L-1 by their definition: a plain forward pass of ``model``, the
    softmax of the logits over the temperature at the position before each token."""
    logits = model(input_ids=samples.input_ids, attention_mask=samples.attention_mask).logits[:, :-1].float()
    return torch.log_softmax(logits / temperature, -1).gather(-1, samples.input_ids[:, 1:, None]).squeeze(-1)


def test_a_stale_batch_is_trained_with_the_decoupled_loss_of_the_definitions(tiny_model, tmp_path, monkeypatch):
    """Real staleness, as the worker makes it with ``max_staleness: 1``: batches 1 and 2 are both played by the
    starting weights v0; the learner updates on batch 1 (-> v1), then on batch 2 (-> v2), the loop's own
    ``train_step``. On batch 2 the behaviour log-probs must be v0's and the proximal (old) ones v1's, recomputed here
    with copies of those models, so the weights w = pi_v1 / pi_v0 differ from 1, and the update's policy loss (at v1:
    ratio 1) is the mean of -w A. Then one more pass over batch 2 at v2 (a later mini-batch's situation: ratio
    r = pi_v2 / pi_v1 != 1, some tokens clipped, some weights over the cap) must give AReaL's objective
    w * max(-r A, -clip(r) A), computed here by hand, in value and in gradient. Wiring the correction to another
    pair of log-probs fails one of these."""
    import dataclasses

    import trainers.rl.train
    from trainers.rl.ppo import _denominator, _Mean, micro_batch_loss
    from trainers.rl.rollouts import play
    from trainers.rl.train import start_run, train_step

    config = config_from_dict(tiny_config_dict(
        tiny_model, tmp_path, "starpo", rollout_batch_size=8, ppo_mini_batch_size=8, micro_batch_size=4,
        entropy_loss_coef=0.0, learning_rate=1e-2, train_env_manager={"num_env_groups": 2, "history_length": None},
        async_rollout={"max_staleness": 1}))
    assert config.loss_agg_mode == "token-mean" and not config.dual_clip_loss and not config.use_kl_loss
    cpu = Dist(0, 1, torch.device("cpu"))
    run = start_run(config, cpu, time.perf_counter())
    try:
        actor = run.models.actor_module
        v0 = copy.deepcopy(actor)
        with torch.no_grad(), run.sampler.generation_context():  # as the worker plays
            batches = [play(run.train_groups, run.sampler.train, None, cpu) for _ in range(2)]
        first = train_step(config, run.models, run.optimizers, batches[0], cpu, run.rng)
        v1 = copy.deepcopy(actor)
        seen, update = [], trainers.rl.train.ppo_update

        def keep_batch(*args, **kwargs):  # the real update; the test keeps the batch it was given
            seen.append(args[3])
            return update(*args, **kwargs)

        monkeypatch.setattr(trainers.rl.train, "ppo_update", keep_batch)
        record = train_step(config, run.models, run.optimizers, batches[1], cpu, run.rng)
    finally:
        run.train_groups.close()
        run.val_groups.close()
    assert first["async/is_weight_max"] == pytest.approx(1, abs=1e-4)  # batch 1: behaviour = proximal = v0
    batch = seen[0]
    mask, advantages, temperature = batch.mask, batch.advantages, config.temperature
    with torch.no_grad():
        behav, prox = _logprobs(v0, batch.samples, temperature), _logprobs(v1, batch.samples, temperature)
    torch.testing.assert_close(batch.behav_logprob[mask], behav[mask], atol=1e-4, rtol=0)
    torch.testing.assert_close(batch.old_logprob[mask], prox[mask], atol=1e-4, rtol=0)
    weight = torch.exp(prox - behav)
    assert (weight[mask] - 1).abs().max() > 0.05  # really off-policy
    assert record["async/is_weight_mean"] == pytest.approx(float(weight[mask].mean()), rel=1e-4)
    assert record["async/is_weight_max"] == pytest.approx(float(weight[mask].max()), rel=1e-4)
    assert (advantages[mask] != 0).any()
    cap = config.async_rollout.behaviour_weight_cap
    kept = torch.where(weight <= cap, weight, 0.0)
    assert record["loss/policy"] == pytest.approx(float((-kept * advantages)[mask].mean()), rel=1e-4, abs=1e-6)

    # one more pass at v2, with a cap that some weights exceed
    above = weight[mask][weight[mask] > 1]
    assert len(above) >= 2
    cap = float(above.quantile(0.5))  # above 1 (AReaL's caps are), and some weights exceed it
    config = dataclasses.replace(config, async_rollout=dataclasses.replace(config.async_rollout,
                                                                           behaviour_weight_cap=cap))
    v2 = copy.deepcopy(actor)
    stats = _Mean()
    micro_batch_loss(config, run.models, batch, torch.arange(len(batch)), _denominator(config, mask), cpu, stats,
                     update_actor=True, sync=True)
    ratio = torch.exp(_logprobs(v2, batch.samples, temperature) - prox)
    unclipped, clipped = -advantages * ratio, -advantages * ratio.clamp(1 - config.pg_clip, 1 + config.pg_clip)
    kept = torch.where(weight <= cap, weight, 0.0)
    loss = kept * torch.maximum(unclipped, clipped)
    assert not config.use_pg_clip_range and (clipped > unclipped)[mask].any() and (ratio[mask] != 1).all()
    assert (kept[mask] == 0).any() and (kept[mask] != 1).any() and (kept[mask] > 0).any()
    assert stats.result(cpu)["loss/policy"] == pytest.approx(float(loss[mask].mean().detach()), rel=1e-4, abs=1e-6)
    (loss[mask].sum() / mask.sum()).backward()
    for (name, got), expected in zip(actor.named_parameters(), v2.parameters(), strict=True):
        torch.testing.assert_close(got.grad, expected.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_async_options_the_worker_does_not_support_are_refused(tiny_model, tmp_path):
    on = {"max_staleness": 1}
    for overrides, match in [({"async_rollout": on, "use_sampler_logprobs": True}, "use_sampler_logprobs"),
                             ({"async_rollout": on, "top_p": 0.9}, "top_p"),
                             ({"async_rollout": {"max_staleness": -1}}, "must be an integer >= 0"),
                             ({"async_rollout": {**on, "behaviour_weight_cap": 0.5}}, "must be > 1")]:
        with pytest.raises(ConfigError, match=match):
            config_from_dict(tiny_config_dict(tiny_model, tmp_path, "starpo", **overrides))


def test_a_killed_rollout_worker_stops_the_run_which_resumes(tiny_model, tmp_path, monkeypatch):
    """The worker is killed from outside (SIGKILL) once it has handed over batch 2 and waits for version 1 to start
    batch 3: the learner trains on batch 2, then stops with the one-line error, and the run resumes."""
    publish = RolloutWorker.publish

    def kill_before_v1(self, state_dict, version):
        if version == 1:
            deadline = time.time() + 120
            while not self.batches.path(2).exists() and time.time() < deadline:
                time.sleep(0.02)
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.join()
        publish(self, state_dict, version)

    data = tiny_config_dict(tiny_model, tmp_path, "starpo_s", **SMALL, async_rollout={"max_staleness": 1})
    with monkeypatch.context() as patch:
        patch.setattr(RolloutWorker, "publish", kill_before_v1)
        with pytest.raises(RolloutWorkerExited, match=r"rollout worker exited \(code -9\) before batch 3.*"
                                                      "resume_from_checkpoint=auto"):
            main(config_from_dict(data))
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [0, 1, 2]
    assert not list((tmp_path / "async_policy").glob("*batch-*"))  # closing cleared the batch files
    main(config_from_dict({**data, "resume_from_checkpoint": "auto"}))
    records = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4]
    assert records[3]["async/policy_version"] == 2 and records[3]["async/version_lag"] == 0  # a fresh worker at v2
    assert all(r["async/version_lag"] <= 1 for r in records[1:])


def _learner(batches: BatchFiles, process, taken: list[int], outcome: list[BaseException]) -> None:
    """The learner's side: take batches 1, 2, ... until it raises; each must be whole."""
    try:
        for k in itertools.count(1):
            batch = batches.take(k, process)
            assert async_writer.whole(batch, k), f"batch {k} is not the batch written"
            taken.append(k)
    except BaseException as error:  # noqa: BLE001 - handed to the test thread
        outcome.append(error)


def _half_written(folder: Path) -> list[int]:
    sizes = []
    for tmp in folder.glob(".batch-*.tmp"):
        try:
            sizes.append(tmp.stat().st_size)
        except FileNotFoundError:  # renamed meanwhile
            pass
    return sizes


def _kill_once(folder: Path, writer, written: int | None, delay: float) -> tuple[int | None, list[int], list]:
    """Start the stand-in worker and a learner thread on ``folder``; SIGKILL the worker once a temporary batch file
    holds ``written`` bytes or more, or else ``delay`` seconds after its first batch is written; wait at most 10 s for
    the learner. Returns the size of the temporary file the kill left (``None``: it fell between two writes), the
    batches taken and what the learner raised."""
    writer.start()
    taken, outcome = [], []
    learner = threading.Thread(target=_learner, args=(BatchFiles(folder), writer, taken, outcome), daemon=True)
    learner.start()
    deadline, since = time.time() + 120, None
    while time.time() < deadline:
        if written is not None and any(size >= written for size in _half_written(folder)):
            break
        if written is None and since is None and (taken or (folder / "batch-1.pkl").exists()):
            since = time.time()
        if since is not None and time.time() >= since + delay:
            break
    os.kill(writer.pid, signal.SIGKILL)
    killed = time.time()
    left = _half_written(folder)
    learner.join(timeout=10)
    assert not learner.is_alive(), "the learner still waits 10 s after the worker died"
    assert time.time() - killed < 5, "the learner took over 5 s to notice the worker died"
    return (left[0] if left else None), taken, outcome


def test_a_worker_killed_at_any_moment_of_a_write_stops_the_learner_within_seconds(tmp_path):
    """SIGKILL from outside while the worker writes batches of about 5 MB (far more than a pipe buffer): at points
    inside a write (as it begins, past the first 64 KiB, half of the batch written) and at arbitrary moments while it
    writes batch after batch. Each time the learner, waiting for a batch, raises the one-line error within seconds:
    never a hang, never a half batch. (With the batches in a ``multiprocessing.Queue`` a kill mid-write left half a
    message in the pipe and the learner blocked in its read for good.)"""
    full = len(pickle.dumps(async_writer.big_batch(1), protocol=pickle.HIGHEST_PROTOCOL))
    context = multiprocessing.get_context("forkserver")  # each stand-in forks from a server that imported it once
    context.set_forkserver_preload(["tests.trainers.async_writer"])
    runs = 0
    for written, delay in [(1, 0.0), (64 * 1024 + 1, 0.0), (full // 2, 0.0), (None, 0.35), (None, 0.8)]:
        for _attempt in range(3):  # a kill meant to land inside a write may come after it ended: kill another
            runs += 1
            folder = tmp_path / str(runs)
            folder.mkdir()
            writer = context.Process(target=async_writer.write_batches, args=(str(folder),), daemon=True)
            left, taken, outcome = _kill_once(folder, writer, written, delay)
            assert len(outcome) == 1 and isinstance(outcome[0], RolloutWorkerExited), outcome
            message = str(outcome[0])
            assert message.startswith(f"the rollout worker exited (code -9) before batch {len(taken) + 1};")
            assert "resume_from_checkpoint=auto" in message and "\n" not in message
            assert taken == list(range(1, len(taken) + 1))  # whole batches (the learner checked each), in order
            BatchFiles(folder).clear()
            assert not [p for p in folder.iterdir() if "batch" in p.name]
            if written is None or left is not None:
                break
        if written is not None:
            assert left is not None and written <= left < full, (left, full)  # killed mid-write


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
