"""The Echo Trap rule on synthetic curves, the metrics log, the plot and the success-gain interval."""

import json

import numpy as np
import pytest
from PIL import Image

from trainers.metrics import EchoTrapRule, MetricsLog, plot_metrics, plot_runs, read_metrics, success_gain

RULE = EchoTrapRule()  # window 5, std below 0.5 x peak, entropy below 0.6 x peak, grad >= 3 x earlier median


def curves(n=60, collapse_at=None, std_to=0.45, ent_to=1.0, spike_at=None, seed=0):
    """Reward std, entropy and grad norm with mild noise; after ``collapse_at`` std and entropy decay
    geometrically towards ``std_to`` / ``ent_to``; from ``spike_at`` on the grad norm is 5x."""
    rng = np.random.default_rng(seed)
    std = np.full(n, 0.45)
    ent = np.full(n, 1.0)
    if collapse_at is not None:
        k = np.arange(n - collapse_at)
        std[collapse_at:] = std_to + (0.45 - std_to) * 0.8**k
        ent[collapse_at:] = ent_to + (1.0 - ent_to) * 0.8**k
    grad = 1.0 + 0.2 * rng.random(n)
    if spike_at is not None:
        grad[spike_at:] *= 5.0
    std = std * (1 + 0.05 * rng.standard_normal(n))
    return std.tolist(), ent.tolist(), grad.tolist()


def test_collapse_with_gradient_spike_fires_after_the_collapse_not_before():
    std, ent, grad = curves(collapse_at=30, std_to=0.02, ent_to=0.2, spike_at=40)
    fired = RULE.fired(std, ent, grad)
    assert fired, "the full signature must warn"
    assert fired[0] >= 40  # not before the spike, although std and entropy had collapsed earlier
    assert fired[0] <= 44  # and promptly once all three hold


def test_healthy_convergence_without_spike_does_not_fire():
    # std and entropy both fall far (a policy converging on a solved task), gradient norm stays flat
    std, ent, grad = curves(collapse_at=20, std_to=0.02, ent_to=0.2)
    assert RULE.fired(std, ent, grad) == []


def test_gradient_spike_alone_does_not_fire():
    std, ent, grad = curves(spike_at=30)
    assert RULE.fired(std, ent, grad) == []


def test_std_collapse_and_spike_with_stable_entropy_does_not_fire():
    std, ent, grad = curves(collapse_at=30, std_to=0.02, ent_to=1.0, spike_at=40)
    assert RULE.fired(std, ent, grad) == []


def test_entropy_collapse_and_spike_with_stable_std_does_not_fire():
    std, ent, grad = curves(collapse_at=30, std_to=0.45, ent_to=0.2, spike_at=40)
    assert RULE.fired(std, ent, grad) == []


def test_needs_history_before_it_can_fire():
    std, ent, grad = curves(n=60, collapse_at=0, std_to=0.0, ent_to=0.0, spike_at=3)
    assert all(t >= RULE.min_steps - 1 for t in RULE.fired(std, ent, grad))
    assert not RULE.check(std[:5], ent[:5], grad[:5])


def test_misaligned_series_are_an_error():
    with pytest.raises(ValueError, match="one value per iteration"):
        RULE.check([1.0] * 20, [1.0] * 19, [1.0] * 20)


def test_success_gain_is_the_paired_comparison_of_the_benchmark():
    before = [True] * 30 + [False] * 70
    after = [True] * 60 + [False] * 40  # the same 30 seeds stay solved, 30 more are solved, none is lost
    gain = success_gain(before, after)
    assert (gain["before"], gain["after"], gain["gain"]) == pytest.approx((0.3, 0.6, 0.3))
    assert gain["p_value"] == pytest.approx(2 / 2**30)  # McNemar: 30 discordant pairs, all one way
    # paired: the per-seed differences are 30 ones and 70 zeros, so the interval is that of a 0.3 rate, narrower
    # than the unpaired Wald interval (half-width 0.133)
    assert 0.2 < gain["ci_low"] < 0.3 < gain["ci_high"] < 0.4
    assert gain["ci_high"] - gain["ci_low"] < 2 * 0.133
    assert success_gain([True, False], [False, True])["gain"] == 0
    with pytest.raises(ValueError, match="paired"):
        success_gain([True], [True, False])


def test_metrics_log_resume_drops_records_after_the_checkpoint(tmp_path):
    path = tmp_path / "metrics.jsonl"
    log = MetricsLog(path)
    for step in range(1, 6):
        log.write({"step": step, "reward/score": step / 10, "loss/kl": float("nan")})
    with path.open("a") as f:
        f.write('{"step": 6, "reward/sc')  # torn line of a killed run
    assert [r["step"] for r in read_metrics(path)] == [1, 2, 3, 4, 5]
    assert read_metrics(path)[0]["loss/kl"] is None  # NaN is written as null, the file stays valid JSON
    resumed = MetricsLog(path, resume_step=3)
    assert [r["step"] for r in resumed.history()] == [1, 2, 3]
    resumed.write({"step": 4, "reward/score": 0.9})
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2, 3, 4]
    assert [r["step"] for r in MetricsLog(path).history()] == []  # a fresh run starts a fresh file


def test_plot_writes_a_png_with_warnings_and_missing_panels(tmp_path):
    records = [{"step": s, "reward/success": s / 20, "loss/entropy": 1 - s / 40, "loss/grad_norm": 1.0,
                "warn/echo_trap": s == 15} for s in range(1, 21)]
    records[9]["val/success"] = 0.4
    path = plot_metrics(records, tmp_path / "curves.png", title="test run")
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size[0] > 800 and image.size[1] > 600


def test_plot_runs_draws_several_runs(tmp_path):
    for name, slope in (("a", 0.01), ("b", 0.02)):
        log = MetricsLog(tmp_path / f"{name}.jsonl")
        for step in range(0, 101, 25):
            log.write({"step": step, "val/success": 0.2 + slope * step / 10})
    runs = {"A": tmp_path / "a.jsonl", "B": tmp_path / "b.jsonl"}
    path = plot_runs({"env 1": runs, "env 2": runs}, tmp_path / "runs.png")
    with Image.open(path) as image:
        assert image.size[0] > image.size[1] > 200
