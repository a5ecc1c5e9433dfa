"""A hostile submitter (issue 51): markup injected into the board's table, copies of entries, symlinks and malformed
files. Each is refused with one line, or rendered as plain text, and a refusal leaves the board byte-identical."""

from __future__ import annotations

import re

from agentgym_bench.leaderboard.render import markdown_cell
from tests.leaderboard.conftest import tree_digest
from tests.leaderboard.test_board import board, cli_submit  # noqa: F401 - the board fixture
from tests.leaderboard.test_verify import edit

FORGED_ROW = "x |\n| 0 | FAKE TOP | hf | reproduced | 9.999 [9.999, 9.999] | 1.000 [1.000, 1.000] | 1 | 1 | 1 |"
"""The issue's payload: a ``trainer.algorithm`` whose newline starts a row of the README's table."""


def _table(readme: str) -> list[str]:
    return [line for line in readme.splitlines() if line.startswith("|")]


def _with_algorithm(raw: bytes, algorithm: str) -> bytes:
    return edit(raw, lambda d: d["metadata"].update(trainer={"algorithm": algorithm, "config": {}}))


def test_a_forged_row_in_trainer_algorithm_is_refused_and_the_board_unchanged(board, tmp_path, suite_file,  # noqa: F811
                                                                            random_bytes, capsys):
    before = tree_digest(board)
    path = tmp_path / "forged.json.gz"
    path.write_bytes(_with_algorithm(random_bytes, FORGED_ROW))
    for extra in ((), ("--check",)):
        assert cli_submit(path, "forged", board, suite_file, *extra) == 2
        last = capsys.readouterr().err.splitlines()[-1]
        assert "field metadata.trainer.algorithm" in last and "line break or a control character" in last
    assert tree_digest(board) == before
    assert "FAKE TOP" not in (board / "README.md").read_text()


def test_pipes_backticks_and_html_in_free_text_are_shown_as_text(board, tmp_path, suite_file,  # noqa: F811
                                                                 random_bytes):
    payload = "a | FAKE | cell `code` <img src=x onerror=alert(1)> [link](http://x) **bold** @user #1 www.x.io"
    path = tmp_path / "markup.json.gz"
    path.write_bytes(_with_algorithm(random_bytes, payload))
    assert cli_submit(path, "markup", board, suite_file) == 0
    rows = _table((board / "README.md").read_text())
    header, row = rows[0], next(r for r in rows if "markup" in r)
    assert len(rows) == 4  # header, rule, the oracle, this entry: no row added
    cells = lambda line: len(line.replace("\\|", "").split("|"))  # noqa: E731 - unescaped pipes delimit cells
    assert cells(row) == cells(header)
    for raw in ("<img", "`code`", "[link]", "**bold**", "@user", "#1", "www.x"):
        assert not re.search(r"(?<!\\)" + re.escape(raw), row), raw
    assert "&lt;img src=x onerror=alert(1)&gt;" in row and "\\`code\\`" in row and "\\*\\*bold\\*\\*" in row


def test_markdown_cells_hold_any_text_on_one_line():
    """What a stored file of an older board could still hold (the schema now refuses it on submit): line breaks
    of every kind, control and bidirectional-override characters."""
    for text in (FORGED_ROW, "a\r\nb", "a\u2028b\u2029c\x85d\x0be", "\x1b[31mred", "left\u202eright", "tab\there"):
        cell = markdown_cell(text)
        assert len(cell.splitlines()) == 1 and "\u202e" not in cell and "\x1b" not in cell
        assert "|" not in cell.replace("\\|", "")
    assert markdown_cell("default model + SFT + StarPO") == "default model + SFT + StarPO"
    assert markdown_cell("a\\|b") == "a\\\\\\|b"  # a backslash cannot un-escape the pipe after it
