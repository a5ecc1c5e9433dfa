"""``agentgym-bench eval`` keeps finished work safe: a ``.partial`` file is checked (settings, seeds, replay) before a
run resumes from it, and a finished results file at ``--out`` is not replaced without ``--overwrite``. Real envs and
the model-free ``random`` policy, so every run takes well under a second."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from agentgym_bench.benchmark.results import Results, read_results, write_results
from agentgym_bench.cli import main
from tests.benchmark.test_matches import ma_suite_data
from tests.commands.test_eval import SUITE

RUN = ["eval", "--policy", "random", "--suite", "suite.json", "--out", "r.json.gz"]


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> Path:
    """A folder with the tiny suite and a finished run of ``random`` on it (``full.json.gz``)."""
    folder = tmp_path_factory.mktemp("played")
    (folder / "suite.json").write_text(json.dumps(SUITE))
    assert main([*RUN[:-1], str(folder / "full.json.gz"), "--suite", str(folder / "suite.json")]) == 0
    return folder


@pytest.fixture
def work(tmp_path, played, monkeypatch, capsys) -> Path:
    """A working folder holding the suite and ``full.json.gz``; output so far is dropped."""
    for name in ("suite.json", "full.json.gz"):
        shutil.copy(played / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    return tmp_path


def error_line(argv: list[str], capsys) -> str:
    """The one ``agentgym-bench: error:`` line of a command that exits with status 2."""
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("agentgym-bench: error:")]
    assert code == 2 and len(lines) == 1 and len(err.strip().splitlines()) == 1, err
    return lines[0]


def kept(work: Path, entries: int = 1) -> Results:
    """The first ``entries`` entries of the finished run, as the partial file of a run stopped after them."""
    full = read_results(work / "full.json.gz")
    return replace(full, entries=full.entries[:entries])


def test_a_genuine_partial_file_resumes(work, capsys):
    partial = kept(work)
    write_results(partial, work / "r.json.gz.partial")
    assert main(RUN) == 0
    assert "resuming from r.json.gz.partial: bandit kept" in capsys.readouterr().out
    results = read_results(work / "r.json.gz")
    assert results.entries == read_results(work / "full.json.gz").entries  # bandit as kept, sokoban played again
    assert not (work / "r.json.gz.partial").exists()


def flip_a_failure(results: Results) -> Results:
    episode = next(ep for e in results.entries for ep in e.episodes if not ep.success)
    episode.success = True
    return results


def drop_half(results: Results) -> Results:
    results.entries[0].episodes = results.entries[0].episodes[:2]
    return results


def replace_a_seed(results: Results) -> Results:
    results.entries[0].episodes[1].seed = 7
    return results


@pytest.mark.parametrize(("doctor", "why"), [
    (drop_half, "entry bandit: the seeds must be exactly 1000000000..1000000003, one episode each; duplicated [], "
                "missing [1000000002, 1000000003] (2), foreign []"),
    (flip_a_failure, "success is False on replay, the file records True"),
    (replace_a_seed, "missing [1000000001] (1), foreign [7] (1)"),
    (None, "it is damaged (results file is not valid gzip"),
])
def test_a_doctored_partial_file_is_refused_in_one_line_saying_how_to_start_again(work, capsys, doctor, why):
    path = work / "r.json.gz.partial"
    if doctor is None:
        path.write_bytes(b"\x1f\x8b\x08garbage bytes")
    else:
        write_results(doctor(kept(work, 2)), path)
    before = path.read_bytes()
    line = error_line(RUN, capsys)
    assert line.startswith("agentgym-bench: error: r.json.gz.partial cannot be resumed, it is damaged"), line
    assert why in line and line.endswith(": delete it to start again: rm r.json.gz.partial"), line
    assert not (work / "r.json.gz").exists() and path.read_bytes() == before  # nothing written, nothing lost


def test_a_partial_file_of_other_settings_names_each_setting_with_both_values(work, capsys):
    write_results(kept(work), work / "r.json.gz.partial")
    line = error_line([*RUN, "--history", "1", "--prompt", "ragen"], capsys)
    assert ("r.json.gz.partial holds finished entries of a run with other settings (--history: the file has full, "
            "this run 1; --prompt of entry bandit: the file has 'compact', this run 'ragen'): run with the same "
            "settings to resume it, or delete it to start again: rm r.json.gz.partial (or give another --out)") in line
    line = error_line([*RUN, "--seed", "3", "--temperature", "0.5"], capsys)  # the random policy reads no temperature
    assert "(--seed: the file has 0, this run 3)" in line
    assert "policy, model or sampling" not in line
    line = error_line([*RUN, "--episodes", "2"], capsys)
    assert "(--episodes/--entries: the file has none (the whole suite), this run --episodes 2)" in line


def test_a_two_player_partial_file_is_replayed_too(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("suite.json").write_text(json.dumps(ma_suite_data(2)))
    assert main([*RUN[:-1], "full.json.gz"]) == 0
    full = read_results("full.json.gz")
    write_results(replace(full, entries=full.entries[:2]), "r.json.gz.partial")
    capsys.readouterr()
    assert main(RUN) == 0
    assert "resuming from r.json.gz.partial: " in capsys.readouterr().out
    assert read_results("r.json.gz").entries == full.entries

    doctored = replace(full, entries=full.entries[:2])
    doctored.entries[1].episodes[0].return_ += 1.0
    write_results(doctored, "s.json.gz.partial")
    line = error_line([*RUN[:-1], "s.json.gz"], capsys)
    assert "s.json.gz.partial cannot be resumed, it is damaged or was edited" in line and "on replay" in line
    assert line.endswith("rm s.json.gz.partial") and not Path("s.json.gz").exists()


def test_a_finished_results_file_is_replaced_only_with_overwrite(work, capsys):
    before = (work / "full.json.gz").read_bytes()
    quick = [*RUN[:-1], "full.json.gz", "--episodes", "1"]
    line = error_line(quick, capsys)
    assert line == ("agentgym-bench: error: full.json.gz already exists: give another --out, or add --overwrite to "
                    "replace it (it is replaced when the new run finishes)")
    assert (work / "full.json.gz").read_bytes() == before
    assert main([*quick, "--overwrite"]) == 0
    assert [len(e.episodes) for e in read_results(work / "full.json.gz").entries] == [1, 1]
    capsys.readouterr()
    assert error_line([*RUN[:-1], "."], capsys).endswith("--out . is a folder: give a file name, e.g. --out "
                                                         "results.json.gz")


def test_a_missing_out_folder_is_made_with_a_note(work, capsys):
    assert main([*RUN[:-1], "runs/mine/r.json.gz", "--episodes", "1"]) == 0
    assert "made the folder runs/mine for --out runs/mine/r.json.gz" in capsys.readouterr().out.splitlines()[0]
    assert (work / "runs/mine/r.json.gz").is_file()
