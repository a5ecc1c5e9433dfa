"""Training metrics: the JSON-lines log, the Echo Trap warning rule, the curves plot and a success-gain interval.

Every record is one iteration: ``{"step": k, "<namespace>/<name>": value, ...}``. The keys are documented in one
table in docs/trainers.md (``reward/``, ``rollout/``, ``loss/``, ``critic/``, ``val/``, ``time/``, ``warn/``).
The loop computes values; nothing here touches a model.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentgym_bench.files import write_atomic
from agentgym_bench.stats import paired_difference

__all__ = ["WARNINGS", "EchoTrapRule", "MetricsLog", "drop_ratios", "plot_metrics", "plot_runs", "read_metrics",
           "success_gain"]


def _clean(value: Any) -> Any:
    """JSON-friendly scalar: floats stay floats (NaN/inf as null), tensors and numpy scalars become Python numbers."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsLog:
    """Append-only ``metrics.jsonl`` with one record per iteration.

    Arguments:
        path: the file. Created if missing.
        resume_step: when resuming from a checkpoint taken after iteration ``resume_step``, records of later
            iterations (written by the interrupted run after its checkpoint) are dropped first, so that the resumed
            run rewrites them; ``None`` starts a fresh file.
    """

    def __init__(self, path: str | os.PathLike, resume_step: int | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kept = [] if resume_step is None or not self.path.exists() else [
            r for r in read_metrics(self.path) if r["step"] <= resume_step]
        write_atomic(self.path, "".join(json.dumps(r) + "\n" for r in kept).encode())  # a kill keeps the old lines

    def history(self) -> list[dict[str, Any]]:
        return read_metrics(self.path)

    def write(self, record: Mapping[str, Any]) -> None:
        if "step" not in record:
            raise ValueError("a metrics record needs a 'step'")
        with self.path.open("a") as f:
            f.write(json.dumps({k: _clean(v) for k, v in record.items()}) + "\n")
            f.flush()


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` (a torn last line from a killed run is skipped)."""
    records = []
    for line in Path(path).read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


WARNINGS: dict[str, str] = {
    "warn/echo_trap": "Echo Trap (RAGEN's signature): reward std and entropy collapsed, the gradient norm spiked "
                      "{spike_count}+ times in {window} iterations, success fell to <= {success_drop:.0%} of its peak",
    "warn/vanishing_gradient": "no learning signal left: reward std fell, the gradient norm to <= {grad_vanish:.0%} "
                               "of its peak, and training success is below {solved:.0%} or fell",
    "warn/success_drop": "training success (mean of {success_window} iterations) fell to <= {success_drop:.0%} of "
                         "its peak",
    "warn/format_collapse": "format collapse: replies that parse (rollout/format_valid) fell to <= {format_drop:.0%} "
                            "of their peak",
}
"""The rule's metrics keys and the one-line explanation of each (a template of the rule's fields:
:meth:`EchoTrapRule.message`)."""


@dataclass(frozen=True)
class EchoTrapRule:
    """When to warn that training collapses: RAGEN's Echo Trap (arXiv 2504.20073, §4.1) and its relatives.

    RAGEN observes that before a collapse the in-group reward std falls (every rollout of a prompt gets the same
    reward, so there is nothing left to learn from), the policy's entropy falls (it repeats one reasoning pattern)
    and the gradient norm spikes. Each of these alone is normal: a policy converging on a task it solves lowers std
    and entropy too, and its gradient norm falls to ~0 with the advantages; a single spike can be noise. What tells a
    collapse from convergence is success: it falls. Every quantity is a trailing mean ``m_t`` over the last
    ``window`` iterations, compared with the run's own history (``peak`` is the largest ``m_s``, ``s <= t``:
    :func:`drop_ratios`). The conditions:

    - std collapsed: ``m_t(reward/in_group_std) <= std_drop * peak``; entropy collapsed: likewise with
      ``entropy_drop``;
    - success dropped: ``m_t(reward/success) <= success_drop * peak``, with trailing means over ``success_window``
      iterations (success is a binomial rate: noisier than the std, which averages over groups);
    - gradient spiked: at least ``spike_count`` of the last ``window`` gradient norms are ``>= grad_spike`` times
      the median of the values before the window (one spike is not enough); gradient vanished:
      ``m_t(loss/grad_norm) <= grad_vanish * peak`` (against the peak, not the median: in a long collapse the median
      of the history becomes the collapsed value itself).

    The warnings (one metrics key each, :data:`WARNINGS`):

    - ``warn/echo_trap``: std and entropy collapsed, the gradient spiked, success dropped (RAGEN's signature);
    - ``warn/vanishing_gradient``: std collapsed and the gradient vanished (the advantages vanished: the policy
      stopped learning), while success dropped or its trailing mean is below ``solved``. Convergence on a solved task
      looks the same but with success near 1; a policy that stopped exploring short of that (RAGEN's policy that
      repeats itself: with a group's episodes sharing a seed, a deterministic policy gets the same reward in all of
      them) is stalled.
    - ``warn/success_drop``: success dropped, whatever else happened;
    - ``warn/format_collapse``: ``m_t(rollout/format_valid) <= format_drop * peak``. It needs only ``window + 1``
      iterations (format validity starts near 1 after a warm start, so its fall needs no long baseline); the others
      need ``min_steps``.

    Attributes:
        window: iterations in each trailing mean and in the spike count.
        std_drop: fraction of its peak below which the reward std counts as collapsed.
        entropy_drop: fraction of its peak below which the entropy counts as collapsed.
        success_drop: fraction of its peak below which training success counts as dropped.
        success_window: iterations in the trailing mean of success.
        grad_spike: multiple of the earlier median gradient norm that counts as a spike.
        spike_count: spikes among the last ``window`` iterations that count as "the gradient spiked".
        grad_vanish: fraction of its peak below which the gradient norm counts as vanished.
        format_drop: fraction of its peak below which ``rollout/format_valid`` counts as collapsed.
        solved: training success (trailing mean over ``success_window``) from which a vanished gradient counts as
            convergence on a solved task rather than a stall.
        min_steps: iterations needed before the std / entropy / success / gradient warnings can fire.
    """

    window: int = 5
    std_drop: float = 0.5
    entropy_drop: float = 0.6
    success_drop: float = 0.5
    success_window: int = 10
    grad_spike: float = 3.0
    spike_count: int = 2
    grad_vanish: float = 0.1
    format_drop: float = 0.5
    solved: float = 0.9
    min_steps: int = 10

    def validate(self) -> None:
        """Raises: ValueError naming the setting (as ``echo_trap.<name>``) that cannot work."""
        for name in ("window", "success_window", "spike_count", "min_steps"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"echo_trap.{name}={getattr(self, name)!r} must be a positive integer")
        if self.spike_count > self.window:
            raise ValueError(f"echo_trap.spike_count={self.spike_count} cannot exceed echo_trap.window={self.window}")
        for name in ("std_drop", "entropy_drop", "success_drop", "grad_vanish", "format_drop", "solved"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"echo_trap.{name}={getattr(self, name)!r} must be in [0, 1)")
        if not self.grad_spike > 1:
            raise ValueError(f"echo_trap.grad_spike={self.grad_spike!r} must be above 1")

    def check(self, records: Sequence[Mapping[str, Any]]) -> dict[str, bool]:
        """The warnings at the last of these training iterations (metrics records, oldest first; records without
        ``loss/grad_norm``, such as the evaluation before training, are skipped) -> ``{key: fired}`` for every key of
        :data:`WARNINGS`. Values a run does not log (NaN, null or missing) are skipped; a series it never logs fires
        nothing that needs it."""
        rows = [r for r in records if r.get("loss/grad_norm") is not None]
        series = {k: [_number(r.get(k)) for r in rows] for k in
                  ("reward/in_group_std", "loss/entropy", "reward/success", "loss/grad_norm", "rollout/format_valid")}
        out = dict.fromkeys(WARNINGS, False)
        w = self.window
        if len(rows) > w:
            out["warn/format_collapse"] = _dropped(series["rollout/format_valid"], self.format_drop, w)
        if len(rows) < max(self.min_steps, w + 1, self.success_window):
            return out
        success = _dropped(series["reward/success"], self.success_drop, self.success_window)
        logged = [v for v in series["reward/success"] if math.isfinite(v)][-self.success_window:]
        unsolved = len(logged) == self.success_window and sum(logged) / len(logged) < self.solved
        std = _dropped(series["reward/in_group_std"], self.std_drop, w)
        grad = series["loss/grad_norm"]
        baseline = float(np.median(grad[:-w]))
        spiked = sum(g >= self.grad_spike * baseline for g in grad[-w:]) >= self.spike_count
        vanished = _dropped(grad, self.grad_vanish, w)
        out["warn/success_drop"] = success
        out["warn/echo_trap"] = success and std and spiked and _dropped(series["loss/entropy"], self.entropy_drop, w)
        out["warn/vanishing_gradient"] = (success or unsolved) and std and vanished
        return out

    def message(self, key: str) -> str:
        """The one line that says what warning ``key`` means, with this rule's thresholds."""
        return WARNINGS[key].format(**dataclasses.asdict(self))

    def fired(self, records: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
        """For every key of :data:`WARNINGS`, the ``step`` of each record at which :meth:`check` fires on the records
        up to it (a finished run's ``metrics.jsonl``, e.g.)."""
        out: dict[str, list[int]] = {key: [] for key in WARNINGS}
        for t, record in enumerate(records):
            for key, on in self.check(records[: t + 1]).items():
                if on and record.get("loss/grad_norm") is not None:
                    out[key].append(record["step"])
        return out


def drop_ratios(values: Sequence[float], window: int) -> np.ndarray:
    """``m_t / max_{s<=t} m_s`` for every ``t`` from ``window - 1`` on, where ``m_t`` is the trailing mean of the
    ``window`` values up to ``t``: how far a series stands below its own peak, shape ``(len(values) - window + 1,)``.
    NaN where the peak is not positive."""
    x = np.asarray(values, dtype=float)
    if len(x) < window:
        return np.empty(0)
    cumulative = np.concatenate([[0.0], np.cumsum(x)])
    means = (cumulative[window:] - cumulative[:-window]) / window
    peaks = np.maximum.accumulate(means)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(peaks > 0, means / peaks, np.nan)


def _dropped(values: list[float], fraction: float, window: int) -> bool:
    """The last of :func:`drop_ratios` over the logged (finite) values is at most ``fraction``; False with fewer than
    ``window`` of them or a peak that is not positive."""
    ratios = drop_ratios([v for v in values if math.isfinite(v)], window)
    return bool(len(ratios)) and bool(ratios[-1] <= fraction)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def success_gain(successes_before: Sequence[bool], successes_after: Sequence[bool]) -> dict[str, float]:
    """The change in success between two evaluations on the same validation seeds (same order), paired:
    :func:`agentgym_bench.stats.paired_difference` (paired bootstrap interval, McNemar's exact test), the
    one comparison the benchmark and the leaderboard use too. Pairing removes the seeds' own difficulty from the
    noise, so the interval is narrower than an unpaired one on the same episodes.

    Returns:
        ``before``, ``after``, ``gain`` (after - before), ``ci_low``, ``ci_high`` (95%), ``p_value``, ``n_before``,
        ``n_after``. The gain is "separated by its 95% confidence interval" when ``ci_low > 0``.
    """
    c = paired_difference(np.asarray(successes_before, dtype=float), np.asarray(successes_after, dtype=float))
    return {"before": c.mean_a, "after": c.mean_b, "gain": c.difference, "ci_low": c.low, "ci_high": c.high,
            "p_value": c.p_value, "n_before": c.n, "n_after": c.n}


WARNING_COLORS = {"warn/echo_trap": "red", "warn/vanishing_gradient": "purple", "warn/success_drop": "orange",
                  "warn/format_collapse": "brown"}
"""The line colour of each warning in the curves plot."""

# (title, [(key, label), ...], y-limits or None) panels of the curves plot
PANELS: list[tuple[str, list[tuple[str, str]], tuple[float, float] | None]] = [
    ("success", [("reward/success", "train"), ("val/success", "validation")], None),
    ("episode score", [("reward/score", "train"), ("val/score", "validation")], None),
    ("in-group reward std", [("reward/in_group_std", "all groups"), ("reward/in_group_std_kept", "kept groups")],
     None),
    ("entropy", [("loss/entropy", "actor")], None),
    ("gradient norm", [("loss/grad_norm", "actor"), ("critic/grad_norm", "critic")], None),
    ("reply length (tokens)", [("rollout/response_length", "train")], None),
    ("valid replies", [("rollout/format_valid", "format"), ("rollout/action_valid", "actions")], (-0.05, 1.05)),
    ("policy update", [("loss/clipfrac", "clip fraction"), ("loss/approx_kl", "approx. KL")], None),
    ("KL to reference", [("loss/kl", "KL")], None),
    ("critic loss", [("critic/value_loss", "value loss")], None),
    ("critic explained variance", [("critic/explained_variance", "explained var.")], (-1.05, 1.05)),
    ("groups with any reward spread", [("rollout/informative_share", "share")], (-0.05, 1.05)),
]


def plot_metrics(records: Iterable[Mapping[str, Any]], path: str | os.PathLike, title: str = "") -> Path:
    """Draw the training curves (one panel per quantity) to a PNG; iterations where a warning of
    :data:`WARNINGS` fired get a coloured line in every panel (:data:`WARNING_COLORS`). Panels with no data say so
    instead of disappearing, so the layout is always the same.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = list(records)
    warnings = [(r["step"], WARNING_COLORS[key]) for r in records for key in WARNINGS if r.get(key)]
    steps = [r["step"] for r in records] or [0]
    cols = 4
    rows = math.ceil(len(PANELS) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.8 * cols, 2.7 * rows), squeeze=False)
    for ax, (panel_title, series, limits) in zip(axes.flat, PANELS, strict=False):
        drawn = False
        for key, label in series:
            points = [(r["step"], r[key]) for r in records if r.get(key) is not None]
            if not points:
                continue
            xs, ys = zip(*points, strict=True)
            if limits is not None:  # e.g. explained variance of near-constant returns: -1e15 would hide the rest
                ys = [min(max(y, limits[0]), limits[1]) for y in ys]
            if len(points) < 30 or key.startswith("val/"):
                ax.plot(xs, ys, label=label, linewidth=1.2, marker="o", markersize=3)
            else:  # noisy per-iteration values: faint, with a trailing mean over 10 iterations on top
                line = ax.plot(xs, ys, linewidth=0.8, alpha=0.3)[0]
                smooth = [sum(ys[max(0, i - 9): i + 1]) / len(ys[max(0, i - 9): i + 1]) for i in range(len(ys))]
                ax.plot(xs, smooth, label=f"{label} (mean of 10)", linewidth=1.4, color=line.get_color())
            drawn = True
        for step, color in warnings:
            ax.axvline(step, color=color, alpha=0.3, linewidth=1)
        ax.set_xlim(min(steps), max(max(steps), min(steps) + 1))
        if limits is not None:
            ax.set_ylim(*limits)
        ax.set_title(panel_title, fontsize=10)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        if drawn:
            ax.legend(fontsize=7, loc="best")
        else:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes, color="gray")
    for ax in axes.flat[len(PANELS):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("iteration", fontsize=8)
    fired = [key for key in WARNINGS if any(r.get(key) for r in records)]
    suptitle = title + (f"  ({', '.join(f'{WARNING_COLORS[k]}: {k}' for k in fired)})" if fired else "")
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_runs(panels: dict[str, dict[str, str | os.PathLike]], path: str | os.PathLike, key: str = "val/success",
              ylabel: str = "validation success") -> Path:
    """One panel per entry of ``panels`` (title -> {label: metrics.jsonl path}), each drawing ``key`` of every run
    against the iteration: several runs side by side, e.g. the algorithms on one env."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.4), squeeze=False)
    for ax, (title, runs) in zip(axes[0], panels.items(), strict=True):
        for label, metrics_path in runs.items():
            points = [(r["step"], r[key]) for r in read_metrics(metrics_path) if r.get(key) is not None]
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", markersize=3, linewidth=1.3, label=label)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("iteration", fontsize=9)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
