"""``agentgym-bench compare-runs``: two settings, several training seeds, paired on the validation episodes."""

import json

import numpy as np
import pytest

from agentgym_bench.cli import main as cli
from agentgym_bench.stats import t_interval
from trainers.rl.compare import compare_runs


def test_t_interval_uses_students_quantile():
    mean, low, high = t_interval([1.0, 2.0, 3.0])  # sd 1, df 2: half-width 4.303 / sqrt(3)
    assert mean == 2.0 and high - mean == pytest.approx(4.303 / 3 ** 0.5)
    assert t_interval([0.1] * 12)[1:] == pytest.approx((0.1, 0.1))  # no spread, any df
    with pytest.raises(ValueError):
        t_interval([1.0])


def test_compare_runs_pairs_episodes_and_seeds():
    rng = np.random.default_rng(0)
    base = (rng.random((3, 400)) < 0.3).astype(int)
    better = np.maximum(base, (rng.random((3, 400)) < 0.2).astype(int))  # never worse on any episode
    result = compare_runs(base, better)
    assert result["difference"] == pytest.approx(better.mean() - base.mean())
    assert 0 < result["episodes"]["low"] <= result["difference"] <= result["episodes"]["high"]
    assert result["seeds"]["differences"] == pytest.approx((better.mean(axis=1) - base.mean(axis=1)).tolist())
    assert result["seeds"]["low"] > 0
    same = compare_runs(base, base)
    assert same["difference"] == 0 and same["episodes"]["low"] == same["episodes"]["high"] == 0
    assert "seeds" not in compare_runs(base[:2], better)  # 2 against 3 runs: no pairing by seed
    with pytest.raises(ValueError, match="one validation set"):
        compare_runs(base, better[:, :100])


def write_run(folder, before, after, seed=0, val_tags=("AgentSokoban-v0",)):
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"val": {}, "val_episodes": {"before": before, "after": after}}))
    config = {"seed": seed, "val_seed_start": 0, "val_env_manager": {"tags": list(val_tags), "num_env_groups": 200}}
    (folder / "config.yaml").write_text(json.dumps(config))
    return str(folder)


def test_the_command_prints_both_intervals_and_rejects_bad_runs(tmp_path, capsys):
    a = [write_run(tmp_path / f"a{s}", [0, 1, 0, 0] * 50, [0, 1, 0, 1] * 50, seed=s) for s in range(2)]
    b = [write_run(tmp_path / f"b{s}", [0, 1, 0, 0] * 50, [1, 1, 0, 1] * 50, seed=s) for s in range(2)]
    assert cli(["compare-runs", "--base", *a, "--runs", *b]) == 0
    out = capsys.readouterr().out
    assert "difference +0.250" in out and "200 episodes" in out and "over the 2 training seeds" in out
    assert "paired by training seed: 0, 1" in out
    assert cli(["compare-runs", "--base", a[1], a[0], "--runs", *b]) == 0  # given in another order: paired by seed
    assert "paired by training seed (reordered from the order given): 0, 1" in capsys.readouterr().out
    assert cli(["compare-runs", "--base", *a, "--runs", b[0]]) == 0
    assert "no interval over the training seeds: 2 base run(s) and 1 run(s)" not in capsys.readouterr().out  # one
    c = [write_run(tmp_path / f"c{s}", [0, 1, 0, 0] * 50, [1, 1, 0, 1] * 50, seed=s) for s in range(3)]
    assert cli(["compare-runs", "--base", *a, "--runs", *c]) == 0
    assert "no interval over the training seeds: 2 base run(s) and 3 run(s)" in capsys.readouterr().out
    assert cli(["compare-runs", "--base", *a, "--runs", *b, "--which", "before"]) == 0
    assert "difference +0.000" in capsys.readouterr().out
    assert cli(["compare-runs", "--runs", *b, "--which", "gain"]) == 0
    out = capsys.readouterr().out
    assert "before: 0.250, 0.250" in out and "after: 0.750, 0.750" in out and "difference +0.500" in out
    for args, message in ((["--runs", *b], "or --which gain"), (["--base", *a, "--runs", *b, "--which", "gain"],
                                                                "takes no --base")):
        assert cli(["compare-runs", *args]) == 2
        assert message in capsys.readouterr().err

    short = write_run(tmp_path / "short", [0] * 10, [1] * 10)
    old = tmp_path / "old"
    old.mkdir()
    (old / "summary.json").write_text(json.dumps({"val": {"gain": 0.1}}))
    for bad, message in ((short, "different numbers of episodes"), (str(old), "no per-episode validation"),
                         (str(tmp_path / "missing"), "is it a finished training run")):
        assert cli(["compare-runs", "--base", *a, "--runs", bad]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1

    # runs that cannot be paired: other validation episodes, one run twice, two runs of one training seed
    lake = write_run(tmp_path / "lake", [0, 1, 0, 0] * 50, [1, 1, 0, 1] * 50, val_tags=("AgentFrozenLake-v0",))
    twin = write_run(tmp_path / "twin", [0, 1, 0, 0] * 50, [1, 1, 0, 1] * 50, seed=1)
    for args, message in ((["--base", a[0], "--runs", lake], "was not validated on the episodes of"),
                          (["--base", *a, "--runs", b[0], b[0]], "--runs names a run more than once"),
                          (["--runs", b[0], b[1], twin, "--which", "gain"], "training seeds [0, 1, 1]")):
        assert cli(["compare-runs", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1


def trained_run(folder, success, lake, learning_rate=5e-5):
    """A finished run folder with one training record per iteration (all envs and one env) and the config keys that
    fix its rooms."""
    folder.mkdir()
    config = {"pretrain": "start", "max_steps": len(success), "train_seed_start": 10000, "rollout_batch_size": 8,
              "train_env_manager": {"tags": ["AgentFrozenLake-v0"]}, "learning_rate": learning_rate}
    (folder / "config.yaml").write_text(json.dumps(config))
    (folder / "metrics.jsonl").write_text("".join(
        json.dumps({"step": i + 1, "reward/success": s, "reward/AgentFrozenLake-v0/success": f}) + "\n"
        for i, (s, f) in enumerate(zip(success, lake, strict=True))))
    (folder / "summary.json").write_text("{}")
    return str(folder)


def test_the_command_reads_runs_on_their_own_rooms_against_a_frozen_run(tmp_path, capsys):
    """Iterations 3-4 of 4 are read. Against the frozen run the runs gain +0.2 and +0.4 (t over two runs: +0.3 with
    half-width 12.706 * 0.1); the base runs +0.1 each, so the runs minus the base +0.1 and +0.3."""
    frozen = trained_run(tmp_path / "frozen", [0.9, 0.9, 0.5, 0.5], [0.0] * 4, learning_rate=0)
    runs = [trained_run(tmp_path / f"run{s}", [0.0, 0.0, 0.5 + g, 0.5 + g], [0.0] * 4) for s, g in ((0, .2), (1, .4))]
    base = [trained_run(tmp_path / f"base{s}", [0.0, 0.0, 0.6, 0.6], [0.0] * 4) for s in (0, 1)]
    assert cli(["compare-runs", "--frozen", frozen, "--runs", *runs]) == 0
    out = capsys.readouterr().out
    assert "iterations 3-4" in out and "t over the 2 runs" in out
    assert "all envs                   +0.300 [-0.971, +1.571]   +0.200, +0.400" in out
    assert "AgentFrozenLake-v0         +0.000 [+0.000, +0.000]" in out
    assert cli(["compare-runs", "--frozen", frozen, "--runs", *runs, "--base", *base]) == 0
    assert "all envs                   +0.200 [-1.071, +1.471]   +0.100, +0.300" in capsys.readouterr().out
    assert cli(["compare-runs", "--frozen", frozen, "--runs", runs[0]]) == 0
    assert "normal over the iterations of one run" in capsys.readouterr().out
    for args, message in ((["--frozen", runs[1], "--runs", runs[0]], "is not a frozen run"),
                          (["--frozen", frozen, "--runs", *runs, "--base", base[0]], "paired run by run"),
                          (["--frozen", frozen, "--runs", *runs, "--which", "gain"], "--which reads validation"),
                          (["--frozen", frozen, "--runs", str(tmp_path / "none")], "no finished run")):
        assert cli(["compare-runs", *args]) == 2
        assert message in capsys.readouterr().err
    gap = tmp_path / "run1" / "metrics.jsonl"  # the env's record missing at iteration 3: not paired with run0's
    lines = gap.read_text().splitlines()
    gap.write_text("\n".join(lines[:2] + [json.dumps({"step": 3, "reward/success": 0.9})] + lines[3:]) + "\n")
    assert cli(["compare-runs", "--frozen", frozen, "--runs", *runs]) == 2
    assert "logged AgentFrozenLake-v0 at different iterations" in capsys.readouterr().err
