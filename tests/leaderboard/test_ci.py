"""The leaderboard workflow's shell steps (scripts/leaderboard_ci.sh), run here on real git repositories: the guard a
submission pull request must pass before anything is installed, the post-merge render that skips a refused file,
and the push that starts again from main's tip when another run pushed first (issue 51, deliverable 5)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym_bench.cli import main
from agentgym_bench.rollout.specs import Sampling
from tests.leaderboard.conftest import play
from tests.leaderboard.test_verify import edit

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "leaderboard_ci.sh"
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "GIT_AUTHOR_NAME": "t",
       "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, capture_output=True, text=True).stdout


def ci(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """Run this checkout's script (main's, as the workflow does: never the pull request's copy) in ``repo``."""
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=repo, env=ENV, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def random_bytes(suite) -> bytes:
    """The random policy under the board's sampling seed, 0: a published board takes no other."""
    return play("random", suite, sampling=Sampling(seed=0))


@pytest.fixture(scope="module")
def hf_bytes(suite, models) -> bytes:
    """The default model on the tiny suite under the board's sampling seed (as conftest's, which uses seed 3)."""
    return play(f"hf:{models[0]}", suite, sampling=Sampling(max_new_tokens=16, seed=0), prompt="compact", history=0)


@pytest.fixture(scope="module")
def origin(tmp_path_factory, suite_file, oracle_bytes) -> Path:
    """A repository with the script and a board holding the oracle (its suite: the tiny one), committed on main."""
    repo = tmp_path_factory.mktemp("ci") / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "scripts" / SCRIPT.name)
    board = repo / "leaderboards" / "tiny"
    (board / "incoming").mkdir(parents=True)
    (board / "incoming" / "README.md").write_text("results files go here\n")
    path = repo / "oracle.json.gz"
    path.write_bytes(oracle_bytes)
    assert main(["submit", str(path), "--name", "oracle", "--board", str(board), "--suite", str(suite_file)]) == 0
    path.unlink()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "board")
    return repo


@pytest.fixture()
def repo(origin, tmp_path) -> Path:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    return clone


def pull_request(repo: Path, change) -> tuple[str, str]:
    """Commit ``change(repo)`` on a branch; (base, head)."""
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "pr")
    change(repo)
    git(repo, "add", "-A", ".")
    git(repo, "commit", "-q", "-m", "pr")
    return base, git(repo, "rev-parse", "HEAD").strip()


INCOMING = "leaderboards/tiny/incoming"


def test_the_guard_passes_a_submission_and_lists_it(repo, random_bytes, tmp_path):
    base, head = pull_request(repo, lambda r: (r / INCOMING / "My model.json.gz").write_bytes(random_bytes))
    result = ci(repo, "guard", base, head, str(tmp_path / "added.txt"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "added.txt").read_text() == f"{INCOMING}/My model.json.gz\n"


def _symlink(r: Path) -> None:
    (r / INCOMING / "link.json.gz").symlink_to("../submissions/oracle.json.gz")


@pytest.mark.parametrize("what, change, message", [
    ("another file", lambda r: (r / "scripts" / "leaderboard_ci.sh").write_text("exit 0\n"),
     "scripts/leaderboard_ci.sh: a submission may only add files"),
    ("a new file elsewhere", lambda r: (r / "setup.py").write_text("import os\n"),
     "setup.py: a submission may only add leaderboards/<board>/incoming/<NAME>.json.gz"),
    ("a symbolic link", _symlink, "link.json.gz: not a regular file (git mode 120000"),
    ("a nested path", lambda r: (r / INCOMING / "sub").mkdir() or (r / INCOMING / "sub" / "x.json.gz").write_bytes(
        b"x"), "incoming/sub/x.json.gz: a submission may only add"),
    ("a new board", lambda r: (r / "leaderboards" / "mine" / "incoming").mkdir(parents=True) or (
        r / "leaderboards" / "mine" / "incoming" / "x.json.gz").write_bytes(b"x"), "leaderboards/mine is not a board"),
    ("a removed file", lambda r: (r / INCOMING / "README.md").unlink(), "README.md: a submission may only add files"),
    ("nothing", lambda r: (r / INCOMING / "notes.txt").write_text("x"), "may only add leaderboards/"),
    ("plain JSON", lambda r: (r / INCOMING / "plain.json").write_text("{}"), "may only add leaderboards/"),
])
def test_the_guard_refuses_anything_but_added_results_files(repo, tmp_path, what, change, message):
    base, head = pull_request(repo, change)
    result = ci(repo, "guard", base, head, str(tmp_path / "added.txt"))
    assert result.returncode == 1, what
    assert message in result.stdout, result.stdout


def test_render_skips_and_reports_a_refused_file_and_submits_the_others(repo, random_bytes, tmp_path):
    (repo / INCOMING / "Random.json.gz").write_bytes(random_bytes)
    (repo / INCOMING / "Tampered.json.gz").write_bytes(edit(random_bytes, lambda d: d["entries"][0]["episodes"].pop()))
    (repo / INCOMING / "Zcopy.json.gz").write_bytes(random_bytes)  # refused after Random: a copy
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "merged")
    result = ci(repo, "render", str(tmp_path / "skipped.txt"))
    assert result.returncode == 0, result.stdout + result.stderr
    skipped = (tmp_path / "skipped.txt").read_text().splitlines()
    assert sorted(skipped) == [f"{INCOMING}/Tampered.json.gz", f"{INCOMING}/Zcopy.json.gz"]
    assert "::error file=" in result.stdout
    names = [line for line in (repo / "leaderboards" / "tiny" / "README.md").read_text().splitlines() if "| Random |"
             in line]
    assert len(names) == 1 and not (repo / INCOMING / "Random.json.gz").exists()
    assert (repo / INCOMING / "Tampered.json.gz").exists()


def test_publish_starts_again_from_mains_tip_when_its_push_is_refused(origin, tmp_path, random_bytes):
    """The run's checkout is stale (another run pushed first) and origin refuses the first push: the run fetches
    main again, renders from there and pushes on top of the other run's commit."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(origin), str(remote))
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nif [ ! -e {tmp_path}/refused ]; then touch {tmp_path}/refused; exit 1; fi\n")
    hook.chmod(0o755)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    (other / INCOMING / "Random.json.gz").write_bytes(random_bytes)
    git(other, "add", ".")
    git(other, "commit", "-q", "-m", "merge: a submission")
    stale = tmp_path / "stale"
    git(tmp_path, "clone", "-q", str(remote), str(stale))  # the run's checkout, before the merge below
    (tmp_path / "refused").touch()
    git(other, "push", "-q", "origin", "HEAD:main")
    (tmp_path / "refused").unlink()  # the run's first push is refused
    result = ci(stale, "publish", "main", str(tmp_path / "skipped.txt"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "push refused (attempt 1)" in result.stdout
    log = git(remote, "log", "--format=%s", "main").splitlines()
    assert log[:2] == ["leaderboard: submit incoming results and re-render", "merge: a submission"]
    tree = git(remote, "ls-tree", "-r", "--name-only", "main")
    assert "leaderboards/tiny/submissions/random.json.gz" in tree and "Random.json.gz" not in tree


def test_the_check_reproduces_a_published_models_file_and_refuses_its_forgery(repo, hf_bytes, models, tmp_path):
    """Issue 58 through the workflow's own steps: on a board that publishes a model's weights, the honest file that
    names them is *reproduced*; the same file with one reply's text changed over its genuine tokens (replay alone
    passes it) is refused, naming the turn, so the pull request fails."""
    shutil.copytree(models[0], repo / "leaderboards" / "tiny" / "models" / "small")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "publish the model")
    honest = edit(hf_bytes, lambda d: d["metadata"]["policy"].update(model="leaderboards/tiny/models/small"))

    def rethink(d):
        turn = d["entries"][1]["episodes"][2]["turns"][0]
        turn["reply"] = "<think>I planned this.</think>" + turn["reply"]

    def add(r: Path) -> None:
        (r / INCOMING / "Honest.json.gz").write_bytes(honest)
        (r / INCOMING / "Forged.json.gz").write_bytes(edit(honest, rethink))

    base, head = pull_request(repo, add)
    assert ci(repo, "guard", base, head, str(tmp_path / "added.txt")).returncode == 0
    result = ci(repo, "check", str(tmp_path / "added.txt"))
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert errors == [f"::error file={INCOMING}/Forged.json.gz::refused (the line above says why)"], result.stdout
    assert "seed 1000000002, turn 1: the reply text is not the decoding of its token_ids" in result.stderr
    assert "reproduced (all 20 episodes re-generated token for token" in result.stdout


@pytest.mark.parametrize("names, same_bytes, message", [
    (["Team Y", "team-y"], False, "name one entry on the board"),
    (["x", "x.json"], False, "name one entry on the board"),  # x.json.json.gz is name x, as name_of reads it
    (["copy one", "copy two"], True, "hold the same bytes (one is a copy)"),
])
def test_the_check_refuses_two_files_of_one_pull_request_that_the_render_would_refuse(
        repo, random_bytes, tmp_path, names, same_bytes, message):
    """Each file passes against the board alone; together, the second would be refused after the merge."""
    other = edit(random_bytes, lambda d: d["metadata"].update(note="another file"))

    def add(r: Path) -> None:
        for name, data in zip(names, [random_bytes, random_bytes if same_bytes else other], strict=True):
            (r / INCOMING / f"{name}.json.gz").write_bytes(data)

    base, head = pull_request(repo, add)
    assert ci(repo, "guard", base, head, str(tmp_path / "added.txt")).returncode == 0
    result = ci(repo, "check", str(tmp_path / "added.txt"))
    assert result.returncode == 1 and message in result.stdout, result.stdout + result.stderr


def test_a_board_that_does_not_re_render_keeps_what_was_accepted_for_the_next_run(repo, random_bytes, tmp_path):
    """The submission was accepted, its incoming file removed, then the board's render failed: the board goes back
    to main's, incoming file included (it was lost before: staged as deleted, its stored copy left untracked)."""
    real = Path(sys.executable).parent / "agentgym-bench"
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "agentgym-bench").write_text(f'#!/usr/bin/env bash\nif [ "$1" = board ]; then exit 2; fi\n'
                                          f'exec {real} "$@"\n')
    (tools / "agentgym-bench").chmod(0o755)
    (repo / INCOMING / "Team Z.json.gz").write_bytes(random_bytes)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "merged")
    result = subprocess.run(["bash", str(SCRIPT), "render", str(tmp_path / "skipped.txt")], cwd=repo,
                            env={**ENV, "PATH": f"{tools}:{ENV['PATH']}"}, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "accepted 'Team Z'" in result.stdout and "does not re-render" in result.stdout
    assert (tmp_path / "skipped.txt").read_text().splitlines() == ["leaderboards/tiny", f"{INCOMING}/Team Z.json.gz"]
    assert git(repo, "status", "--porcelain") == ""  # nothing half-written left to publish
    assert (repo / INCOMING / "Team Z.json.gz").read_bytes() == random_bytes
