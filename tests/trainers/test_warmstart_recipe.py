"""The smoke recipe's warm start re-made bit for bit (issue 61): its two stages through the bundled configs
(``agentgym-bench warmstart warmstart-smoke-N model=... output=...``, what the main job runs now), through the old
flags this release keeps (the argv the main job ran before), and against what commit ae57946 made of the same stages
before the warm start became a config (``data/warmstart-smoke-ae57946.json``, ``data/README.md``).

Each stage plays its demonstrations, fine-tunes on two one-thread processes (the stage configs' ``processes: 2``),
evaluates and writes its model: about 20 s a stage on an idle core, so the module takes a couple of minutes.
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from agentgym_bench import run_folder
from agentgym_bench.cli import main

RECORDED = json.loads((Path(__file__).parent / "data" / "warmstart-smoke-ae57946.json").read_text())
OLD_FLAGS = (("--episodes", "40", "--epochs", "1", "--eval-episodes", "8"),
             ("--episodes", "20", "--epochs", "1", "--eval-episodes", "8"))
"""The smoke recipe's stages as ``agentgym_bench/commands/baselines.py`` held them before (its ``Recipe`` tuples)."""


@pytest.fixture(scope="module")
def stages(tmp_path_factory) -> dict[str, list[Path]]:
    """Both stages made both ways from one default model (``init-model``, as the main job builds it)."""
    root = tmp_path_factory.mktemp("recipe")
    assert main(["init-model", "--path", str(root / "default-model")]) == 0
    made: dict[str, list[Path]] = {"config": [], "flags": []}
    for stage, flags in enumerate(OLD_FLAGS, 1):
        for way in made:
            start = made[way][-1] if made[way] else root / "default-model"
            output = root / f"{way}-stage{stage}"
            argv = ([f"warmstart-smoke-{stage}", f"model={start}", f"output={output}"] if way == "config" else
                    ["--model", str(start), "--output", str(output), "--processes", "2", "--threads", "1", *flags])
            assert main(["warmstart", *argv]) == 0
            made[way].append(output)
    return made


def tensors(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(folder / "model.safetensors")


def without_times_and_paths(report: dict) -> dict:
    """A ``warmstart.json`` without its wall times and the folders it names (which differ between two runs)."""
    out = {k: v for k, v in report.items() if k != "seconds"}
    out["train"] = {k: v for k, v in report["train"].items() if k != "seconds"}
    out["config"] = {k: v for k, v in report["config"].items() if k not in ("model", "output")}
    if "started_from" in report:
        out["started_from"] = without_times_and_paths(report["started_from"])
    return out


def test_the_smoke_stages_from_their_configs_make_the_models_of_the_old_flags(stages):
    for new, old in zip(stages["config"], stages["flags"], strict=True):
        a, b = tensors(new), tensors(old)
        assert a.keys() == b.keys()
        assert all(torch.equal(a[name], b[name]) for name in a), new.name
        assert (new / run_folder.METRICS).read_text() == (old / run_folder.METRICS).read_text()
        reports = [json.loads((folder / "warmstart.json").read_text()) for folder in (new, old)]
        assert without_times_and_paths(reports[0]) == without_times_and_paths(reports[1])
        assert run_folder.read_config(new) == reports[0]["config"]  # the run folder's config.yaml is the report's
    second = json.loads((stages["config"][1] / "warmstart.json").read_text())
    assert second["started_from"]["config"]["episodes"] == 40 and second["config"]["episodes"] == 20  # two stages


def cpu_vendor() -> str:
    """The CPU's vendor as Linux reports it (``GenuineIntel``, ``AuthenticAMD``), else the machine type. At one torch
    CPU capability the two vendors' machines still take other matrix kernels: on an Intel AVX-512 machine the
    recording's first stage came out with the same demonstrations, losses and evaluation and other last bits."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("vendor_id"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def test_the_smoke_stages_make_what_the_warm_start_made_before_it_was_a_config(stages):
    """The demonstrations everywhere; the weights' bytes, the losses and the evaluation where torch, its CPU
    capability and the CPU's vendor are the recording's (elsewhere sums run in another order)."""
    for folder, recorded in zip(stages["config"], RECORDED["stages"], strict=True):
        assert json.loads((folder / "warmstart.json").read_text())["demonstrations"] == recorded["demonstrations"]
    where = RECORDED["where"]
    here = {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cpu_vendor": cpu_vendor()}
    if here != {k: where[k] for k in here}:
        pytest.skip(f"recorded with torch {where['torch']} on {where['cpu_capability']} kernels of an "
                    f"{where['cpu_vendor']} CPU, here {here}: another build or CPU sums in another order")
    for folder, recorded in zip(stages["config"], RECORDED["stages"], strict=True):
        weights = tensors(folder)
        assert {name: hashlib.sha256(t.contiguous().numpy().tobytes()).hexdigest()
                for name, t in sorted(weights.items())} == recorded["tensors"], folder.name
        report = json.loads((folder / "warmstart.json").read_text())
        assert {k: report["train"][k] for k in recorded["train"]} == recorded["train"]
        assert report["evaluation"] == recorded["evaluation"]
        losses = [r["loss/sft"] for r in map(json.loads, (folder / run_folder.METRICS).read_text().splitlines())
                  if "loss/sft" in r]
        assert len(losses) == recorded["train"]["steps"] and losses[0] == recorded["train"]["first_loss"]
        assert sum(losses[-20:]) / len(losses[-20:]) == recorded["train"]["final_loss"]
