"""The Echo Trap rule on synthetic and real curves, the metrics log, the plot and the success-gain interval."""

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from trainers.runtime.metrics import (
    WARNINGS,
    EchoTrapRule,
    MetricsLog,
    drop_ratios,
    plot_metrics,
    plot_runs,
    read_metrics,
    success_gain,
)

RULE = EchoTrapRule()  # the defaults: window 5, std 0.5, entropy 0.6, success 0.5 of peak, 2 spikes of 3x, 0.1x


def run(n=60, collapse_at=None, std_to=0.45, ent_to=1.0, success_to=0.5, grad="flat", spike_at=None,
        format_from=None, format_to=1.0, seed=0):
    """Metrics records of a synthetic run (step 0 is the evaluation before training, as in a real log).

    Reward std, entropy and success start at 0.45, 1.0 and 0.5 with mild noise; from ``collapse_at`` on they decay
    geometrically towards ``std_to`` / ``ent_to`` / ``success_to``. The gradient norm is ~1, and from ``spike_at``
    on: ``"spike"`` 5x at that one iteration, ``"spikes"`` 5x at every iteration, ``"vanish"`` 0.01x. From
    ``format_from`` on ``rollout/format_valid`` falls from 1 to ``format_to``."""
    rng = np.random.default_rng(seed)
    k = np.arange(n)

    def towards(start, end):
        values = np.full(n, start)
        if collapse_at is not None:
            values[collapse_at:] = end + (start - end) * 0.8 ** k[: n - collapse_at]
        return values

    std, ent, success = towards(0.45, std_to), towards(1.0, ent_to), towards(0.5, success_to)
    norm = 1.0 + 0.2 * rng.random(n)
    if grad == "spike":
        norm[spike_at] *= 5.0
    elif grad != "flat":
        norm[spike_at:] *= 5.0 if grad == "spikes" else 0.01
    fmt = np.ones(n)
    if format_from is not None:
        fmt[format_from:] = format_to
    noise = 1 + 0.05 * rng.standard_normal((2, n))
    return [{"step": 0, "val/success": 0.5}] + [
        {"step": t + 1, "reward/in_group_std": std[t] * noise[0, t], "loss/entropy": ent[t],
         "reward/success": min(1.0, success[t] * noise[1, t]), "loss/grad_norm": norm[t],
         "rollout/format_valid": fmt[t]} for t in range(n)]


def fired(records, rule=RULE):
    return {key.removeprefix("warn/"): steps for key, steps in rule.fired(records).items() if steps}


def test_ragen_signature_with_success_drop_fires_after_the_spikes_not_before():
    records = run(collapse_at=30, std_to=0.02, ent_to=0.2, success_to=0.05, grad="spikes", spike_at=40)
    warnings = fired(records)
    assert 40 <= warnings["echo_trap"][0] <= 44  # the second spike of the window, not before
    assert warnings["success_drop"][0] < warnings["echo_trap"][0]  # success fell before the gradient moved
    assert "vanishing_gradient" not in warnings and "format_collapse" not in warnings


def test_healthy_convergence_with_one_gradient_spike_fires_nothing():
    # std and entropy fall far, success rises (a solved task), one 5x spike: the old rule fired here
    records = run(collapse_at=20, std_to=0.02, ent_to=0.2, success_to=0.98, grad="spike", spike_at=40)
    assert fired(records) == {}
    assert fired(records, EchoTrapRule(spike_count=1)) == {}  # success, not the spike count alone, tells them apart


def test_healthy_convergence_with_vanishing_gradient_fires_nothing():
    records = run(collapse_at=20, std_to=0.0, ent_to=0.2, success_to=1.0, grad="vanish", spike_at=30)
    assert fired(records) == {}


def test_collapse_with_vanishing_gradient_fires_its_own_warning():
    # advantages vanish (every rollout of a seed gets the same reward) while success falls: the old rule missed it
    records = run(collapse_at=20, std_to=0.0, ent_to=0.2, success_to=0.02, grad="vanish", spike_at=30)
    warnings = fired(records)
    assert 30 <= warnings["vanishing_gradient"][0] <= 35
    assert warnings["success_drop"][0] <= 30
    assert "echo_trap" not in warnings


def test_a_stall_short_of_solving_fires_the_vanishing_gradient_warning():
    # std, entropy and gradient fall while success stays flat at 0.5: a deterministic policy, nothing left to learn
    warnings = fired(run(collapse_at=20, std_to=0.0, ent_to=0.05, success_to=0.5, grad="vanish", spike_at=30))
    assert warnings == {"vanishing_gradient": warnings["vanishing_gradient"]}
    assert 30 <= warnings["vanishing_gradient"][0] <= 35
    assert "vanishing_gradient" not in fired(run(collapse_at=20, std_to=0.0, ent_to=0.05, success_to=0.5,
                                                 grad="vanish", spike_at=30), EchoTrapRule(solved=0.4))


def test_one_spike_in_a_collapse_is_not_the_spike_signature():
    records = run(collapse_at=30, std_to=0.02, ent_to=0.2, success_to=0.05, grad="spike", spike_at=40)
    assert "echo_trap" not in fired(records)
    assert "echo_trap" in fired(records, EchoTrapRule(spike_count=1))


def test_spikes_with_stable_entropy_or_std_are_not_the_echo_trap():
    for std_to, ent_to in ((0.02, 1.0), (0.45, 0.2)):
        records = run(collapse_at=30, std_to=std_to, ent_to=ent_to, success_to=0.05, grad="spikes", spike_at=40)
        assert "echo_trap" not in fired(records)


def test_success_drop_threshold_holds_against_sampling_noise():
    # flat runs of 200 iterations, 50 each: success 0.3 with 32 episodes per iteration (half echo-bandit's batch)
    # and 0.1 with 128 (a hard env at the bundled configs' batch): the trailing mean of 10 never falls to half of
    # its noisy peak; with the window of 5 that std and entropy use, it does
    rng = np.random.default_rng(0)
    for p, episodes in ((0.3, 32), (0.1, 128)):
        runs = [rng.binomial(episodes, p, 200) / episodes for _ in range(50)]
        assert min(drop_ratios(success, RULE.success_window).min() for success in runs) > RULE.success_drop
        assert min(drop_ratios(success, 5).min() for success in runs) <= RULE.success_drop


def test_drop_ratios_are_trailing_means_against_their_peak():
    ratios = drop_ratios([1, 3, 2, 0, 0, 6], window=2)  # means 2, 2.5, 1, 0, 3; peaks 2, 2.5, 2.5, 2.5, 3
    np.testing.assert_allclose(ratios, [1, 1, 0.4, 0, 1])
    assert np.isnan(drop_ratios([0, 0, 0], 2)).all() and len(drop_ratios([1], 2)) == 0


def test_format_collapse_fires_early_and_alone():
    records = run(format_from=6, format_to=0.05)
    warnings = fired(records)
    assert warnings == {"format_collapse": warnings["format_collapse"]}
    assert warnings["format_collapse"][0] <= 9 < RULE.min_steps  # no ten-iteration baseline needed
    assert fired(run(format_from=6, format_to=0.6)) == {}  # a dip to 60% of the peak is not a collapse


def test_needs_history_and_logged_series():
    records = run(collapse_at=0, std_to=0.0, ent_to=0.0, success_to=0.0, grad="spikes", spike_at=3)
    assert all(step >= RULE.min_steps for steps in RULE.fired(records).values() for step in steps)
    assert not any(RULE.check(records[:6]).values())
    without_success = [{k: v for k, v in r.items() if k != "reward/success"} for r in records]
    assert fired(without_success) == {}  # every collapse warning needs success: nothing fires without it
    assert RULE.check([]) == dict.fromkeys(RULE.check([]), False) and len(RULE.check([])) == 4


def test_missing_values_are_skipped():
    complete = fired(run(collapse_at=20, std_to=0.0, ent_to=0.2, success_to=0.02, grad="vanish", spike_at=30))
    records = run(collapse_at=20, std_to=0.0, ent_to=0.2, success_to=0.02, grad="vanish", spike_at=30)
    records[12]["reward/in_group_std"] = records[25]["reward/success"] = None  # iterations that did not log them
    gaps = fired(records)
    assert gaps.keys() == complete.keys() == {"vanishing_gradient", "success_drop"}
    assert all(0 <= gaps[key][0] - complete[key][0] <= 1 for key in gaps)  # the window now spans one more step


def test_messages_name_the_thresholds():
    rule = EchoTrapRule(success_drop=0.4, success_window=8, format_drop=0.3)
    assert rule.message("warn/success_drop") == "training success (mean of 8 iterations) fell to <= 40% of its peak"
    assert "<= 30% of their peak" in rule.message("warn/format_collapse")
    assert all(len(rule.message(key)) < 160 for key in WARNINGS)  # one line


@pytest.mark.parametrize(("setting", "message"), [
    ({"window": 0}, "echo_trap.window=0 must be a positive integer"),
    ({"spike_count": 6}, "cannot exceed echo_trap.window=5"),
    ({"success_drop": 1.0}, r"echo_trap.success_drop=1.0 must be in \[0, 1\)"),
    ({"grad_spike": 1.0}, "must be above 1"),
])
def test_bad_thresholds_are_named(setting, message):
    with pytest.raises(ValueError, match=message):
        EchoTrapRule(**setting).validate()


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
                "warn/echo_trap": s == 15, "warn/format_collapse": s > 17} for s in range(1, 21)]
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


DATA = Path(__file__).parent / "data"  # real runs' metrics.jsonl; what made each: data/README.md


def test_real_format_collapse_at_a_large_learning_rate():
    # StarPO at lr 2e-3: replies stop parsing within 4 iterations, every reward is the same penalty, the advantages
    # and the gradient vanish, and the entropy *rises* (garbage replies): not RAGEN's signature, which the earlier
    # rule (std and entropy collapsed and a spike) therefore never reported
    warnings = fired(read_metrics(DATA / "echo-starpo-frozenlake-lr2e-3.jsonl"))
    assert warnings["format_collapse"][0] == 6
    assert warnings["success_drop"][0] == 11  # the first iteration with 10 of history
    assert warnings["vanishing_gradient"][0] == 13
    assert "echo_trap" not in warnings


@pytest.mark.parametrize(("name", "first"), [
    # StarPO, lr 1e-3, seed 1: the format breaks at 16-17, every reward becomes the same penalty from 29 on (std 0,
    # gradient ~0.01 of its peak, entropy rising to 6.9) and validation success ends at 0: a permanent collapse
    ("echo-starpo-frozenlake-seed1", {"format_collapse": 18, "success_drop": 21, "vanishing_gradient": 32}),
    # seed 0: the format breaks at 19-21, then half recovers (validation 0.25 -> 0.00 at 20 -> 0.18 at 40)
    ("echo-starpo-frozenlake-seed0", {"format_collapse": 21, "success_drop": 24}),
    # the filter, seed 1: the format breaks at 4-5 too (3% of replies parse at 5) but recovers at once (26%, 59%,
    # 76% at 6-8), too fast for the trailing mean of 5 to halve: no collapse (validation 0.28 -> 0.24 -> 0.21)
    ("echo-starpo_s_grpo-frozenlake-seed1", {}),
    # the filter, seed 3: RAGEN's pattern. From iteration 14 the in-group std is ~0 and the gradient ~0.001 (every
    # group's 4 episodes identical: a near-deterministic policy, entropy 0.27 -> 0.03) while training success
    # stays ~0.2; replies grow to the 16-token limit, and at 38 a gradient spike breaks the format for good
    # (validation 0.26 -> 0.22 -> 0.00). The stall is flagged 20 iterations before the breakdown
    ("echo-starpo_s_grpo-frozenlake-seed3", {"vanishing_gradient": 18, "format_collapse": 40}),
    # StarPO at lr 3e-4 (seed 0): healthy, validation 0.25 -> 0.31 -> 0.33, at least 97% of replies parse throughout
    ("echo-starpo-frozenlake-lr3e-4", {}),
    # the reference StarPO baseline on the env mix (80 iterations, lr 3e-4): Sokoban's replies stop parsing (all
    # replies: 100% -> ~35-65% from iteration 20 on; validation Sokoban 0.43 -> 0.00, format 0.65) while FrozenLake
    # and Bandit hold: a partial format collapse the earlier rule never reported
    ("baseline-starpo-mix", {"format_collapse": 53}),
    # StarPO-S on the same mix: replies keep parsing (>= 87%); its validation success fell 0.51 -> 0.47, slowly
    ("baseline-starpo_s-mix", {}),
])
def test_real_runs_of_the_echo_trap_study(name, first):
    warnings = fired(read_metrics(DATA / f"{name}.jsonl"))
    assert {key: steps[0] for key, steps in warnings.items()} == first
