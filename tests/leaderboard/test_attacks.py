"""A hostile submitter (issue 51): markup injected into the board's table, copies of entries, symlinks and malformed
files. Each is refused with one line, or rendered as plain text, and a refusal leaves the board byte-identical."""

from __future__ import annotations

import gzip
import re

import pytest

from agentgym_bench.leaderboard.render import markdown_cell
from tests.leaderboard.conftest import tree_digest
from tests.leaderboard.test_board import board, cli_submit  # noqa: F401 - the board fixture
from tests.leaderboard.test_verify import edit

FORGED_ROW = "x |\n| 0 | FAKE TOP | hf | reproduced | 9.999 [9.999, 9.999] | 1.000 [1.000, 1.000] | 1 | 1 | 1 |"
"""The issue's payload: a ``trainer.algorithm`` whose newline starts a row of the README's table."""


def _table(readme: str) -> list[str]:
    return [line for line in readme.splitlines() if line.startswith("|")]


def _with_algorithm(raw: bytes, algorithm: str) -> bytes:
    """``raw`` as an endpoint's file (a model-free one may report no training) with this trainer algorithm."""
    def relabel(d):
        d["metadata"].update(trainer={"algorithm": algorithm, "config": {}})
        d["metadata"]["policy"].update(kind="openai", model="my-model")

    return edit(raw, relabel)


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


def _refused(path, folder, suite_file, capsys, *extra) -> str:
    """Submit and check ``path``; both must refuse it with one line and leave ``folder`` as it was. The line."""
    before = tree_digest(folder)
    lines = []
    for check in ((), ("--check",)):
        assert cli_submit(path, "attempt", folder, suite_file, *extra, *check) == 2
        lines.append(capsys.readouterr().err.splitlines()[-1])
        assert lines[-1].startswith("agentgym-bench: error: "), lines[-1]
    assert tree_digest(folder) == before and lines[0] == lines[1]
    return lines[0]


def test_copies_of_an_entry_under_another_name_are_refused(board, tmp_path, suite_file, oracle_bytes,  # noqa: F811
                                                           capsys):
    path = tmp_path / "copy.json.gz"
    path.write_bytes(oracle_bytes)
    assert "byte for byte the file of submission 'oracle'" in _refused(path, board, suite_file, capsys)
    path.write_bytes(edit(oracle_bytes, lambda d: d["metadata"].update(date="2031-01-01", git_commit="f" * 40)))
    assert "holds the episodes of submission 'oracle'" in _refused(path, board, suite_file, capsys)
    link = tmp_path / "link.json.gz"
    link.symlink_to(board / "submissions" / "oracle.json.gz")
    assert "is a symbolic link" in _refused(link, board, suite_file, capsys)
    path.write_bytes(oracle_bytes)  # the same file under its own name refreshes its entry
    assert cli_submit(path, "oracle", board, suite_file, "--replace") == 0


def test_a_copy_of_a_models_entry_is_refused_before_its_replies_are_re_generated(tmp_path, suite_file, hf_bytes,
                                                                                monkeypatch, capsys):
    """The first-hour walkthrough of 2026-12-02: README's eval of the published checkpoint gives the board's entry
    again, and ``submit --check`` re-generated it for minutes before refusing it as a copy. The copy is refused
    once replayed (seconds), before re-generation."""
    from agentgym_bench.leaderboard import verify

    private = tmp_path / "board"
    path = tmp_path / "model.json.gz"
    path.write_bytes(hf_bytes)
    assert cli_submit(path, "the model", private, suite_file) == 0
    monkeypatch.setattr(verify, "regenerate_all", lambda *a, **k: pytest.fail("a copy was re-generated"))
    path.write_bytes(edit(hf_bytes, lambda d: d["metadata"].update(date="2031-01-01")))
    assert "holds the episodes of submission 'the model'" in _refused(path, private, suite_file, capsys)


def _raw_edit(raw: bytes, change, old: str, new: str) -> bytes:
    """``raw`` with ``change`` applied, then the first JSON text ``old`` (e.g. a placeholder it wrote) replaced by
    ``new``."""
    text = gzip.decompress(edit(raw, change)).decode()
    assert old in text
    return gzip.compress(text.replace(old, new, 1).encode())


def _config(value):
    return lambda d: d["metadata"].update(trainer={"algorithm": "x", "config": {"value": value}})


def test_malformed_files_are_refused_by_check_and_submit_alike(board, tmp_path, suite_file, random_bytes,  # noqa: F811
                                                               capsys):
    deep = 100_000
    files = {
        "deep nesting": _raw_edit(random_bytes, _config("@"), '"@"', "[" * deep + "]" * deep),
        "huge integer": _raw_edit(random_bytes, _config("@"), '"@"', "1" * 5000),
        "1e999": _raw_edit(random_bytes, _config("@"), '"@"', "1e999"),
        "a reward of 1e999": _raw_edit(random_bytes, lambda d: None, '"reward": ', '"reward": 1e999, "x": '),
        "lone surrogate": _raw_edit(random_bytes, _config("@"), '"@"', '"\\ud800"'),
        "duplicate key": _raw_edit(random_bytes, lambda d: None, '"success":', '"success": true, "success":'),
        "16 MiB of trainer.config": edit(random_bytes, _config("x" * 16 * 2**20)),
    }
    expected = {
        "deep nesting": "nests arrays and objects deeper than 32 levels",
        "huge integer": "an integer of 5,000 digits; at most 20",
        "1e999": "the number 1e999, which is out of range",
        "a reward of 1e999": "the number 1e999, which is out of range",
        "lone surrogate": "a lone surrogate",
        "duplicate key": "repeats the key 'success' in one object",
        "16 MiB of trainer.config": "field metadata.trainer.config is 16,777,228 bytes of JSON; the limit is 65,536",
    }
    for what, raw in files.items():
        path = tmp_path / "bad.json.gz"
        path.write_bytes(raw)
        assert expected[what] in _refused(path, board, suite_file, capsys), what


def _with_model(raw: bytes, model: str) -> bytes:
    return edit(raw, lambda d: d["metadata"]["policy"].update(model=model))


def test_a_model_path_in_a_file_is_never_walked_or_expanded(tmp_path, suite, suite_file, hf_bytes, models, capsys):
    """On a published board the model must be in the board's models/ folder (symbolic links resolved): a machine
    path is refused, anything else is not looked at and the entry stays replayed. On a private board nothing is
    expanded and only a Hugging Face model folder is hashed."""
    from agentgym_bench.leaderboard.verify import REPLAYED, verify

    repo = tmp_path / "repo"
    published = repo / "leaderboards" / "tiny"
    (published / "models").mkdir(parents=True)
    (published / "models" / "elsewhere").symlink_to(models[0])  # a link out of models/, to real weights
    before = tree_digest(published)
    for model in ("/", "$HOME", "~", "leaderboards/tiny/models/../../../x"):
        path = tmp_path / "model.json.gz"
        path.write_bytes(_with_model(hf_bytes, model))
        for check in ((), ("--check",)):
            assert cli_submit(path, "attempt", published, suite_file, *check) == 2, model
            last = capsys.readouterr().err.splitlines()[-1]
            assert f"metadata.policy.model {model!r} is a path on the machine that evaluated it" in last, model
        assert tree_digest(published) == before
    verified = verify(_with_model(hf_bytes, "leaderboards/tiny/models/elsewhere"), suite, root=repo,
                      board=published)
    assert verified.mark == REPLAYED
    assert "is not in the models/ folder of this board or of another" in verified.regeneration
    verified = verify(_with_model(hf_bytes, "runs/mine"), suite, root=repo, board=published)
    assert "is not in the models/ folder of this board or of another" in verified.regeneration
    for model, why in (("/", "is not a Hugging Face model folder here (no config.json)"),
                       ("$HOME/models/default", "names a path with ~ or $, which is not expanded here")):
        verified = verify(_with_model(hf_bytes, model), suite, root=repo)  # a private board
        assert verified.mark == REPLAYED and f"model {model} {why}" == verified.regeneration
