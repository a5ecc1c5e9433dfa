"""scripts/rl_study.py, the multi-seed study of the RL recipes: its report's statistics against the board's own
pairwise comparison, on the committed v2 submissions (real results files of the test suite), and the report
command end to end on a folder laid out as ``run`` leaves it."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUBMISSIONS = ROOT / "leaderboards" / "agentgym-v2" / "submissions"


@pytest.fixture(scope="module")
def rl_study():
    spec = importlib.util.spec_from_file_location("rl_study", ROOT / "scripts" / "rl_study.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def files():
    from agentgym_bench.leaderboard.verify import read_checked

    names = ("default-model-sft", "default-model-sft-starpo", "default-model-sft-starpo-s", "default-model-sft-gigpo")
    loaded = {n: read_checked(str(SUBMISSIONS / f"{n}.json.gz"), None) for n in names}
    return loaded[names[0]][1], {n: results for n, (results, _) in loaded.items()}


@pytest.fixture(scope="module")
def outcomes(rl_study, files):
    """Each submission's per-episode outcomes, what :func:`compare_seeds` pairs."""
    suite, loaded = files
    return {n: rl_study.outcomes(results, suite) for n, results in loaded.items()}


def test_one_seed_is_the_boards_pairwise_comparison(rl_study, files, outcomes):
    from agentgym_bench.leaderboard.render import compare

    suite, loaded = files
    got = rl_study.compare_seeds(suite, [outcomes["default-model-sft"]], [outcomes["default-model-sft-starpo"]])
    want = compare(suite, loaded["default-model-sft"], loaded["default-model-sft-starpo"])
    assert got["score"]["difference"] == pytest.approx(want["suite"]["difference"])
    assert (got["score"]["episodes_low"], got["score"]["episodes_high"]) == pytest.approx(
        (want["suite"]["low"], want["suite"]["high"]))
    for name, entry in want["entries"].items():
        assert got[name]["difference"] == pytest.approx(entry["difference"])
    assert "seeds_low" not in got["score"]  # one seed has no interval over seeds


def test_three_seeds_average_and_spread(rl_study, files, outcomes):
    suite, _ = files
    base = outcomes["default-model-sft"]
    others = [outcomes[n] for n in ("default-model-sft-starpo", "default-model-sft-starpo-s",
                                    "default-model-sft-gigpo")]
    got = rl_study.compare_seeds(suite, [base], others)
    singles = [rl_study.compare_seeds(suite, [base], [o])["score"]["difference"] for o in others]
    assert got["score"]["per_seed"] == pytest.approx(singles)
    assert got["score"]["difference"] == pytest.approx(sum(singles) / 3)
    assert got["score"]["seeds_low"] < got["score"]["difference"] < got["score"]["seeds_high"]
    same = rl_study.compare_seeds(suite, others, others)  # each seed against itself: all zero
    assert same["score"]["difference"] == 0 and same["score"]["seeds_low"] == same["score"]["seeds_high"] == 0


def test_report_reads_the_folder_run_leaves(tmp_path):
    val = tmp_path / "val"
    val.mkdir()
    for seed, name in enumerate(("default-model-sft-starpo", "default-model-sft-gigpo")):
        shutil.copy(SUBMISSIONS / f"{name}.json.gz", val / f"recipe-s{seed}.json.gz")
        shutil.copy(SUBMISSIONS / "default-model-sft.json.gz", val / f"control-s{seed}.json.gz")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "rl_study.py"), "report", "--recipes", "recipe",
                           "control", "missing", "--seeds", "0", "1", "--out", str(tmp_path), "--reference",
                           str(SUBMISSIONS / "default-model-sft.json.gz"), "--pair", "control", "recipe"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "recipe (seeds 0, 1) - default-model-sft.json.gz" in done.stdout
    assert "recipe - control, seed by seed" in done.stdout
    assert "missing: not evaluated yet" in done.stdout
    assert "| score |" in done.stdout
    # a pair's recipes are read even when --recipes does not list them; a pair not evaluated says so
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "rl_study.py"), "report", "--recipes", "recipe",
                           "--seeds", "0", "1", "--out", str(tmp_path), "--reference",
                           str(SUBMISSIONS / "default-model-sft.json.gz"), "--pair", "control", "recipe",
                           "--pair", "control", "missing"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "recipe - control, seed by seed" in done.stdout and "control (seeds" not in done.stdout
    assert "missing - control: not both evaluated" in done.stdout


def test_report_pairs_a_recipe_with_a_control_from_another_studys_folder(tmp_path):
    """``--also``: the control's files in an earlier study's folder, the candidate's in ``--out``; a recipe in
    both is read from ``--out``."""
    new, old = tmp_path / "new", tmp_path / "old"
    for folder in (new / "val", old / "val"):
        folder.mkdir(parents=True)
    shutil.copy(SUBMISSIONS / "default-model-sft-gigpo.json.gz", new / "val" / "candidate-s0.json.gz")
    shutil.copy(SUBMISSIONS / "default-model-sft-starpo.json.gz", old / "val" / "control-s0.json.gz")
    shutil.copy(SUBMISSIONS / "default-model-sft.json.gz", old / "val" / "candidate-s0.json.gz")
    command = [sys.executable, str(ROOT / "scripts" / "rl_study.py"), "report", "--recipes", "candidate", "control",
               "--seeds", "0", "--out", str(new), "--reference", str(SUBMISSIONS / "default-model-sft.json.gz"),
               "--pair", "control", "candidate"]
    alone = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert alone.returncode == 0, alone.stderr
    assert f"control: not evaluated yet: {new / 'val' / 'control-s0.json.gz'}" in alone.stdout
    done = subprocess.run([*command, "--also", str(old)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "candidate - control, seed by seed" in done.stdout
    candidate = done.stdout.split("candidate (seeds 0)")[1].split("\n\n")[0]
    assert "| score | +0.000" not in candidate  # GiGPO's file from --out, not the start's copy in the other folder


def test_report_plots_each_recipes_differences(rl_study, files, outcomes, tmp_path):
    """``--plot``'s drawing: a PNG with one panel per entry that moved, the score first, zero entries left out."""
    import matplotlib.image

    suite, _ = files
    base = outcomes["default-model-sft"]
    comparisons = {"a": rl_study.compare_seeds(suite, [base], [outcomes["default-model-sft-starpo"]]),
                   "b": rl_study.compare_seeds(suite, [base], [outcomes["default-model-sft-gigpo"]])}
    path = tmp_path / "plot.png"
    drawn = rl_study.plot_comparisons(path, "title", comparisons)
    moved = [n for n, r in comparisons["a"].items() if any(r["per_seed"]) or any(comparisons["b"][n]["per_seed"])]
    assert drawn == moved and drawn[0] == "score"
    assert "webshop" not in drawn and "sokoban-8x8-2box" in drawn  # neither model plays WebShop: no panel for it
    height, width = matplotlib.image.imread(path).shape[:2]  # a PNG that reads back, panels side by side
    assert width > 2 * height


def test_the_test_suite_is_read_once_and_only_for_finished_runs(tmp_path):
    """``test`` never re-reads a model whose test file exists, refuses a run without its summary (unfinished), and
    ``report --split test`` reads the files it writes."""
    (tmp_path / "unfinished-s0").mkdir()
    (tmp_path / "test").mkdir()
    shutil.copy(SUBMISSIONS / "default-model-sft-gigpo.json.gz", tmp_path / "test" / "read-s0.json.gz")
    before = (tmp_path / "test" / "read-s0.json.gz").read_bytes()
    script = [sys.executable, str(ROOT / "scripts" / "rl_study.py")]
    done = subprocess.run(script + ["test", "--recipes", "read", "unfinished", "--seeds", "0", "--out",
                                    str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1
    assert "read-s0: the test suite was read already" in done.stdout
    assert "unfinished-s0: not trained to the end yet" in done.stdout
    assert (tmp_path / "test" / "read-s0.json.gz").read_bytes() == before
    assert not (tmp_path / "test" / "unfinished-s0.json.gz").exists()
    done = subprocess.run(script + ["report", "--split", "test", "--recipes", "read", "--seeds", "0", "--out",
                                    str(tmp_path), "--reference", str(SUBMISSIONS / "default-model-sft.json.gz")],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "read (seeds 0) - default-model-sft.json.gz" in done.stdout


def test_run_continues_a_killed_run_from_its_last_checkpoint(rl_study, tmp_path):
    """A study killed mid-run is run again with the same command: each run folder that holds a checkpoint continues
    from it (before, the trainer refused a fresh start into it, and the study lost those seeds)."""
    import json

    from tests.trainers.conftest import build_tiny_model, tiny_config_dict
    from trainers.rl.config import config_from_dict

    model, folder = build_tiny_model(tmp_path / "model"), tmp_path / "recipe-s1"
    recipe = tmp_path / "recipe.yaml"
    config_from_dict(tiny_config_dict(model, folder, "starpo", max_steps=4, eval_steps=4)).save(recipe)
    command = rl_study.train_command(str(recipe), 1, str(model), folder, [])
    subprocess.run(command + ["max_steps=2", "save_steps=2"], check=True, capture_output=True)  # the "killed" run
    assert (folder / "checkpoint-2").is_dir() and not (folder / "checkpoint-4").exists()
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    steps = [json.loads(line)["step"] for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert steps[-1] == 4 and steps.count(3) == 1, steps  # steps 3 and 4 trained once, after the checkpoint


def test_a_run_is_named_by_its_recipe_and_seed_keeping_dots(rl_study):
    # a recipe with a dot in its name (a temperature, a learning rate) once lost the part after it
    assert rl_study.run_name("pilot-gigpo-t1.3", 0) == "pilot-gigpo-t1.3-s0"
    assert rl_study.run_name("trainers/configs/pilot-gigpo-t1.3.yaml", 2) == "pilot-gigpo-t1.3-s2"
    assert rl_study.run_name("baseline-gigpo", 1) == "baseline-gigpo-s1"


def test_curves_average_the_seeds_where_all_logged(rl_study, tmp_path):
    """``curves``: per validation key the mean, minimum and maximum over the seeds at the iterations every seed
    logged, ``val/success`` first; end to end it prints them, names a recipe without runs and draws the PNG."""
    import json

    def write(seed, rows):
        folder = tmp_path / f"recipe-s{seed}"
        folder.mkdir()
        lines = [json.dumps(r) for r in rows] + ['{"step": 30, "val/succ']  # a killed run's torn last line
        (folder / "metrics.jsonl").write_text("\n".join(lines))

    env = "val/AgentSokoban-v0/success"
    write(0, [{"step": 0, "val/success": 0.5, env: 0.2}, {"step": 1, "loss/policy": 0.1},
              {"step": 10, "val/success": 0.7, env: 0.4}, {"step": 20, "val/success": 0.9}])
    write(1, [{"step": 0, "val/success": 0.3, env: 0.2}, {"step": 10, "val/success": 0.5, env: 0.6}])
    from agentgym_bench.benchmark.provenance import training_curves

    got = rl_study.seed_means([training_curves(tmp_path / f"recipe-s{s}" / "metrics.jsonl") for s in (0, 1)])
    assert list(got) == ["val/success", env]
    steps, mean, low, high = got["val/success"]
    assert steps == [0, 10] and mean == pytest.approx([0.4, 0.6]) and low == [0.3, 0.5] and high == [0.5, 0.7]
    assert got[env][1] == pytest.approx([0.2, 0.5])
    plot = tmp_path / "curves.png"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "rl_study.py"), "curves", "--recipes", "recipe",
                           "absent", "--seeds", "0", "1", "--out", str(tmp_path), "--plot", str(plot)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "all envs: 0: 0.400, 10: 0.600" in done.stdout and "AgentSokoban-v0: 0: 0.200, 10: 0.500" in done.stdout
    assert "absent: no metrics yet" in done.stdout
    assert plot.stat().st_size > 0


def test_curves_keep_a_recipes_colour_on_every_panel(rl_study, tmp_path, monkeypatch):
    """A recipe without a key (StarPO's validation lacks Sokoban 8x8/2) once shifted the next recipe onto its
    colour in that panel, so one line read as the other recipe."""
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    line = ([0, 10], [0.1, 0.2], [0.1, 0.2], [0.1, 0.2])
    rl_study.plot_curves(tmp_path / "c.png", {"a": {"val/success": line},
                                              "b": {"val/success": line, "val/AgentSokobanLarge-v0/success": line}})
    both, only_b = figures[0].axes
    colour = {ln.get_label(): ln.get_color() for ln in both.lines}
    assert colour["a"] != colour["b"]
    assert [(ln.get_label(), ln.get_color()) for ln in only_b.lines] == [("b", colour["b"])]


def test_a_kept_study_reads_as_the_folder_it_was_kept_from(tmp_path):
    """``keep``: the study's test files and the reference's outcomes, and each run's curves, in one small file; with
    the study's folder gone, ``report`` (the kept file as ``--also`` and as ``--reference``) prints what it printed
    from the folder, and ``curves`` too. A second ``keep`` adds runs; a kept file on another split, another
    reference or a name that is not a kept study's is refused, naming the file."""
    import json

    study, kept = tmp_path / "study", tmp_path / "lab" / "study-test.outcomes.json.gz"
    (study / "test").mkdir(parents=True)
    reference = str(SUBMISSIONS / "default-model-sft.json.gz")
    for seed, name in enumerate(("default-model-sft-starpo", "default-model-sft-gigpo")):
        shutil.copy(SUBMISSIONS / f"{name}.json.gz", study / "test" / f"recipe-s{seed}.json.gz")
        (study / f"recipe-s{seed}").mkdir()
        rows = [{"step": step, "val/success": 0.1 * seed + step / 1000} for step in range(0, 301, 10)]
        (study / f"recipe-s{seed}" / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    shutil.copy(SUBMISSIONS / "default-model-sft-starpo-s.json.gz", study / "test" / "other-s0.json.gz")
    script = [sys.executable, str(ROOT / "scripts" / "rl_study.py")]

    def run(*args):
        return subprocess.run([*script, *args], capture_output=True, text=True, cwd=ROOT)

    keep = ["keep", "--split", "test", "--out", str(study), "--reference", reference, "--to", str(kept)]
    done = run(*keep, "--recipes", "recipe", "--seeds", "0", "1")
    assert done.returncode == 0, done.stderr
    assert "kept 2 run(s) (recipe-s0, recipe-s1)" in done.stdout
    report = ["report", "--split", "test", "--recipes", "recipe", "--seeds", "0", "1"]
    from_folder = run(*report, "--out", str(study), "--reference", reference)
    assert from_folder.returncode == 0, from_folder.stderr
    curves_folder = run("curves", "--recipes", "recipe", "--seeds", "0", "1", "--out", str(study))
    shutil.rmtree(study)  # the machine is gone; the kept file is what is left
    from_kept = run(*report, "--out", str(study), "--also", str(kept), "--reference", str(kept))
    assert from_kept.returncode == 0, from_kept.stderr
    assert from_kept.stdout.replace(kept.name, "default-model-sft.json.gz") == from_folder.stdout
    curves_kept = run("curves", "--recipes", "recipe", "--seeds", "0", "1", "--out", str(study), "--also", str(kept))
    assert curves_kept.returncode == 0 and curves_kept.stdout == curves_folder.stdout
    assert "all envs: 0: 0.050" in curves_kept.stdout

    (study / "test").mkdir(parents=True)  # later runs join the kept file
    shutil.copy(SUBMISSIONS / "default-model-sft-starpo-s.json.gz", study / "test" / "other-s0.json.gz")
    done = run(*keep, "--recipes", "other", "--seeds", "0")
    assert done.returncode == 0 and "3 run(s) in all" in done.stdout
    pair = run(*report, "--out", str(study), "--also", str(kept), "--reference", reference, "--seeds", "0",
               "--pair", "other", "recipe")
    assert pair.returncode == 0 and "recipe - other, seed by seed" in pair.stdout

    refused = run("report", "--split", "val", "--recipes", "recipe", "--seeds", "0", "--out", str(study),
                  "--reference", str(kept))
    assert refused.returncode == 2 and f"{kept} keeps agentgym-v2's files (split test)" in refused.stderr
    other_reference = run(*keep[:-4], "--reference", str(SUBMISSIONS / "default-model-sft-gigpo.json.gz"),
                          "--to", str(kept), "--recipes", "other", "--seeds", "0")
    assert other_reference.returncode == 2 and "against another reference" in other_reference.stderr
    wrong_name = run(*keep[:-2], "--to", str(tmp_path / "kept.json"), "--recipes", "other", "--seeds", "0")
    assert wrong_name.returncode == 2 and "ends in .outcomes.json.gz" in wrong_name.stderr
    forged = tmp_path / "forged.outcomes.json.gz"
    forged.write_bytes(b"not gzip")
    bad = run(*report, "--out", str(study), "--reference", str(forged))
    assert bad.returncode == 2 and f"{forged}: not a kept study" in bad.stderr


def test_status_says_where_each_run_stands(tmp_path):
    """``status``: a run in training by its iteration, rate and time left, one evaluated, one read on test, one not
    started."""
    import json

    (tmp_path / "recipe-s0").mkdir()
    (tmp_path / "recipe-s0" / "config.yaml").write_text("max_steps: 100\n")
    rows = [{"step": s, "time/total": 6.0 * s} for s in range(0, 41)]  # 10 iterations a minute
    (tmp_path / "recipe-s0" / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    for split, seed in (("val", 1), ("test", 2)):
        (tmp_path / split).mkdir()
        shutil.copy(SUBMISSIONS / "default-model-sft.json.gz", tmp_path / split / f"recipe-s{seed}.json.gz")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "rl_study.py"), "status", "--recipes", "recipe",
                           "--seeds", "0", "1", "2", "3", "--out", str(tmp_path)], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "recipe-s0: iteration 40/100, 10.0 it/min, ~6 min left",
        f"recipe-s1: evaluated on validation ({tmp_path / 'val' / 'recipe-s1.json.gz'})",
        f"recipe-s2: the test suite read ({tmp_path / 'test' / 'recipe-s2.json.gz'})",
        "recipe-s3: not started"]


def test_a_kept_file_that_lacks_its_fields_is_refused_by_name(rl_study, tmp_path):
    import gzip
    import json

    from agentgym_bench.errors import UserError

    path = tmp_path / "bare.outcomes.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"kind": rl_study.KEPT, "suite": "agentgym-v2"}, f)
    with pytest.raises(UserError, match="bare.outcomes.json.gz: a kept study without its fields"):
        rl_study.read_kept(path)
    kept = {"kind": rl_study.KEPT, "suite": "agentgym-v2", "split": "test", "curves": {}, "runs": {},
            "episodes": {e.name: e.episodes for e in rl_study.load_suite("agentgym-v2").entries}}
    kept["reference"] = {"outcomes": {n: [1] * (k - 1) for n, k in kept["episodes"].items()}}  # one episode short
    with gzip.open(path, "wt") as f:
        json.dump(kept, f)
    with pytest.raises(UserError, match="do not match the suite's episode counts"):
        rl_study.read_kept(path)


def test_a_run_of_the_same_name_made_by_another_command_is_refused(rl_study, tmp_path):
    """Two recipe files of one name (or other overrides) give one run name: the second command is refused rather
    than skipping to, or resuming, the first one's run (whose results report would then read as its own)."""
    first, second = tmp_path / "a" / "sfl.yaml", tmp_path / "b" / "sfl.yaml"
    for path, rate in ((first, "1e-4"), (second, "5e-5")):
        path.parent.mkdir()
        path.write_text(f"base: starpo_s-frozenlake\nlearning_rate: {rate}\n")
    out = tmp_path / "study"
    rl_study.check_made_by(out, "sfl-s0", rl_study.made_by(str(first), "start", ["max_steps=4"]))
    rl_study.check_made_by(out, "sfl-s0", rl_study.made_by(str(first), "start", ["max_steps=4"]))  # the same: fine
    for made in (rl_study.made_by(str(second), "start", ["max_steps=4"]),
                 rl_study.made_by(str(first), "start", ["max_steps=8"])):
        with pytest.raises(rl_study.UserError, match="sfl-s0 in .* was made by another command .*its own --out"):
            rl_study.check_made_by(out, "sfl-s0", made)
    log = tmp_path / "x.log"
    log.write_text("note: ...\nagentgym-bench train: error: no model folder at runs/nope\n\n")
    assert rl_study.failure_line(log) == "agentgym-bench train: error: no model folder at runs/nope"
