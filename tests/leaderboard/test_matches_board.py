"""A two-player board: honest match files are verified by replay (the suite's opponent re-generated), forged or
malformed ones are rejected with the board untouched, and the board renders with the two-player columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentgym_bench.benchmark.results import ResultsError, loads, summarize
from agentgym_bench.benchmark.suites import parse_suite
from agentgym_bench.cli import main
from agentgym_bench.leaderboard.verify import REPLAYED, REPRODUCED, verify
from tests.benchmark.test_matches import ma_suite_data
from tests.leaderboard.conftest import tree_digest
from tests.leaderboard.test_verify import edit


@pytest.fixture(scope="module")
def ma_suite_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ma-suite") / "tiny-ma.json"
    path.write_text(json.dumps(ma_suite_data(6)))
    return path


@pytest.fixture(scope="module")
def ma_suite(ma_suite_file):
    return parse_suite(json.loads(ma_suite_file.read_text()))


def play(spec: str, suite, **kwargs) -> bytes:
    from agentgym_bench.benchmark.evaluate import evaluate
    from agentgym_bench.benchmark.matches import suite_policy
    from agentgym_bench.benchmark.results import dumps
    from agentgym_bench.rollout.specs import Sampling

    policy, record = suite_policy(spec, suite, kwargs.pop("sampling", Sampling(seed=7)))
    return dumps(evaluate(policy, suite, record, history=kwargs.pop("history", None)))


@pytest.fixture(scope="module")
def scripted_bytes(ma_suite) -> bytes:
    return play("scripted", ma_suite)


@pytest.fixture(scope="module")
def random_ma_bytes(ma_suite) -> bytes:
    return play("random", ma_suite)


@pytest.fixture(scope="module")
def hf_ma_bytes(ma_suite, model_dir) -> bytes:
    from agentgym_bench.rollout.specs import Sampling

    return play(f"hf:{model_dir}", ma_suite, sampling=Sampling(max_new_tokens=12, seed=3))


def test_honest_files_are_replayed_and_the_default_model_reproduced(ma_suite, scripted_bytes, random_ma_bytes,
                                                                    hf_ma_bytes):
    for raw in (scripted_bytes, random_ma_bytes):
        verified = verify(raw, ma_suite)
        assert verified.mark == REPLAYED and verified.episodes == 18
    verified = verify(hf_ma_bytes, ma_suite, sample=5)
    assert verified.mark == REPRODUCED, verified.regeneration


def test_regeneration_catches_a_model_that_did_not_play(ma_suite, hf_ma_bytes, models):
    from agentgym_bench.rollout.specs import model_sha256

    def rename(data):
        data["metadata"]["policy"]["model"] = str(models[1])
        data["metadata"]["policy"]["model_sha256"] = model_sha256(models[1])

    verified = verify(edit(hf_ma_bytes, rename), ma_suite, sample=5)
    assert verified.mark == REPLAYED and "re-generation of 5 sampled episodes failed" in verified.regeneration


def _entry(data, name):
    return next(e for e in data["entries"] if e["name"] == name)


def _first_move_of(episode, learner: bool):
    return next(t for t in episode["turns"] if (t["agent"] == episode["learner"]) == learner)


def _weaker_opponent(data):
    """The scripted opponent's first demand replaced by 'nothing' (a forged, conceding opponent)."""
    ep = _entry(data, "bargain-vs-scripted")["episodes"][0]
    _first_move_of(ep, learner=False)["reply"] = "<think>fine</think><answer>0 0 0</answer>"


def _learner_greedier(data):
    """The learner's first demand changed, with the parsed actions to match: the game that follows differs."""
    move = _first_move_of(_entry(data, "bargain-vs-random")["episodes"][1], learner=True)
    move.update(reply="<think>all</think><answer>4 4 4</answer>", actions=["4 4 4"], executed_actions=["4 4 4"])


def _reply_unlike_its_actions(data):
    _first_move_of(_entry(data, "bargain-vs-random")["episodes"][1], learner=True)["reply"] = (
        "<think>x</think><answer>4 4 4</answer>")


def _swap_seat(data):
    ep = _entry(data, "bargain-vs-random")["episodes"][0]
    ep["learner"] = "player_1"


def _raise_payoff(data):
    ep = _entry(data, "bargain-self-play")["episodes"][2]
    ep["payoffs"][ep["learner"]] += 0.1
    ep["return"] += 0.1


def _flip_outcome(data):
    ep = _entry(data, "bargain-vs-random")["episodes"][3]
    ep["outcome"] = "win" if ep["outcome"] != "win" else "loss"


def _flip_deal(data):
    ep = _entry(data, "bargain-vs-scripted")["episodes"][1]
    ep["deal"] = not ep["deal"]


def _relabel_agent(data):
    ep = _entry(data, "bargain-self-play")["episodes"][0]
    ep["turns"][0]["agent"] = "player_1"


def _drop_last_move(data):
    _entry(data, "bargain-self-play")["episodes"][0]["turns"].pop()


def _wrong_opponent(data):
    _entry(data, "bargain-vs-scripted")["opponent"] = "random"


def _missing_payoffs(data):
    del _entry(data, "bargain-vs-random")["episodes"][0]["payoffs"]


def _prompt_added(data):
    _entry(data, "bargain-vs-random")["env_kwargs"]["prompt"] = "ragen"


@pytest.mark.parametrize("change, message", [
    (_weaker_opponent, "the suite's scripted opponent replies"),
    (_learner_greedier, "observation of player_0 differs"),
    (_reply_unlike_its_actions, "the reply parses to actions ['4 4 4']"),
    (_swap_seat, "the policy must play player_0 (seats alternate by seed)"),
    (_raise_payoff, "payoffs are"),
    (_flip_outcome, "outcome is"),
    (_flip_deal, "deal is"),
    (_relabel_agent, "player_0 moves on replay, the file records player_1"),
    (_drop_last_move, "the match goes on after the"),
    (_wrong_opponent, "opponent 'random', the suite's is 'scripted'"),
    (_missing_payoffs, "'payoffs' is a required property"),
    (_prompt_added, "a match entry has no prompt"),
])
def test_forged_or_malformed_match_files_are_rejected(ma_suite, scripted_bytes, change, message):
    with pytest.raises(ResultsError) as caught:
        verify(edit(scripted_bytes, change), ma_suite)
    assert message in str(caught.value)


def test_submit_board_and_reproduce_on_a_two_player_board(tmp_path, ma_suite, ma_suite_file, scripted_bytes,
                                                          random_ma_bytes, hf_ma_bytes, capsys):
    board = tmp_path / "board"
    for name, raw in (("scripted", scripted_bytes), ("random", random_ma_bytes), ("default model", hf_ma_bytes)):
        path = tmp_path / f"{name}.json.gz"
        path.write_bytes(raw)
        assert main(["submit", str(path), "--name", name, "--board", str(board), "--suite", str(ma_suite_file),
                     "--sample", "3"]) == 0
    index = json.loads((board / "board.json").read_text())
    assert [r["name"] for r in index["submissions"]][0] == "scripted"  # the highest mean payoff ranks first
    record = index["submissions"][0]
    expected = summarize(loads(scripted_bytes), ma_suite)
    assert record["summary"]["score"] == list(expected.score)
    vs = record["summary"]["entries"]["bargain-vs-random"]
    assert vs["opponent"] == "random" and vs["loss"]["count"] == expected.entries[0].match.loss.successes
    readme = (board / "README.md").read_text()
    assert "bargain-vs-random payoff | bargain-vs-random win / draw / loss" in readme
    assert "mean over entries of the policy's mean payoff" in readme
    assert (board / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    script = (board / "transcripts" / "scripted.js").read_text()
    assert '"agent":"player_1"' in script and '"outcome":' in script
    assert '"multiagent":true' in (board / "index.html").read_text()

    # a forged file is rejected and the board stays byte for byte as it was
    before = tree_digest(board)
    forged = tmp_path / "forged.json.gz"
    forged.write_bytes(edit(scripted_bytes, _weaker_opponent))
    assert main(["submit", str(forged), "--name", "forged", "--board", str(board)]) == 2
    assert tree_digest(board) == before
    assert "the suite's scripted opponent replies" in capsys.readouterr().err

    assert main(["board", "--board", str(board)]) == 0
    assert json.loads((board / "board.json").read_text())["submissions"][0]["summary"] == record["summary"]
    for name in ("scripted", "random", "default model"):
        assert main(["reproduce", name, "--board", str(board)]) == 0
    assert "3 of 3 entries agree" in capsys.readouterr().out


COMMITTED = Path(__file__).resolve().parents[2] / "leaderboards" / "agentgym-ma-v1"


def test_the_committed_two_player_board_matches_its_stored_files():
    """Every stored file is the one indexed (SHA-256) and its summary is recomputed, not taken as stored."""
    import hashlib

    from agentgym_bench.benchmark.suites import load_suite
    from agentgym_bench.leaderboard.board import read_index, suite_to_dict, summary_json

    index = read_index(COMMITTED)
    suite = load_suite("agentgym-ma-v1")
    assert index["suite"] == suite_to_dict(suite)
    assert {"random", "scripted"} <= {r["name"] for r in index["submissions"]}
    for record in index["submissions"]:
        raw = (COMMITTED / "submissions" / f"{record['slug']}.json.gz").read_bytes()
        assert hashlib.sha256(raw).hexdigest() == record["sha256"]
        assert record["summary"] == json.loads(json.dumps(summary_json(summarize(loads(raw), suite))))


@pytest.mark.slow
def test_the_committed_two_player_submissions_replay():
    for path in sorted((COMMITTED / "submissions").glob("*.json.gz")):
        assert verify(path, sample=0).episodes == 1200
