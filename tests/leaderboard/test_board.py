"""submit/board/reproduce on a board folder: acceptance, rejections that leave the folder byte-identical, concurrent
submits, re-rendering and re-running a submission."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym_bench.benchmark.results import loads, summarize
from agentgym_bench.cli import main
from tests.leaderboard.conftest import TRAINER, tree_digest
from tests.leaderboard.test_verify import edit

ROOT = Path(__file__).resolve().parents[2]


def cli_submit(path, name, board, suite_file, *extra) -> int:
    return main(["submit", str(path), "--name", name, "--board", str(board), "--suite", str(suite_file), *extra])


@pytest.fixture()
def board(tmp_path, suite_file, oracle_bytes) -> Path:
    """A board holding the oracle's results."""
    path = tmp_path / "oracle.json.gz"
    path.write_bytes(oracle_bytes)
    assert cli_submit(path, "oracle", tmp_path / "board", suite_file) == 0
    return tmp_path / "board"


def test_honest_files_are_accepted_and_stored_byte_for_byte(board, tmp_path, suite, suite_file, oracle_bytes,
                                                            random_bytes):
    path = tmp_path / "random.json.gz"
    path.write_bytes(random_bytes)
    assert cli_submit(path, "Random policy", board, suite_file) == 0
    index = json.loads((board / "board.json").read_text())
    assert [r["name"] for r in index["submissions"]] == ["oracle", "Random policy"]  # ranked by score
    assert (board / "submissions" / "random-policy.json.gz").read_bytes() == random_bytes
    assert (board / "submissions" / "oracle.json.gz").read_bytes() == oracle_bytes
    record = index["submissions"][1]
    expected = summarize(loads(random_bytes), suite)
    assert record["summary"]["score"] == list(expected.score)
    assert record["summary"]["entries"]["bandit"]["successes"] == expected.entries[0].success.successes
    assert record["mark"] == "replayed" and record["kind"] == "random"
    readme = (board / "README.md").read_text()
    assert "| 1 | oracle | oracle | replayed |" in readme and "| 2 | Random policy | random | replayed |" in readme
    assert (board / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    script = (board / "transcripts" / "random-policy.js").read_text()
    assert script.startswith("agbTranscripts(") and "<" not in script
    assert "random-policy,oracle" in (board / "index.html").read_text() or "oracle,random-policy" in (
        board / "index.html").read_text()


def _bad_files(oracle_bytes: bytes) -> dict[str, bytes]:
    def flip(d):
        ep = d["entries"][1]["episodes"][0]
        ep["success"] = not ep["success"]

    def inflate(d):
        ep = d["entries"][1]["episodes"][0]
        ep["turns"][-1]["reward"] += 1.0
        ep["return"] += 1.0

    def alter_reply(d):
        d["entries"][1]["episodes"][0]["turns"][0]["reply"] = "<think></think><answer>Left</answer>"

    def other_version_other_envs(d):
        d["metadata"]["package_version"] = "9.9.9"
        for ep in d["entries"][0]["episodes"]:
            ep["final_observation_sha256"] = "0" * 64

    text = gzip.decompress(oracle_bytes).decode()
    return {
        "flipped success": edit(oracle_bytes, flip),
        "inflated reward": edit(oracle_bytes, inflate),
        "altered reply": edit(oracle_bytes, alter_reply),
        "missing seed": edit(oracle_bytes, lambda d: d["entries"][0]["episodes"].pop(3)),
        "foreign seed": edit(oracle_bytes, lambda d: d["entries"][0]["episodes"][3].update(seed=17)),
        "duplicated seed": edit(oracle_bytes, lambda d: d["entries"][0]["episodes"][3].update(
            seed=d["entries"][0]["episodes"][2]["seed"])),
        "wrong suite version": edit(oracle_bytes, lambda d: d["suite"].update(version=1)),
        "NaN": text.replace('"return":', '"return":NaN,"r":', 1).encode(),
        "infinity": text.replace('"reward":', '"reward":-Infinity,"r":', 1).encode(),
        "other package version whose envs differ": edit(oracle_bytes, other_version_other_envs),
    }


def test_rejected_files_leave_the_board_byte_identical(board, tmp_path, suite_file, oracle_bytes, capsys):
    before = tree_digest(board)
    reasons = {}
    for what, raw in _bad_files(oracle_bytes).items():
        path = tmp_path / "bad.json.gz"
        path.write_bytes(raw)
        assert cli_submit(path, "bad", board, suite_file) == 2, what
        reasons[what] = capsys.readouterr().err
        assert tree_digest(board) == before, what
    assert "success is" in reasons["flipped success"]
    assert "reward" in reasons["inflated reward"]
    assert "parses to actions" in reasons["altered reply"]
    assert "missing [" in reasons["missing seed"] and "foreign [17]" in reasons["foreign seed"]
    assert "duplicated [" in reasons["duplicated seed"]
    assert "version 1" in reasons["wrong suite version"]
    assert "NaN and infinite" in reasons["NaN"] and "NaN and infinite" in reasons["infinity"]
    assert "versions differ" in reasons["other package version whose envs differ"]
    for err in reasons.values():  # progress lines, then the error on one line
        assert err.splitlines()[-1].startswith("agentgym-bench: error: ")


def test_bad_names_an_oversized_file_and_taken_names_leave_the_board_byte_identical(board, tmp_path, suite_file,
                                                                                   random_bytes, monkeypatch,
                                                                                   capsys):
    from agentgym_bench.benchmark import results

    path = tmp_path / "random.json.gz"
    path.write_bytes(random_bytes)
    before = tree_digest(board)
    for name in ["../evil", "a/b", "<script>x</script>", "**bold**|x"]:
        assert cli_submit(path, name, board, suite_file) == 2
        assert "not allowed" in capsys.readouterr().err
    assert cli_submit(path, "Oracle", board, suite_file) == 2  # same slug as "oracle"
    assert "is taken" in capsys.readouterr().err
    assert cli_submit(path, "Oracle", board, suite_file, "--check") == 2
    assert "is taken" in capsys.readouterr().err
    monkeypatch.setattr(results, "MAX_FILE_BYTES", len(random_bytes) - 1)
    assert cli_submit(path, "big", board, suite_file) == 2
    assert "the limit is" in capsys.readouterr().err
    assert tree_digest(board) == before
    monkeypatch.undo()
    assert cli_submit(path, "oracle", board, suite_file, "--replace") == 0
    index = json.loads((board / "board.json").read_text())
    assert [r["kind"] for r in index["submissions"]] == ["random"]


def test_a_rejected_first_submission_creates_no_board(tmp_path, suite_file, oracle_bytes):
    path = tmp_path / "bad.json.gz"
    path.write_bytes(edit(oracle_bytes, lambda d: d["suite"].update(version=9)))
    assert cli_submit(path, "x", tmp_path / "board", suite_file) == 2
    assert not (tmp_path / "board").exists()


def test_check_writes_nothing(tmp_path, suite_file, oracle_bytes):
    path = tmp_path / "oracle.json.gz"
    path.write_bytes(oracle_bytes)
    assert cli_submit(path, "oracle", tmp_path / "board", suite_file, "--check") == 0
    assert not (tmp_path / "board").exists()


def test_two_concurrent_submits_both_land_intact(tmp_path, suite_file, oracle_bytes, random_bytes):
    board = tmp_path / "board"
    files = {"oracle": oracle_bytes, "random": random_bytes}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    procs = []
    for name, raw in files.items():
        (tmp_path / f"{name}.json.gz").write_bytes(raw)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "agentgym_bench.cli", "submit", str(tmp_path / f"{name}.json.gz"), "--name", name,
             "--board", str(board), "--suite", str(suite_file)], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True))
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out
    index = json.loads((board / "board.json").read_text())
    assert sorted(r["name"] for r in index["submissions"]) == ["oracle", "random"]
    for name, raw in files.items():
        assert (board / "submissions" / f"{name}.json.gz").read_bytes() == raw
        assert (board / "transcripts" / f"{name}.js").is_file()
    assert not list(board.glob(".staging-*"))


def test_board_rerenders_and_refuses_a_changed_stored_file(board, capsys):
    index = (board / "board.json").read_text()
    page = (board / "index.html").read_text()
    assert main(["board", "--board", str(board)]) == 0
    assert json.loads((board / "board.json").read_text()) == json.loads(index)
    assert (board / "index.html").read_text() == page
    stored = board / "submissions" / "oracle.json.gz"
    stored.write_bytes(stored.read_bytes() + b"\n")
    assert main(["board", "--board", str(board)]) == 2
    assert "does not match the SHA-256" in capsys.readouterr().err


def test_the_board_keeps_how_a_model_was_trained_and_a_rebuild_fills_it_in(board, tmp_path, trained_bytes):
    path = tmp_path / "trained.json.gz"
    path.write_bytes(trained_bytes)
    assert main(["submit", str(path), "--name", "trained", "--board", str(board)]) == 0
    records = {r["name"]: r for r in json.loads((board / "board.json").read_text())["submissions"]}
    assert records["trained"]["trainer"] == "gigpo" and records["trained"]["curves"] == TRAINER["curves"]
    assert records["trained"]["trainer_config"] == TRAINER["config"]
    assert records["oracle"]["curves"] == {} and records["oracle"]["trainer_config"] is None
    index = json.loads((board / "board.json").read_text())
    for r in index["submissions"]:  # a board written before these fields existed
        del r["curves"], r["trainer_config"]
    (board / "board.json").write_text(json.dumps(index))
    assert main(["board", "--board", str(board)]) == 0
    rebuilt = {r["name"]: r for r in json.loads((board / "board.json").read_text())["submissions"]}
    assert rebuilt["trained"]["curves"] == TRAINER["curves"] and rebuilt["oracle"]["curves"] == {}


def test_reproduce_agrees_with_recorded_random_and_default_model_runs(tmp_path, suite_file, random_bytes, hf_bytes,
                                                                      capsys):
    board = tmp_path / "board"
    for name, raw in {"random": random_bytes, "model": hf_bytes}.items():
        (tmp_path / f"{name}.json.gz").write_bytes(raw)
        assert cli_submit(tmp_path / f"{name}.json.gz", name, board, suite_file) == 0
    capsys.readouterr()
    for name in ("random", "model"):
        assert main(["reproduce", name, "--board", str(board)]) == 0
        out = capsys.readouterr().out
        assert "2 of 2 entries agree" in out
        assert "   12/12    " in out and "    8/8     " in out  # every episode replied identically
    assert main(["reproduce", "nobody", "--board", str(board)]) == 2


def test_an_existing_board_supplies_its_suite(board, tmp_path, random_bytes):
    path = tmp_path / "random.json.gz"
    path.write_bytes(random_bytes)
    assert main(["submit", str(path), "--name", "random", "--board", str(board)]) == 0  # no --suite: the board's
    assert main(["submit", str(path), "--name", "random 2", "--board", str(tmp_path / "new")]) == 2  # tiny: unknown


def test_the_workflow_runs_commands_that_exist():
    import yaml

    from agentgym_bench.cli import COMMANDS

    workflow = (ROOT / ".github" / "workflows" / "leaderboard.yml").read_text()
    jobs = yaml.safe_load(workflow)["jobs"]
    assert set(jobs) == {"check", "render"}
    used = set(re.findall(r"agentgym-bench (\w[\w-]*)", workflow))
    assert used == {"submit", "board"} and used <= set(COMMANDS)
    assert "--check" in workflow
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in workflow


def test_a_graded_entry_shows_its_mean_return_beside_success(tmp_path):
    from agentgym_bench.benchmark.suites import load_suite
    from tests.leaderboard.conftest import TINY_SUITE, play

    webshop = {"name": "webshop", "env_id": "AgentWebShop-v0", "env_kwargs": {"split": "test"},
               "prompts": ["ragen", "compact"], "episodes": 3, "oracle_success": 1.0}
    suite_file = tmp_path / "graded.json"
    suite_file.write_text(json.dumps({**TINY_SUITE, "name": "graded", "entries": [TINY_SUITE["entries"][0], webshop]}))
    suite = load_suite(str(suite_file))
    assert [e.graded for e in suite.entries] == [False, True]
    for name, spec in [("oracle", "oracle"), ("random", "random")]:
        (tmp_path / f"{name}.json.gz").write_bytes(play(spec, suite))
        assert cli_submit(tmp_path / f"{name}.json.gz", name, tmp_path / "board", suite_file) == 0
    lines = (tmp_path / "board" / "README.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| Rank"))
    cells = {line.split(" | ")[1]: dict(zip(header.split(" | "), line.split(" | "), strict=True))
             for line in lines if line.startswith("| 1 ") or line.startswith("| 2 ")}
    assert "webshop return" in header and "bandit return" not in header
    assert cells["oracle"]["webshop return"] == "1.000 [1.000, 1.000]"  # the purchase score of every test goal
    random = loads((tmp_path / "random.json.gz").read_bytes()).entry("webshop")
    mean = sum(ep.return_ for ep in random.episodes) / len(random.episodes)
    assert cells["random"]["webshop return"].startswith(f"{mean:.3f} [")
    assert "webshop: also the mean return" in "\n".join(lines)
