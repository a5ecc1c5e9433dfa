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


def write_run(folder, before, after):
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"val": {}, "val_episodes": {"before": before, "after": after}}))
    return str(folder)


def test_the_command_prints_both_intervals_and_rejects_bad_runs(tmp_path, capsys):
    a = [write_run(tmp_path / f"a{s}", [0, 1, 0, 0] * 50, [0, 1, 0, 1] * 50) for s in range(2)]
    b = [write_run(tmp_path / f"b{s}", [0, 1, 0, 0] * 50, [1, 1, 0, 1] * 50) for s in range(2)]
    assert cli(["compare-runs", "--base", *a, "--runs", *b]) == 0
    out = capsys.readouterr().out
    assert "difference +0.250" in out and "200 episodes" in out and "over the 2 training seeds" in out
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
