"""Board files are data, never code paths: a damaged ``board.json`` (truncated, empty, not JSON, a record without
``sha256``, a wrong shape) is refused by ``board`` and ``submit --check`` with one line that names it and says how to
restore it, and a symbolic link among a board's folders or files (``transcripts/`` or ``submissions/`` linked out of
the board) is refused before anything is written or deleted: the board and the link's target stay byte for byte as
they were. Run on copies of the committed agentgym-v2 board."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from agentgym_bench.benchmark import results
from agentgym_bench.benchmark.results import ResultsError
from agentgym_bench.cli import main
from agentgym_bench.leaderboard.board import load_stored
from tests.leaderboard.conftest import tree_digest
from tests.leaderboard.test_board import board, cli_submit  # noqa: F401 - the board fixture

COMMITTED = Path(__file__).resolve().parents[2] / "leaderboards" / "agentgym-v2"


def copy_of_committed(to: Path) -> Path:
    """The committed agentgym-v2 board (its published models left out: no test here reads them) copied to ``to``."""
    shutil.copytree(COMMITTED, to, ignore=lambda folder, names: ["models"] if Path(folder) == COMMITTED else [])
    return to


@pytest.fixture()
def published(tmp_path) -> Path:
    """A copy of the committed board in a repository of its own: ``<tmp>/repo/leaderboards/agentgym-v2``."""
    return copy_of_committed(tmp_path / "repo" / "leaderboards" / "agentgym-v2")


def _index(folder: Path) -> dict:
    return json.loads((folder / "board.json").read_text())


def _without_sha256(raw: bytes) -> bytes:
    index = json.loads(raw)
    del index["submissions"][2]["sha256"]
    return json.dumps(index, indent=1).encode()


def _edited(change):
    def apply(raw: bytes) -> bytes:
        index = json.loads(raw)
        change(index)
        return json.dumps(index, indent=1).encode()
    return apply


DAMAGE = {
    "truncated": (lambda raw: raw[: len(raw) // 2], "it ends early (cut short?)"),
    "empty": (lambda raw: b"", "it is empty"),
    "not JSON": (lambda raw: b"<html>board</html>\n", "it is not JSON (Expecting value: line 1 column 1 (char 0))"),
    "a record without sha256": (_without_sha256, "field submissions[2].sha256 is missing"),
    "not an object": (lambda raw: b"[1, 2]\n", "the whole file is an array, not an object"),
    "a dict for the list of submissions": (_edited(lambda d: d.update(submissions={})),
                                           "field submissions is an object, not an array"),
    "a list for a record": (_edited(lambda d: d["submissions"].__setitem__(0, ["random"])),
                            "field submissions[0] is an array, not an object"),
    "a string for the score": (_edited(lambda d: d["submissions"][1]["summary"].update(score="0.9")),
                               "field submissions[1].summary.score is a string, not an array"),
    "a number for the name": (_edited(lambda d: d["submissions"][0].update(name=7)),
                              "field submissions[0].name is an integer, not a string"),
    "a slug that leaves the board": (_edited(lambda d: d["submissions"][0].update(slug="../../../x")),
                                     "field submissions[0].slug is '../../../x', which breaks its pattern rule"),
    "a suite without entries": (_edited(lambda d: d["suite"].pop("entries")), "field suite.entries is missing"),
}


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("agentgym-bench: error: "), err
    return err[0]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_index_is_one_line_naming_it_for_board_and_submit_check(published, tmp_path, capsys, damage):
    damaged, why = DAMAGE[damage]
    index = published / "board.json"
    index.write_bytes(damaged(index.read_bytes()))
    results = tmp_path / "random.json.gz"
    shutil.copy(published / "submissions" / "random.json.gz", results)
    before = tree_digest(published)
    expected = (f"agentgym-bench: error: board index {index} is damaged: {why}")
    for args in (["board", "--board", str(published)],
                 ["submit", str(results), "--name", "attempt", "--board", str(published), "--check"],
                 ["reproduce", "random", "--board", str(published)]):
        assert main(args) == 2, args
        line = _one_line(capsys)
        assert line.startswith(expected) and line.endswith(f"; restore it from git: git checkout -- {index}"), line
    assert tree_digest(published) == before


def test_submit_check_as_ci_runs_it_refuses_a_damaged_index_after_verifying(board, tmp_path, suite_file,  # noqa: F811
                                                                             random_bytes, capsys, monkeypatch):
    """CI's way: no ``--board`` (the repository's board of the file's suite), so the file is verified first; on the
    tiny suite's board, put in a repository, to keep it fast."""
    repo_board = tmp_path / "repo" / "leaderboards" / "tiny"
    shutil.copytree(board, repo_board)
    index = repo_board / "board.json"
    index.write_bytes(index.read_bytes()[:-100])
    (tmp_path / "random.json.gz").write_bytes(random_bytes)
    monkeypatch.chdir(tmp_path / "repo")
    before = tree_digest(repo_board)
    assert main(["submit", str(tmp_path / "random.json.gz"), "--name", "attempt", "--suite", str(suite_file),
                 "--check"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "agentgym-bench: error: board index leaderboards/tiny/board.json is damaged: it ends early (cut short?); "
        "restore it from git: git checkout -- leaderboards/tiny/board.json")
    assert tree_digest(repo_board) == before


def test_a_private_boards_damaged_index_says_how_to_make_it_again(tmp_path, capsys):
    private = copy_of_committed(tmp_path / "runs" / "board")
    (private / "board.json").write_bytes(b"")
    assert main(["board", "--board", str(private)]) == 2
    assert _one_line(capsys) == (
        f"agentgym-bench: error: board index {private / 'board.json'} is damaged: it is empty; restore it from a "
        f"copy, or move {private} away and submit the files of its submissions/ folder again to make a new board")


def test_the_committed_boards_pass_the_index_check():
    from agentgym_bench.leaderboard.board import read_index

    for committed in sorted(COMMITTED.parent.iterdir()):
        assert read_index(committed)["submissions"], committed


def _outside(tmp_path: Path) -> Path:
    """A folder outside the board, with an unrelated script and a file named like a transcript of no entry (what
    the old renderer deleted from a linked ``transcripts/``) and one of an entry (what it overwrote)."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "site.js").write_text("console.log('not the board');\n")
    (outside / "old-entry.js").write_text("agbTranscripts({});\n")
    (outside / "random.js").write_text("// mine\n")
    (outside / "random.json.gz").write_bytes(gzip.compress(b"{}"))
    return outside


def _linked(folder: Path, name: str, target: Path) -> None:
    """``folder/name`` replaced by a symbolic link to ``target``."""
    path = folder / name
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    path.symlink_to(target)


@pytest.mark.parametrize("name", ["transcripts", "submissions", "models", "incoming"])
def test_a_linked_folder_of_the_board_is_refused_and_nothing_outside_is_touched(published, tmp_path, capsys, name):
    outside = _outside(tmp_path)
    if name == "submissions":  # the board's own files behind the link: a rebuild would otherwise succeed
        for p in (COMMITTED / "submissions").iterdir():
            shutil.copy(p, outside / p.name)
    _linked(published, name, outside)
    board_before, outside_before = tree_digest(published), tree_digest(outside)
    results = tmp_path / "oracle.json.gz"
    shutil.copy(COMMITTED / "submissions" / "oracle.json.gz", results)
    for args in (["board", "--board", str(published)],
                 ["submit", str(results), "--name", "attempt", "--board", str(published), "--check"]):
        assert main(args) == 2, args
        assert _one_line(capsys) == (
            f"agentgym-bench: error: board {published}: {published / name} is a symbolic link (to {outside}); a board "
            "writes and deletes only its own files and folders, never through a link: replace the link by the folder "
            "or file itself")
    assert tree_digest(outside) == outside_before and (outside / "site.js").is_file()
    assert tree_digest(published) == board_before and not list(published.glob(".staging-*"))


@pytest.mark.parametrize("name", ["README.md", "index.html", "board.json", ".lock", "transcripts/random.js",
                                  "submissions/oracle.json.gz"])
def test_a_linked_file_of_the_board_is_refused(published, tmp_path, capsys, name):
    outside = _outside(tmp_path)
    target = outside / "random.js"
    if name.startswith("submissions/") or name == "board.json":
        shutil.copy(COMMITTED / name, outside / Path(name).name)  # the same bytes: only the link is wrong
        target = outside / Path(name).name
    _linked(published, name, target)
    board_before, outside_before = tree_digest(published), tree_digest(outside)
    assert main(["board", "--board", str(published)]) == 2
    assert f"{published / name} is a symbolic link (to {target})" in _one_line(capsys)
    assert tree_digest(outside) == outside_before and tree_digest(published) == board_before


def test_submit_refuses_a_linked_transcripts_folder_before_writing(board, tmp_path, suite_file, random_bytes,  # noqa: F811
                                                                   capsys):
    """``submit`` (not only ``--check``) on a board made by submit: verified, then refused before the lock."""
    outside = _outside(tmp_path)
    shutil.rmtree(board / "transcripts")
    (board / "transcripts").symlink_to(outside)
    board_before, outside_before = tree_digest(board), tree_digest(outside)
    path = tmp_path / "random.json.gz"
    path.write_bytes(random_bytes)
    assert cli_submit(path, "random", board, suite_file) == 2
    assert f"{board / 'transcripts'} is a symbolic link" in capsys.readouterr().err.strip().splitlines()[-1]
    assert tree_digest(outside) == outside_before and tree_digest(board) == board_before
    assert _index(board)["submissions"][0]["name"] == "oracle" and len(_index(board)["submissions"]) == 1


def test_publish_model_refuses_a_linked_models_folder(tmp_path, capsys):
    outside = _outside(tmp_path)
    (outside / "my-model").mkdir()
    (outside / "my-model" / "keep.txt").write_text("not the board's\n")
    private = tmp_path / "board"
    private.mkdir()
    (private / "models").symlink_to(outside)
    before = tree_digest(outside)
    assert main(["publish-model", str(tmp_path / "no-model"), "--name", "my model", "--board", str(private),
                 "--replace"]) == 2
    assert f"{private / 'models'} is a symbolic link (to {outside})" in _one_line(capsys)
    assert tree_digest(outside) == before


def test_a_stored_file_is_read_within_the_caps_of_every_results_reader(board):  # noqa: F811
    """A stored file and its SHA-256 in board.json, both rewritten (a gzip bomb): ``board`` refuses it by the cap
    instead of decompressing without bound (the stored file skips the schema check, not the size caps)."""
    bomb = gzip.compress(b" " * (results.MAX_JSON_BYTES + 10))
    (board / "submissions" / "oracle.json.gz").write_bytes(bomb)
    index = json.loads((board / "board.json").read_text())
    index["submissions"][0]["sha256"] = hashlib.sha256(bomb).hexdigest()
    (board / "board.json").write_text(json.dumps(index))
    record = index["submissions"][0]
    with pytest.raises(ResultsError, match="more than .* bytes of JSON"):
        load_stored(board, record)
