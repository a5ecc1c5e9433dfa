"""A board write stopped part way is put back as it was: a ``submit --replace`` killed (``os._exit``, as SIGKILL
leaves it) between two of its renames, a write interrupted in-process (KeyboardInterrupt), and a recovery itself
killed part way. Before the journal, a replaced results file beside the old ``board.json`` made every later command
refuse the board ("does not match the SHA-256")."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentgym_bench.cli import main
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard import board as boards
from agentgym_bench.leaderboard.folder import locked, recover
from tests.leaderboard.conftest import tree_digest
from tests.leaderboard.test_board import board, cli_submit  # noqa: F401 - the board fixture

ROOT = Path(__file__).resolve().parents[2]
RENAMES = 6  # a submit --replace onto a one-entry board: its file, its transcripts, 3 rendered files, board.json
DIE_AFTER = """
import os, sys
real, done = os.replace, [0]
def replace(src, dst, *args, **kwargs):
    if '.staging-' in str(src) and '.staging-' not in str(dst) or {recovery} and '.staging-' in str(dst):
        if done[0] == {after}:
            os._exit(9)
        done[0] += 1
    return real(src, dst, *args, **kwargs)
os.replace = replace
import shutil
real_rmtree = shutil.rmtree
def rmtree(path, *args, **kwargs):
    if '.staging-' in str(path) and not {recovery}:
        os._exit(9)
    return real_rmtree(path, *args, **kwargs)
shutil.rmtree = rmtree
"""


def run_and_die(after: int, code: str, *, recovery: bool = False) -> None:
    """Run ``code`` in a child that dies (``os._exit(9)``) after ``after`` renames of a board write, or as it removes
    the staging folder (with ``recovery``: after ``after`` of a recovery's renames back into the staging folder)."""
    script = textwrap.dedent(DIE_AFTER.format(after=after, recovery=recovery)) + textwrap.dedent(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 9, proc.stdout + proc.stderr


def replace_killed_after(after: int, folder: Path, path: Path, suite_file: Path) -> None:
    run_and_die(after, f"""
        from agentgym_bench.cli import main
        main(["submit", {str(path)!r}, "--name", "oracle", "--board", {str(folder)!r}, "--suite", {str(suite_file)!r},
              "--replace"])
    """)


@pytest.mark.parametrize("after", [1, 2, RENAMES - 1])
def test_a_replace_killed_between_renames_is_put_back_by_the_next_command(board, tmp_path,  # noqa: F811
                                                                          suite_file, random_bytes, after):
    path = tmp_path / "random.json.gz"
    path.write_bytes(random_bytes)
    before = tree_digest(board)
    replace_killed_after(after, board, path, suite_file)
    assert list(board.glob(".staging-*"))  # the killed writer's staging folder, and a board half written
    index = boards.read_index(board)
    assert index is not None
    with pytest.raises(UserError, match="a write to it was stopped part way .*agentgym-bench board --board"):
        boards.load_stored(board, index["submissions"][0])
    with locked(board):  # what every submit and board does first
        pass
    assert tree_digest(board) == before
    assert main(["board", "--board", str(board)]) == 0
    assert cli_submit(path, "oracle", board, suite_file, "--replace") == 0  # and the board takes writes again
    assert (board / "submissions" / "oracle.json.gz").read_bytes() == random_bytes


def test_a_submit_after_a_killed_one_puts_the_board_back_first_and_lands(board, tmp_path,  # noqa: F811
                                                                         suite_file, random_bytes):
    path = tmp_path / "random.json.gz"
    path.write_bytes(random_bytes)
    oracle = (board / "submissions" / "oracle.json.gz").read_bytes()
    replace_killed_after(2, board, path, suite_file)
    assert list(board.glob(".staging-*"))
    assert cli_submit(path, "random", board, suite_file) == 0  # its checks read oracle's stored file: put back first
    assert not list(board.glob(".staging-*"))
    assert (board / "submissions" / "oracle.json.gz").read_bytes() == oracle
    assert (board / "submissions" / "random.json.gz").read_bytes() == random_bytes
    assert main(["board", "--board", str(board)]) == 0


def test_a_replace_killed_after_board_json_keeps_the_new_board(board, tmp_path, suite_file,  # noqa: F811
                                                               random_bytes):
    path = tmp_path / "random.json.gz"
    path.write_bytes(random_bytes)
    replace_killed_after(RENAMES, board, path, suite_file)  # every rename done: killed before the staging was removed
    with locked(board):
        pass
    assert not list(board.glob(".staging-*"))
    assert (board / "submissions" / "oracle.json.gz").read_bytes() == random_bytes
    index = boards.read_index(board)
    assert index is not None and index["submissions"][0]["kind"] == "random"
    boards.load_stored(board, index["submissions"][0])


def test_a_recovery_killed_part_way_is_finished_by_the_next(board, tmp_path, suite_file,  # noqa: F811
                                                            random_bytes):
    path = tmp_path / "random.json.gz"
    path.write_bytes(random_bytes)
    before = tree_digest(board)
    replace_killed_after(RENAMES - 1, board, path, suite_file)
    run_and_die(2, f"""
        from pathlib import Path
        from agentgym_bench.leaderboard.folder import recover
        recover(Path({str(board)!r}))
    """, recovery=True)
    assert tree_digest(board) != before and list(board.glob(".staging-*"))
    with locked(board):
        pass
    assert tree_digest(board) == before


def test_a_write_interrupted_in_process_puts_the_board_back_itself(board, tmp_path, suite_file,  # noqa: F811
                                                                   random_bytes, monkeypatch):
    path = tmp_path / "random.json.gz"
    path.write_bytes(random_bytes)
    before = tree_digest(board)
    real, done = os.replace, []

    def replace(src, dst, *args, **kwargs):
        if ".staging-" in str(src) and ".staging-" not in str(dst) and len(done) <= 3:
            done.append(dst)
            if len(done) == 4:  # once: the writer's own roll-back renames go through
                raise KeyboardInterrupt
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    assert cli_submit(path, "oracle", board, suite_file, "--replace") == 130  # "interrupted"
    monkeypatch.undo()
    assert len(done) == 4 and tree_digest(board) == before  # no staging folder left either
    recover(board)
    assert tree_digest(board) == before


def test_a_journal_that_is_not_a_journal_is_one_line_naming_it(board):  # noqa: F811
    staging = board / ".staging-99999"
    (staging / "undo").mkdir(parents=True)
    (staging / "journal.json").write_text('{"not": "a list of names"}')
    with pytest.raises(UserError, match="journal.json is not a write's journal"):
        recover(board)
    (staging / "journal.json").write_text('[["..", "x"]]')
    with pytest.raises(UserError, match="is not a file name of a board"):
        recover(board)
