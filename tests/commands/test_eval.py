"""``agentgym-bench eval`` as a user runs it (a real subprocess) against the package's own server on loopback: the
endpoint is checked before any work, a failing endpoint ends with one line and keeps the finished entries, a re-run
resumes them, and a quick check (--episodes / --entries) is marked so that ``submit`` refuses it."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from agentgym_bench.benchmark.results import read_results
from agentgym_bench.rollout.hf import load_model
from agentgym_bench.serving.chat import ChatHandler, ChatServer
from tests.cli import cli, one_line
from trainers.sft.default_model import ModelSize, build_default_model

SUITE = {
    "name": "tiny-eval", "version": 1, "split": "test", "seed_start": 1_000_000_000,
    "entries": [
        {"name": "bandit", "env_id": "AgentBandit-v0", "env_kwargs": {}, "prompts": ["compact", "ragen"],
         "episodes": 4, "oracle_success": 1.0},
        {"name": "sokoban", "env_id": "AgentSokoban-v0", "env_kwargs": {}, "prompts": ["ragen", "compact"],
         "episodes": 3, "oracle_success": 1.0},
    ],
}


class CountingHandler(ChatHandler):
    posts: list[str] = []

    def do_POST(self):  # noqa: N802
        CountingHandler.posts.append(self.path)
        super().do_POST()


def tiny_server(folder: Path, positions: int, handler: type = CountingHandler) -> ChatServer:
    """``serve``'s server for a tiny default model built at ``folder`` (kept as ``model_folder``), named ``tiny``."""
    model = build_default_model(folder, seed=0, size=ModelSize(n_layer=1, n_embd=32, n_head=2, n_positions=positions))
    server = ChatServer(*load_model(model), model_name="tiny", handler=handler)
    server.model_folder = model
    return server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``serve``'s server for a model reading 80 positions: bandit's compact prompt (17 tokens) and Sokoban's
    (42) fit with 16 new tokens, Sokoban's ragen prompt (356) does not, nor its compact one with a turn of history."""
    with tiny_server(tmp_path_factory.mktemp("short") / "m", 80) as s:
        yield s


@pytest.fixture
def suite_file(tmp_path) -> Path:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(SUITE))
    return path


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_connection_is_one_line_before_any_work(tmp_path, suite_file):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    line = one_line(cli("eval", "--policy", f"openai:tiny@{url}", "--suite", str(suite_file), cwd=tmp_path))
    assert f"{url}/models does not answer" in line and "is the server running?" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite.json"]


def test_an_unknown_model_name_lists_the_served_ones(tmp_path, suite_file, server):
    line = one_line(cli("eval", "--policy", f"openai:tinny@{server.base_url}", "--suite", str(suite_file),
                        cwd=tmp_path))
    assert f"{server.base_url}/models does not list model 'tinny'; it serves 'tiny'" in line


def test_the_api_key_comes_from_the_variable_api_key_env_names(tmp_path, suite_file, server, monkeypatch):
    monkeypatch.setattr(server, "api_key", "sekrit")
    monkeypatch.setenv("MY_ENDPOINT_KEY", "sekrit")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run = ["eval", "--policy", f"openai:tiny@{server.base_url}", "--suite", str(suite_file), "--episodes", "1",
           "--entries", "bandit", "--prompt", "compact", "--max-new-tokens", "8"]
    line = one_line(cli(*run, cwd=tmp_path))
    assert "HTTP 401" in line and "or name the variable that holds it with --api-key-env" in line
    done = cli(*run, "--api-key-env", "MY_ENDPOINT_KEY", "--out", "keyed.json.gz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(read_results(tmp_path / "keyed.json.gz").entry("bandit").episodes) == 1


def test_a_first_prompt_over_the_context_is_refused_before_any_work(tmp_path, suite_file, server):
    CountingHandler.posts.clear()
    line = one_line(cli("eval", "--policy", f"openai:tiny@{server.base_url}", "--suite", str(suite_file),
                        "--max-new-tokens", "16", cwd=tmp_path))
    assert line.startswith("agentgym-bench: error: before playing, entry sokoban's first prompt: "
                           f"{server.base_url}/chat/completions (model 'tiny') failed after 1 attempt(s): HTTP 400 "
                           "(context_length_exceeded)"), line
    assert ("a shorter prompt (--prompt compact, --history 0) or fewer reply tokens (--max-new-tokens); nothing was "
            "played") in line
    assert len(CountingHandler.posts) == 2 and sorted(p.name for p in tmp_path.iterdir()) == ["suite.json"]


def test_a_later_prompt_over_the_context_is_an_empty_reply_as_through_hf(tmp_path, suite_file, server):
    """issue 64: Sokoban's compact prompt fits the 80-position model on turn 1 but not with a turn of history; the
    endpoint refuses it (HTTP 400, context_length_exceeded) and the turn is an empty reply, an invalid turn, as the
    same weights give through ``hf:`` (its ``overlong="empty"``): the run goes on and finishes, instead of stopping
    with advice that a re-run cannot follow."""
    run = ["eval", "--suite", str(suite_file), "--max-new-tokens", "16", "--prompt", "sokoban=compact"]
    done = cli(*run, "--policy", f"openai:tiny@{server.base_url}", "--out", "api.json.gz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    sokoban = read_results(tmp_path / "api.json.gz").entry("sokoban")
    later = [turn.reply for ep in sokoban.episodes for turn in ep.turns[1:]]
    assert later and all(reply == "" for reply in later)  # every later turn outgrew the context
    local = cli(*run, "--policy", f"hf:{server.model_folder}", "--out", "hf.json.gz", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    same = read_results(tmp_path / "hf.json.gz").entry("sokoban")
    assert [len(ep.turns) for ep in same.episodes] == [len(ep.turns) for ep in sokoban.episodes]
    assert all(turn.reply == "" for ep in same.episodes for turn in ep.turns[1:])


def test_the_same_weights_and_seed_reply_alike_through_serve_and_hf(tmp_path, suite_file):
    """issue 64: a keyed conversation's request carries the seed hf: gives its row, and serve samples from it as hf:
    does, so the two routes write the same replies (here every one; a batch's shape may still change a last bit,
    docs/rollout.md), and compare-results pairs the two quick checks."""
    run = ["eval", "--suite", str(suite_file), "--max-new-tokens", "16", "--prompt", "compact", "--history", "0",
           "--episodes", "3"]
    with tiny_server(tmp_path / "m", 1024) as server:
        api = cli(*run, "--policy", f"openai:tiny@{server.base_url}", "--out", "api.json.gz", cwd=tmp_path)
        assert api.returncode == 0, api.stderr
    local = cli(*run, "--policy", f"hf:{tmp_path / 'm'}", "--out", "hf.json.gz", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    def replies(name: str) -> list[list[list[str]]]:
        return [[[t.reply for t in ep.turns] for ep in e.episodes] for e in read_results(tmp_path / name).entries]

    assert replies("api.json.gz") == replies("hf.json.gz")
    paired = cli("compare-results", "--suite", str(suite_file), "hf.json.gz", "api.json.gz", cwd=tmp_path)
    assert paired.returncode == 0 and "| score | " in paired.stdout and "+0.000 [+0.000, +0.000]" in paired.stdout


class FailingHandler(CountingHandler):
    """Keeps every request's body; answers Sokoban's (not Bandit's: its prompt names the arm Phoenix) with an error
    while :attr:`failing`, after the two first-prompt probes."""

    failing = False
    bodies: list[bytes] = []

    def do_POST(self):  # noqa: N802
        FailingHandler.bodies.append(self.body)
        if FailingHandler.failing and len(FailingHandler.bodies) > 2 and b"Phoenix" not in self.body:
            self._error(400, "the model is being replaced", "invalid_request_error")
            return
        super().do_POST()


@pytest.fixture()
def failing_server(tmp_path):
    with tiny_server(tmp_path / "m", 1024, FailingHandler) as s:
        yield s


def test_a_failing_endpoint_keeps_finished_entries_and_a_rerun_resumes_them(tmp_path, suite_file, failing_server):
    run = ["eval", "--suite", str(suite_file), "--out", "r.json.gz", "--max-new-tokens", "16", "--prompt",
           "sokoban=compact", "--policy", f"openai:tiny@{failing_server.base_url}"]
    FailingHandler.bodies.clear()
    FailingHandler.failing = True
    try:
        line = one_line(cli(*run, cwd=tmp_path))
    finally:
        FailingHandler.failing = False
    assert f"{failing_server.base_url}/chat/completions (model 'tiny') failed" in line
    assert "HTTP 400: the model is being replaced" in line
    assert "1 finished entries kept in r.json.gz.partial (bandit): run the same command again to resume" in line
    assert not (tmp_path / "r.json.gz").exists()
    kept = read_results(tmp_path / "r.json.gz.partial")
    assert [e.name for e in kept.entries] == ["bandit"] and len(kept.entries[0].episodes) == 4
    assert kept.metadata["compute"]["batching"] == "entry"

    line = one_line(cli(*run, "--history", "1", cwd=tmp_path))
    assert ("r.json.gz.partial holds finished entries of a run with other settings (--history: the file has full, "
            "this run 1): run with the same settings to resume it, or delete it to start again: rm r.json.gz.partial "
            "(or give another --out)") in line

    FailingHandler.bodies.clear()
    done = cli(*run, cwd=tmp_path)  # the endpoint answers again: bandit is not played again
    assert done.returncode == 0 and "resuming from r.json.gz.partial: bandit kept" in done.stdout, done.stderr
    assert sum(b"Phoenix" in body for body in FailingHandler.bodies) == 1  # its first-prompt probe only
    results = read_results(tmp_path / "r.json.gz")
    assert [e.name for e in results.entries] == ["bandit", "sokoban"] and not (tmp_path / "r.json.gz.partial").exists()
    assert results.entries[0] == kept.entries[0]  # kept as played
    assert results.metadata["compute"]["episodes"] == 7
    check = cli("submit", "r.json.gz", "--name", "tiny", "--board", "board", "--suite", str(suite_file), "--check",
                cwd=tmp_path)
    assert check.returncode == 0 and "replayed" in check.stdout, check.stderr


def test_a_quick_check_is_marked_and_submit_refuses_it(tmp_path, suite_file):
    out = cli("eval", "--policy", "random", "--suite", str(suite_file), "--episodes", "2", "--entries", "sokoban",
              "--out", "q.json.gz", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "a quick check (--episodes 2 --entries sokoban): not for a board" in out.stdout
    results = read_results(tmp_path / "q.json.gz")
    assert results.metadata["quick_check"] == {"episodes": 2, "entries": ["sokoban"]}
    assert [(e.name, len(e.episodes)) for e in results.entries] == [("sokoban", 2)]
    line = one_line(cli("submit", "q.json.gz", "--name", "quick", "--board", "board", "--suite", str(suite_file),
                        cwd=tmp_path))
    assert "results file is a quick check (--episodes 2 --entries sokoban), not for a board" in line
    assert not (tmp_path / "board").exists()
    line = one_line(cli("eval", "--policy", "random", "--suite", str(suite_file), "--entries", "bandt", cwd=tmp_path))
    assert "has no entry 'bandt'" in line


def test_reproduce_replays_a_file_of_eval_in_its_entry_by_entry_batches(tmp_path, suite_file, model_dir, monkeypatch,
                                                                        capsys):
    """``reproduce`` plays as ``eval`` did (one entry after the other), so a local model's replies come back token
    for token."""
    from agentgym_bench.cli import main

    monkeypatch.chdir(tmp_path)
    board = str(tmp_path / "board")
    assert main(["eval", "--policy", f"hf:{model_dir}", "--suite", str(suite_file), "--prompt", "compact",
                 "--max-new-tokens", "8", "--history", "1", "--out", "hf.json.gz"]) == 0
    assert read_results(tmp_path / "hf.json.gz").metadata["compute"]["batching"] == "entry"
    assert main(["submit", "hf.json.gz", "--name", "tiny", "--board", board, "--suite", str(suite_file)]) == 0
    assert "as reproduced" in capsys.readouterr().out
    assert main(["reproduce", "tiny", "--board", board, "--endpoint", "http://127.0.0.1:9/v1"]) == 2
    assert "--endpoint is the URL of an openai entry's server; this entry's policy is 'hf'" in capsys.readouterr().err
    assert main(["reproduce", "tiny", "--board", board]) == 0
    assert "(100.0%) identical" in capsys.readouterr().out


def test_a_suite_file_whose_ceiling_is_not_the_oracles_is_warned_of_before_playing(tmp_path):
    suite = {**SUITE, "entries": [{**SUITE["entries"][0], "oracle_success": 0.5}]}
    (tmp_path / "mine.json").write_text(json.dumps(suite))
    out = cli("eval", "--policy", "random", "--suite", "mine.json", "--out", "r.json.gz", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert ("warning: suite tiny-eval: oracle_success is not the oracle's success on the entry's episodes (bandit: "
            "stated 0.5, the oracle's is 1.000000)") in out.stderr
