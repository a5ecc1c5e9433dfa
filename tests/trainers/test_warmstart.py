import json
import math

import pytest
import torch

from agentgym_bench import run_folder
from agentgym_bench.seeds import TRAIN_SEED_START
from tests.killing import kill_once_written
from tests.rollout.toy_game import TOY_ID, register
from trainers.cli import parse_demonstrators, parse_episodes
from trainers.sft.default_model import ModelSize, build_default_model
from trainers.sft.sft_config import SFTConfig
from trainers.sft.warmstart import (
    DEMONSTRATIONS,
    GROUP_BATCHES,
    collect_demonstrations,
    epoch_batches,
    format_report,
    warm_start,
)

register()  # the toy game (tests/rollout's conftest registers it there)
SMALL = ModelSize(n_layer=2, n_embd=32, n_head=2, n_positions=128)


def config(tmp_path, model, name, **kw):
    base = dict(model=str(model), output=str(tmp_path / name), envs=(TOY_ID,), episodes=300, epochs=4, lr=5e-3,
                batch_size=16, eval_episodes=60, max_new_tokens=12, seed=0)
    return SFTConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    return build_default_model(tmp_path_factory.mktemp("small") / "m", seed=0, size=SMALL)


def test_warm_start_is_reproducible_and_writes_a_loadable_model(tmp_path, small_model, capsys):
    from transformers import AutoModelForCausalLM

    state = torch.random.get_rng_state()
    a = warm_start(config(tmp_path, small_model, "a"))
    b = warm_start(config(tmp_path, small_model, "b"))
    assert torch.equal(torch.random.get_rng_state(), state)
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
    assert a["evaluation"] == b["evaluation"]
    report = json.loads((tmp_path / "a" / "warmstart.json").read_text())
    assert report["rollout"] == {"prompt": "compact", "history": 0, "max_new_tokens": 12, "temperature": 1.0}
    assert report["train"]["final_loss"] < report["train"]["first_loss"]
    row = report["evaluation"]["warm_start"][TOY_ID]
    assert row["episodes"] == 60 and row["ci_low"] <= row["success"] <= row["ci_high"]
    assert row["format_valid"] > 0.5  # it learned the reply format
    assert row["mean_return"] == pytest.approx(json.loads((tmp_path / "b" / "warmstart.json").read_text())[
        "evaluation"]["warm_start"][TOY_ID]["mean_return"])
    assert TOY_ID in format_report(report)
    AutoModelForCausalLM.from_pretrained(tmp_path / "a")
    # the run folder, now the model: its config and metrics stay, its checkpoints and rows are gone
    assert SFTConfig(**run_folder.read_config(tmp_path / "a")) == config(tmp_path, small_model, "a")
    metrics = (tmp_path / "a" / run_folder.METRICS).read_text()
    assert metrics == (tmp_path / "b" / run_folder.METRICS).read_text()
    records = [json.loads(line) for line in metrics.splitlines()]
    assert [r["step"] for r in records] == [*range(1, report["train"]["steps"] + 1), report["train"]["steps"]]
    assert records[0]["loss/sft"] == report["train"]["first_loss"] and records[-1]["val/success"] == row["success"]
    assert not run_folder.checkpoints(tmp_path / "a") and not (tmp_path / "a" / DEMONSTRATIONS).exists()
    assert not run_folder.is_run_folder(tmp_path / "a")  # a model folder now (hf:a loads it, not a checkpoint)
    # the same command again would train over the finished model: refused, naming the way (a later stage writes
    # over its start with model= that folder)
    from agentgym_bench.cli import main

    assert main(["warmstart", f"model={small_model}", f"output={tmp_path / 'a'}", "episodes=2"]) == 2
    assert "already holds a finished warm start" in capsys.readouterr().err
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


def test_a_llama_model_warm_starts_and_learns_the_format(tmp_path):
    llama = build_default_model(tmp_path / "llama", seed=0, size=ModelSize(
        n_layer=2, n_embd=32, n_head=2, n_positions=128, architecture="llama"))
    report = warm_start(config(tmp_path, llama, "w"))
    assert report["train"]["final_loss"] < report["train"]["first_loss"]
    assert report["evaluation"]["warm_start"][TOY_ID]["format_valid"] > 0.5


def test_a_warm_start_in_bfloat16_or_auto_computes_in_it_and_keeps_float32_weights(tmp_path, small_model):
    from safetensors.torch import load_file

    from trainers.runtime import compute_dtype

    short = dict(episodes=60, epochs=1, eval_episodes=10)
    plain = warm_start(config(tmp_path, small_model, "fp32", **short))
    bf16 = warm_start(config(tmp_path, small_model, "bf16", dtype="bfloat16", **short))
    assert plain["train"]["dtype"] == "float32" and bf16["train"]["dtype"] == "bfloat16"
    weights = load_file(tmp_path / "bf16" / "model.safetensors")
    assert {w.dtype for w in weights.values()} == {torch.float32}
    # autocast took effect: the same steps from the same start, other last bits (and nearly the same losses)
    other = load_file(tmp_path / "fp32" / "model.safetensors")
    assert any(not torch.equal(weights[name], other[name]) for name in weights)
    assert bf16["train"]["first_loss"] == pytest.approx(plain["train"]["first_loss"], rel=0.02)
    auto = warm_start(config(tmp_path, small_model, "auto", dtype="auto", **short))
    record = json.loads((tmp_path / "auto" / compute_dtype.FILE).read_text())
    assert auto["train"]["dtype"] == record["dtype"] and record["float32_s"] > 0
    twin = "bf16" if record["dtype"] == "bfloat16" else "fp32"  # the same model as the fixed dtype it chose
    weights = (tmp_path / "auto" / "model.safetensors").read_bytes()
    assert weights == (tmp_path / twin / "model.safetensors").read_bytes()


def test_the_report_shows_the_mean_return_of_a_graded_env_only():
    def row(success, mean_return):
        return {"success": success, "ci_low": 0.0, "ci_high": 1.0, "episodes": 10, "mean_return": mean_return,
                "format_valid": 1.0}

    kinds = ("random_one_action", "random", "warm_start", "oracle")
    report = {"evaluation": {k: {"AgentWebShop-v0": row(0.0, 0.25 * i), "AgentBandit-v0": row(0.5, 0.125)}
                             for i, k in enumerate(kinds)}}
    webshop, bandit = format_report(report).splitlines()[2:]
    assert webshop.startswith("| AgentWebShop-v0 | 0.000 [0.000, 1.000], return 0.000 |")
    assert "return 0.500" in webshop and webshop.endswith("return 0.750 |")
    assert "return" not in bandit


def test_epoch_batches_take_every_row_once_and_grouped_by_length_pad_less():
    rows = 5 * 16 * GROUP_BATCHES + 7
    lengths = torch.randint(10, 900, (rows,), generator=torch.Generator().manual_seed(1)).tolist()

    def padded(batches):  # tokens a step computes: its rows padded to its longest
        return sum(len(b) * max(lengths[i] for i in b) for b in batches)

    plain = epoch_batches(lengths, 16, torch.Generator().manual_seed(0), False)
    order = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(0)).tolist()
    assert plain == [order[i : i + 16] for i in range(0, len(order), 16)]  # the order warm starts always took
    grouped = epoch_batches(lengths, 16, torch.Generator().manual_seed(0), True)
    assert grouped == epoch_batches(lengths, 16, torch.Generator().manual_seed(0), True)
    assert len(grouped) == len(plain) == math.ceil(len(lengths) / 16)
    assert sorted(i for b in grouped for i in b) == list(range(len(lengths)))
    assert sorted(map(len, grouped)) == sorted(map(len, plain))
    assert padded(grouped) < 0.7 * padded(plain)
    longest = [max(lengths[i] for i in b) for b in grouped[:GROUP_BATCHES]]
    assert longest != sorted(longest, reverse=True)  # the batches are shuffled, not taken longest first


def test_a_warm_start_grouped_by_length_learns(tmp_path, small_model):
    report = warm_start(config(tmp_path, small_model, "g", group_by_length=True))
    assert report["config"]["group_by_length"] is True
    assert report["train"]["final_loss"] < report["train"]["first_loss"]
    assert report["evaluation"]["warm_start"][TOY_ID]["format_valid"] > 0.5


def test_demonstrations_use_training_seeds_and_epsilon(tmp_path, small_model):
    clean = collect_demonstrations(config(tmp_path, small_model, "x", epsilon=0.0, episodes=40))
    noisy = collect_demonstrations(config(tmp_path, small_model, "x", epsilon=1.0, episodes=40))
    assert len(clean) == 40 and min(t.seed for t in clean) == TRAIN_SEED_START
    assert all(t.turns[0].info["format_valid"] for t in clean + noisy)
    assert sum(t.success for t in clean) > sum(t.success for t in noisy)


def test_demonstrations_never_play_webshop_test_goals(tmp_path, small_model):
    webshop = SFTConfig(model=str(small_model), output=str(tmp_path / "w"), envs=("AgentWebShop-v0",),
                              episodes=2, env_kwargs={"split": "test"})
    with pytest.raises(ValueError, match="test goals are held out"):
        collect_demonstrations(webshop)


def test_episodes_per_env(tmp_path, small_model):
    episodes = {TOY_ID: 7, "AgentBandit-v0": 3}
    cfg = config(tmp_path, small_model, "x", envs=(TOY_ID, "AgentBandit-v0"), episodes=episodes)
    demos = collect_demonstrations(cfg)
    assert [t.env_id for t in demos] == [TOY_ID] * 7 + ["AgentBandit-v0"] * 3
    assert [t.seed for t in demos[7:]] == [TRAIN_SEED_START + k for k in range(3)]
    assert parse_episodes(["40"], [TOY_ID]) == 40
    assert parse_episodes([f"{TOY_ID}=5", "AgentBandit-v0=2"], [TOY_ID, "AgentBandit-v0"]) == {TOY_ID: 5,
                                                                                               "AgentBandit-v0": 2}


@pytest.mark.parametrize("values", [["x"], ["AgentBandit-v0=2"], [f"{TOY_ID}=1", f"{TOY_ID}=2"], [f"{TOY_ID}=a"]])
def test_bad_episodes_argument_is_a_user_error(values):
    from agentgym_bench.errors import UserError

    with pytest.raises(UserError, match="--episodes"):
        parse_episodes(values, [TOY_ID])


def test_demonstrators_argument():
    from agentgym_bench.errors import UserError

    envs = ["AgentWebShop-v0", TOY_ID]
    assert parse_demonstrators([], envs) == {}
    assert parse_demonstrators(["AgentWebShop-v0=first-hit"], envs) == {"AgentWebShop-v0": "first-hit"}
    for values in (["AgentWebShop-v0"], ["AgentWebShop-v0=best"], ["AgentBandit-v0=first-hit"],
                   ["AgentWebShop-v0=first-hit", "AgentWebShop-v0=oracle"]):
        with pytest.raises(UserError, match="--demonstrator"):
            parse_demonstrators(values, envs)
    with pytest.raises(ValueError, match="demonstrators="):
        SFTConfig(envs=(TOY_ID,), demonstrators={"AgentWebShop-v0": "first-hit"})


def test_seed_ranges_that_meet_the_held_out_test_seeds_or_each_other_are_refused():
    with pytest.raises(ValueError, match=r"demonstration seeds of AgentBandit-v0 10000\.\.1000000009 meet "
                                         r"agentgym-v1's retired test seeds 1000000000\.\.1000999999"):
        SFTConfig(envs=("AgentBandit-v0",), episodes=1_000_000_000 - TRAIN_SEED_START + 10)
    with pytest.raises(ValueError, match=r"validation seeds 0\.\.10004 meet the demonstration \(training\) seeds"):
        SFTConfig(envs=("AgentBandit-v0",), episodes=100, eval_episodes=TRAIN_SEED_START + 5)


@pytest.mark.parametrize("kwargs, match", [({"epsilon": 1.5}, "epsilon"), ({"episodes": 0}, "episodes"),
                                           ({"envs": ()}, "envs"), ({"episodes": {"AgentBandit-v0": 5}}, "episodes"),
                                           ({"envs": ("AgentBandit-v0",), "episodes": {"AgentBandit-v0": 0}},
                                            "episodes")])
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SFTConfig(**kwargs)


@pytest.mark.slow
def test_default_warm_start_is_between_random_and_oracle(tmp_path):
    """The real thing: the default model and the default warm start (199,000 demonstration episodes of Sokoban 6x6,
    FrozenLake slippery and not, and Bandit, in this one process: about 50 minutes on one core; with the other slow
    test of this file, 56 minutes on 2026-12-01, passed).

    Above the one-action random policy everywhere by its 95% interval; above the 1..k-action one except on slippery
    FrozenLake (random multi-action walks reach 0.22, and the warm start's interval overlaps theirs); below the
    oracle on the grid envs (Bandit's imitation reaches 0.99, the oracle 1.00).
    """
    model = build_default_model(tmp_path / "default", seed=0)
    report = warm_start(SFTConfig(model=str(model), output=str(tmp_path / "warm")))
    evaluation = report["evaluation"]
    assert set(evaluation["oracle"]) == {"AgentSokoban-v0", "AgentFrozenLake-v0", "AgentFrozenLakeNoSlip-v0",
                                         "AgentBandit-v0"}
    for env_id in evaluation["oracle"]:
        warm, oracle = evaluation["warm_start"][env_id], evaluation["oracle"][env_id]
        assert warm["ci_low"] > evaluation["random_one_action"][env_id]["ci_high"], env_id
        if env_id != "AgentFrozenLake-v0":
            assert warm["ci_low"] > evaluation["random"][env_id]["ci_high"], env_id
        if env_id != "AgentBandit-v0":
            assert warm["ci_high"] < oracle["ci_low"], env_id


def test_a_warm_start_from_a_warm_started_model_keeps_both_stages(tmp_path, small_model):
    from agentgym_bench.benchmark.provenance import training_record

    first = warm_start(config(tmp_path, small_model, "s1", episodes=30, epochs=1, eval_episodes=4))
    second = warm_start(config(tmp_path, tmp_path / "s1", "s2", episodes=20, epochs=2, eval_episodes=4))
    assert "started_from" not in first
    earlier = second["started_from"]
    assert earlier["config"]["model"] == str(small_model) and "evaluation" not in earlier
    assert earlier["train"] == first["train"]
    trainer, compute = training_record(tmp_path / "s2")  # what the board records of the two-stage model
    assert trainer["config"]["model"] == "<local>/s1" and trainer["config"]["epochs"] == 2  # no path of this machine
    assert trainer["config"]["started_from"]["episodes"] == 30
    assert compute["stages"] == 2 and compute["demonstration_episodes"] == 50
    assert compute["steps"] == first["train"]["steps"] + second["train"]["steps"]


KILLED_RUN = """
import sys
import torch
from trainers.sft import warmstart
from tests.rollout.toy_game import register
register()
torch.set_num_threads(1)
warmstart.warm_start(warmstart.SFTConfig(**eval(sys.argv[1])))
"""


def test_a_warm_start_killed_with_sigkill_resumes_to_the_same_model(tmp_path, small_model, monkeypatch,
                                                                   capsys):
    """The killed run is a fresh process, as a user's would be; the resumed and the uninterrupted runs run here (one
    torch thread everywhere: the checkpoint is only taken up by a run on the same thread count)."""
    killed = config(tmp_path, small_model, "killed", episodes=200, epochs=3, eval_episodes=4, save_steps=5)
    kwargs = {k: getattr(killed, k) for k in ("model", "output", "envs", "episodes", "epochs", "lr", "batch_size",
                                              "eval_episodes", "max_new_tokens", "seed", "save_steps")}
    kill_once_written(["-c", KILLED_RUN, repr(kwargs)], tmp_path / "killed" / "checkpoint-5")
    assert not (tmp_path / "killed" / "model.safetensors").exists(), "the run wrote its model before it was killed"
    assert run_folder.is_run_folder(tmp_path / "killed")  # as RL's: config.yaml, metrics.jsonl, checkpoint-N/
    last = run_folder.checkpoints(tmp_path / "killed")[-1]
    saved = torch.load(last / run_folder.STATE, weights_only=False)
    assert 0 < len(saved["losses"]) < 3 * math.ceil(saved["key"]["rows"] / 16)  # stopped part-way
    assert (last / run_folder.ACTOR / "model.safetensors").is_file()  # hf:killed evaluates this checkpoint's model
    rows = tmp_path / "killed" / DEMONSTRATIONS
    assert rows.is_file()  # the demonstrations' rows, kept for the resumed run
    capsys.readouterr()
    resumed = warm_start(killed)
    err = capsys.readouterr().err
    assert f"rows read from {rows}" in err and f"resuming from {last}" in err and not rows.exists()
    straight = warm_start(config(tmp_path, small_model, "straight", episodes=200, epochs=3, eval_episodes=4,
                                 save_steps=5))
    assert resumed["train"]["resumed"] and "resumed" not in straight["train"]
    assert resumed["train"]["steps"] == straight["train"]["steps"]
    assert resumed["train"]["final_loss"] == straight["train"]["final_loss"]
    assert (tmp_path / "killed" / "model.safetensors").read_bytes() == \
        (tmp_path / "straight" / "model.safetensors").read_bytes()
    # the killed run's lines after its checkpoint were rewritten: the same metrics as the run never stopped
    assert (tmp_path / "killed" / run_folder.METRICS).read_text() == \
        (tmp_path / "straight" / run_folder.METRICS).read_text()
    assert not run_folder.checkpoints(tmp_path / "killed")  # removed once the model is written


def test_a_checkpoint_of_other_settings_is_not_taken_up(tmp_path, small_model, capsys):
    from agentgym_bench.rollout.hf import load_model
    from trainers.sft import warmstart

    first = config(tmp_path, small_model, "m", episodes=30, epochs=1, eval_episodes=4, save_steps=1)
    warmstart.finetune(*load_model(str(small_model)), collect_demonstrations(first), first,
                       run=tmp_path / "m")  # a checkpoint of lr 5e-3 left behind, the last of several steps
    left = run_folder.checkpoints(tmp_path / "m")
    assert len(left) == 1 and int(left[0].name.split("-")[1]) > 1  # only the latest is kept
    other = warm_start(config(tmp_path, small_model, "m", episodes=30, epochs=1, eval_episodes=4, lr=1e-3))
    fresh = warm_start(config(tmp_path, small_model, "fresh", episodes=30, epochs=1, eval_episodes=4, lr=1e-3))
    assert "other settings" in capsys.readouterr().err
    assert "resumed" not in other["train"] and other["train"]["final_loss"] == fresh["train"]["final_loss"]
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == \
        (tmp_path / "fresh" / "model.safetensors").read_bytes()


def test_packed_rows_unpack_to_the_same_rows(tmp_path, small_model):
    from agentgym_bench.rollout.hf import load_model
    from trainers.sft.warmstart import pack_rows, training_rows, unpack_rows

    _, tokenizer = load_model(str(small_model))
    rows = training_rows(collect_demonstrations(config(tmp_path, small_model, "x", episodes=20)), tokenizer)
    assert len(rows) > 20 and any(r.rewards[-1] != 0 for r in rows)
    assert unpack_rows(pack_rows(rows)) == rows


SHARD_WORKER = """
import sys
import torch
import torch.distributed as dist
from agentgym_bench.rollout.hf import load_model
from agentgym_bench.rollout.tokens import collate
from trainers.sft.warmstart import shard_step, unpack_rows

rank, port, model_path, rows_file, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
model, tokenizer = load_model(model_path)
rows = unpack_rows(torch.load(rows_file))
loss = shard_step(model, collate(rows[rank::2], tokenizer.pad_token_id))
if rank == 0:
    torch.save({"loss": loss, "grads": [p.grad for p in model.parameters()]}, out)
dist.barrier()  # leaving alone while the peer still works can abort gloo (rank 1 died with SIGABRT in CI)
dist.destroy_process_group()
"""


def test_two_processes_share_the_whole_batch_gradient(tmp_path, small_model):
    """Data-parallel warm start (``--processes``): each process's half of the batch, one all_reduce, and every
    process holds the gradient and loss of the whole batch, as one process computes them."""
    import socket
    import subprocess
    import sys

    from agentgym_bench.rollout.hf import load_model
    from agentgym_bench.rollout.tokens import collate
    from trainers.sft.warmstart import pack_rows, reply_loss, training_rows

    model, tokenizer = load_model(str(small_model))
    rows = training_rows(collect_demonstrations(config(tmp_path, small_model, "x", episodes=12)), tokenizer)[:17]
    torch.save(pack_rows(rows), tmp_path / "rows.pt")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    workers = [subprocess.Popen([sys.executable, "-c", SHARD_WORKER, str(rank), str(port), str(small_model),
                                 str(tmp_path / "rows.pt"), str(tmp_path / "out.pt")]) for rank in (0, 1)]
    assert [w.wait(timeout=120) for w in workers] == [0, 0]
    shared = torch.load(tmp_path / "out.pt")
    loss = reply_loss(model, collate(rows, tokenizer.pad_token_id))  # an odd batch: the halves differ in size
    loss.backward()
    assert shared["loss"] == pytest.approx(float(loss.detach()), rel=1e-5)
    for p, g in zip(model.parameters(), shared["grads"], strict=True):
        assert torch.allclose(p.grad, g, atol=1e-6, rtol=1e-4)


@pytest.mark.slow
def test_warmstart_on_two_processes_from_the_command_line(tmp_path, small_model):
    import subprocess
    import sys

    from trainers.runtime import compute_dtype

    runs = {}
    for processes, dtype in ((1, "float32"), (2, "float32"), (2, "auto")):
        out = tmp_path / f"p{processes}-{dtype}"
        subprocess.run([sys.executable, "-m", "agentgym_bench.cli", "warmstart", f"model={small_model}",
                        f"output={out}", "envs=[AgentFrozenLakeNoSlip-v0]", "episodes=60", "batch_size=16",
                        "eval_episodes=8", "num_threads=1", f"processes={processes}", f"dtype={dtype}"],
                       check=True, timeout=600)
        runs[processes if dtype == "float32" else dtype] = json.loads((out / "warmstart.json").read_text())["train"]
    # dtype auto on two processes: both probe, process 0's choice is every process's and is recorded
    assert runs["auto"]["dtype"] == compute_dtype.recorded(tmp_path / "p2-auto") and runs["auto"]["processes"] == 2
    assert runs[2]["processes"] == 2 and "processes" not in runs[1]
    assert runs[2]["steps"] == runs[1]["steps"]  # the same steps, each batch split between the processes
    assert runs[2]["first_loss"] == pytest.approx(runs[1]["first_loss"], rel=1e-4)  # same weights, same first batch
    assert runs[2]["final_loss"] < runs[2]["first_loss"]


def test_a_checkpoint_of_other_settings_is_ignored_naming_each_setting(tmp_path, capsys):
    from trainers.runtime import checkpoint as ckpt

    (tmp_path / "checkpoint-5").mkdir()
    torch.save({"key": {"config": {"epochs": 1, "seed": 0}, "threads": 1}, "losses": [1.0] * 5},
               tmp_path / "checkpoint-5" / run_folder.STATE)
    assert ckpt.load_sft(tmp_path, {"config": {"epochs": 1, "seed": 0}, "threads": 2}, "warmstart") is None
    err = capsys.readouterr().err
    assert "ignoring " in err and "other settings (threads 1 -> 2); starting afresh" in err
