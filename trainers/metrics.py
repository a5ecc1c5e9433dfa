"""Training metrics: the JSON-lines log, the Echo Trap warning rule, the curves plot and a success-gain interval.

Every record is one iteration: ``{"step": k, "<namespace>/<name>": value, ...}``. The keys are documented in one
table in docs/trainers.md (``reward/``, ``rollout/``, ``loss/``, ``critic/``, ``val/``, ``time/``, ``warn/``).
The loop computes values; nothing here touches a model.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentgym_bench.benchmark.stats import paired_difference

__all__ = ["EchoTrapRule", "MetricsLog", "plot_metrics", "plot_runs", "read_metrics", "success_gain"]


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
        if resume_step is None:
            self.path.write_text("")
        else:
            kept = [r for r in read_metrics(self.path) if r["step"] <= resume_step] if self.path.exists() else []
            self.path.write_text("".join(json.dumps(r) + "\n" for r in kept))

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


@dataclass(frozen=True)
class EchoTrapRule:
    """When to warn of the Echo Trap: the collapse signature of RAGEN (arXiv 2504.20073, §4.1).

    RAGEN observes that before a collapse the in-group reward std falls (every rollout of a prompt gets the same
    reward, so there is nothing left to learn from), the policy's entropy falls (it repeats one reasoning pattern),
    and the gradient norm spikes. Any one of these alone is normal: convergence lowers std and entropy; a spike can
    be noise. The rule asks for all three at once, each against the run's own history, smoothed over ``window``
    iterations (a trailing mean ``m_t`` over the last ``window`` values):

    1. reward std: ``m_t(std) <= std_drop * max_{s<=t} m_s(std)`` — below ``std_drop`` of its own peak;
    2. entropy: ``m_t(entropy) <= entropy_drop * max_{s<=t} m_s(entropy)``;
    3. gradient norm: the largest of the last ``window`` values ``>= grad_spike * median`` of all earlier values.

    It needs ``min_steps`` iterations of history before it can fire (the median and the peaks need a baseline).

    Attributes:
        window: iterations in the trailing mean and the spike search.
        std_drop: fraction of the peak reward std below which it counts as collapsed.
        entropy_drop: fraction of the peak entropy below which it counts as collapsed.
        grad_spike: multiple of the earlier median gradient norm that counts as a spike.
        min_steps: iterations needed before the rule can fire.
    """

    window: int = 5
    std_drop: float = 0.5
    entropy_drop: float = 0.6
    grad_spike: float = 3.0
    min_steps: int = 10

    def check(self, reward_std: Sequence[float], entropy: Sequence[float], grad_norm: Sequence[float]) -> bool:
        """Whether the signature holds at the last iteration of these aligned series (one value per iteration)."""
        n = len(reward_std)
        if not len(entropy) == len(grad_norm) == n:
            raise ValueError("reward_std, entropy and grad_norm must have one value per iteration each")
        if n < max(self.min_steps, self.window + 1):
            return False
        return (self._collapsed(reward_std, self.std_drop) and self._collapsed(entropy, self.entropy_drop)
                and self._spiked(grad_norm))

    def fired(self, reward_std: Sequence[float], entropy: Sequence[float], grad_norm: Sequence[float]) -> list[int]:
        """Indices of every iteration at which :meth:`check` holds on the series up to it."""
        return [t for t in range(len(reward_std))
                if self.check(reward_std[: t + 1], entropy[: t + 1], grad_norm[: t + 1])]

    def _collapsed(self, values: Sequence[float], fraction: float) -> bool:
        w = self.window
        means = [sum(values[i - w + 1 : i + 1]) / w for i in range(w - 1, len(values))]
        peak = max(means)
        return peak > 0 and means[-1] <= fraction * peak

    def _spiked(self, values: Sequence[float]) -> bool:
        median = statistics.median(values[: -self.window])
        return max(values[-self.window:]) >= self.grad_spike * median


def success_gain(successes_before: Sequence[bool], successes_after: Sequence[bool]) -> dict[str, float]:
    """The change in success between two evaluations on the same validation seeds (same order), paired:
    :func:`agentgym_bench.benchmark.stats.paired_difference` (paired bootstrap interval, McNemar's exact test), the
    one comparison the benchmark and the leaderboard use too. Pairing removes the seeds' own difficulty from the
    noise, so the interval is narrower than an unpaired one on the same episodes.

    Returns:
        ``before``, ``after``, ``gain`` (after - before), ``ci_low``, ``ci_high`` (95%), ``p_value``, ``n_before``,
        ``n_after``. The gain is "separated by its 95% confidence interval" when ``ci_low > 0``.
    """
    c = paired_difference(np.asarray(successes_before, dtype=float), np.asarray(successes_after, dtype=float))
    return {"before": c.mean_a, "after": c.mean_b, "gain": c.difference, "ci_low": c.low, "ci_high": c.high,
            "p_value": c.p_value, "n_before": c.n, "n_after": c.n}


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
]


def plot_metrics(records: Iterable[Mapping[str, Any]], path: str | os.PathLike, title: str = "") -> Path:
    """Draw the training curves (one panel per quantity) to a PNG; iterations where ``warn/echo_trap`` fired get a
    red line in every panel. Panels with no data say so instead of disappearing, so the layout is always the same.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = list(records)
    warnings = [r["step"] for r in records if r.get("warn/echo_trap")]
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
        for step in warnings:
            ax.axvline(step, color="red", alpha=0.3, linewidth=1)
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
    suptitle = title + ("  (red: Echo Trap warning)" if warnings else "")
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
