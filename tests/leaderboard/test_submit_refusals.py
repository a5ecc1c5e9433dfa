"""``agentgym-bench submit``'s refusals a board's maintainer meets, each in seconds and with the board untouched: a
file of another suite on a board (named as such, not as a taken name), a path inside a board, an edited suite
(the field named), a damaged file (named); and the note when a submission starts a new board."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

from agentgym_bench.cli import main
from tests.leaderboard.conftest import tree_digest


def board_with_oracle(tmp_path: Path, oracle_bytes: bytes, suite_file: Path, capsys) -> Path:
    board, results = tmp_path / "board", tmp_path / "oracle.json.gz"
    results.write_bytes(oracle_bytes)
    assert main(["submit", str(results), "--name", "oracle", "--board", str(board), "--suite", str(suite_file)]) == 0
    assert f"no board in {board} yet: this submission starts one, for suite" in capsys.readouterr().out
    return board


def test_a_file_of_another_suite_is_refused_as_such_before_any_replay(tmp_path, oracle_bytes, suite_file, capsys):
    board = board_with_oracle(tmp_path, oracle_bytes, suite_file, capsys)
    other = tmp_path / "other.json.gz"
    data = json.loads(gzip.decompress(oracle_bytes))
    data["suite"]["name"] = "another-suite"
    other.write_bytes(gzip.compress(json.dumps(data).encode()))
    before, started = tree_digest(board), time.perf_counter()
    assert main(["submit", str(other), "--name", "oracle", "--board", str(board)]) == 2  # the name is taken, too
    err = capsys.readouterr().err
    assert "holds results of suite 'another-suite'; the board" in err and "is taken" not in err
    assert time.perf_counter() - started < 30 and tree_digest(board) == before


def test_a_board_folder_inside_a_board_is_refused(tmp_path, oracle_bytes, suite_file, capsys):
    board = board_with_oracle(tmp_path, oracle_bytes, suite_file, capsys)
    before = tree_digest(board)
    assert main(["submit", str(tmp_path / "oracle.json.gz"), "--name", "again", "--board", str(board / "submissions"),
                 "--suite", str(suite_file)]) == 2
    assert f"lies inside the board {board.resolve()}" in capsys.readouterr().err and tree_digest(board) == before


def test_an_edited_suite_file_names_the_field_that_differs(tmp_path, oracle_bytes, suite_file, capsys):
    board = board_with_oracle(tmp_path, oracle_bytes, suite_file, capsys)
    edited = tmp_path / "edited-suite.json"
    data = json.loads(suite_file.read_text())
    data["description"] = "edited by hand"
    edited.write_text(json.dumps(data))
    assert main(["submit", str(tmp_path / "oracle.json.gz"), "--name", "oracle", "--replace", "--board", str(board),
                 "--suite", str(edited)]) == 2
    assert "the results' suite differs in description" in capsys.readouterr().err


def test_a_damaged_file_among_several_is_named(tmp_path, oracle_bytes, suite_file, capsys):
    good, bad = tmp_path / "good.json.gz", tmp_path / "bad.json.gz"
    good.write_bytes(oracle_bytes)
    bad.write_bytes(oracle_bytes[: len(oracle_bytes) // 2])
    assert main(["compare-results", "--suite", str(suite_file), str(good), str(bad)]) == 2
    assert f"{bad}: results file is not valid gzip" in capsys.readouterr().err


def test_without_board_the_default_board_s_refusals_come_before_any_replay(tmp_path, oracle_bytes, suite_file, suite,
                                                                           capsys, monkeypatch):
    """``--board`` left out: the board is ``leaderboards/<the file's suite>`` here, and a taken name is refused in
    seconds (it came after re-generating every reply, 96 s on the published model's file)."""
    board = tmp_path / "leaderboards" / suite.name
    results = tmp_path / "oracle.json.gz"
    results.write_bytes(oracle_bytes)
    assert main(["submit", str(results), "--name", "oracle", "--board", str(board), "--suite", str(suite_file)]) == 0
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["submit", str(results), "--name", "Oracle", "--no-regenerate"]) == 2
    captured = capsys.readouterr()
    assert "the name 'Oracle' is taken on this board" in captured.err and "replayed" not in captured.out


def test_a_suite_file_whose_ceiling_is_not_the_oracle_s_cannot_start_a_board(tmp_path, oracle_bytes, suite_file,
                                                                             capsys):
    """Every score on a board is divided by its entries' ``oracle_success``: stated low, the oracle scored 1.271."""
    wrong = tmp_path / "wrong-ceiling.json"
    data = json.loads(suite_file.read_text())
    entry = next(e for e in data["entries"] if e.get("oracle_success") not in (None, 0))
    entry["oracle_success"] = round(entry["oracle_success"] * 0.6, 6)
    wrong.write_text(json.dumps(data))
    results = tmp_path / "oracle.json.gz"
    results.write_bytes(oracle_bytes)
    assert main(["submit", str(results), "--name", "oracle", "--board", str(tmp_path / "board"), "--suite",
                 str(wrong)]) == 2
    assert f"{entry['name']}: stated {entry['oracle_success']}, the oracle's is" in capsys.readouterr().err
    assert not (tmp_path / "board").exists()


def test_a_plain_json_file_is_refused_before_anything_is_stored(tmp_path, oracle_bytes, suite_file, capsys):
    """A board stores a file byte for byte under ``<slug>.json.gz``: plain JSON stored so was not gzip."""
    plain = tmp_path / "plain.json"
    plain.write_bytes(gzip.decompress(oracle_bytes))
    assert main(["submit", str(plain), "--name", "plain", "--board", str(tmp_path / "board"), "--suite",
                 str(suite_file)]) == 2
    assert "is not gzip-compressed" in capsys.readouterr().err and not (tmp_path / "board").exists()


def test_results_of_a_validation_suite_are_refused_as_such(tmp_path, oracle_bytes, suite_file, capsys):
    """A board ranks one read of a held-out test suite; a file of a validation suite (tuning) is refused in seconds,
    whatever board it names."""
    data = json.loads(suite_file.read_text())
    validation = tmp_path / "validation-suite.json"
    validation.write_text(json.dumps({**data, "split": "validation"}))
    started = time.perf_counter()
    assert main(["submit", str(tmp_path / "none.json.gz"), "--name", "x", "--board", str(tmp_path / "board"),
                 "--suite", str(validation)]) == 2
    assert "holds results of a validation suite: tune and choose on it" in capsys.readouterr().err
    assert time.perf_counter() - started < 30 and not (tmp_path / "board").exists()


def test_a_board_path_that_is_a_file_is_refused_before_any_replay(tmp_path, oracle_bytes, suite_file, capsys):
    (tmp_path / "oracle.json.gz").write_bytes(oracle_bytes)
    (tmp_path / "afile").write_text("not a board")
    for check in (["--check"], []):
        assert main(["submit", str(tmp_path / "oracle.json.gz"), "--name", "a", "--board", str(tmp_path / "afile"),
                     "--suite", str(suite_file), *check]) == 2
        assert "is a file: give a board's folder" in capsys.readouterr().err
    assert (tmp_path / "afile").read_text() == "not a board"
