import gzip
import json

import pytest

from agentgym_bench.benchmark import results as R
from agentgym_bench.benchmark import scores
from agentgym_bench.benchmark.evaluate import evaluate_suite
from agentgym_bench.benchmark.suites import load_suite
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.specs import policy_from_spec
from tests.benchmark.conftest import suite_of


@pytest.fixture(scope="module")
def small_suite():
    return suite_of(None, 6)


@pytest.fixture(scope="module")
def random_results(small_suite):
    policy, record = policy_from_spec("random")
    return evaluate_suite(policy, small_suite, record)


def test_round_trip_is_exact_and_bytes_are_deterministic(random_results, tmp_path):
    path = R.write_results(random_results, tmp_path / "r.json.gz")
    back = R.read_results(path)
    assert back.to_dict() == random_results.to_dict()
    assert R.dumps(back) == path.read_bytes()  # no timestamp in the gzip header
    plain = R.write_results(random_results, tmp_path / "r.json")
    assert json.loads(plain.read_text())["format"] == "agentgym-bench-results"
    assert R.read_results(plain).to_dict() == random_results.to_dict()


def test_metadata_records_how_results_were_made(random_results):
    meta = random_results.metadata
    assert meta["policy"]["kind"] == "random" and meta["policy"]["sampling"]["keyed"] is True
    assert meta["compute"]["episodes"] == 7 * 6
    assert meta["compute"]["env_steps"] == sum(len(ep.turns) for e in random_results.entries for ep in e.episodes)
    assert meta["package_version"] and meta["hardware"]["python"]
    assert [e.name for e in random_results.entries] == [e.name for e in load_suite().entries]
    assert all(e.prompt == "ragen" for e in random_results.entries)


def _reject(data, match):
    raw = json.dumps(data).encode()
    with pytest.raises(R.ResultsError, match=match):
        R.loads(raw)


def test_schema_errors_name_the_field(random_results):
    good = random_results.to_dict()
    bad = json.loads(json.dumps(good))
    bad["entries"][0]["episodes"][2]["success"] = "yes"
    _reject(bad, r"field entries\[0\]\.episodes\[2\]\.success is a string, not a boolean")
    bad = json.loads(json.dumps(good))
    del bad["metadata"]["policy"]["kind"]
    _reject(bad, r"field metadata\.policy\.kind is missing")
    bad = json.loads(json.dumps(good))
    bad["entries"][1]["episodes"][0]["turns"][0]["surprise"] = 1
    _reject(bad, r"field entries\[1\]\.episodes\[0\]\.turns\[0\]: .*'surprise' was unexpected")
    _reject([1, 2], r"results file: the whole file is an array, not an object")
    # the red team of 2026-12-02: each was accepted and shown on the board
    for edit, match in ((lambda d: d.update(format_version=1.0), r"field format_version is a number, not an integer"),
                        (lambda d: d["metadata"]["policy"].update(history=10**19), r"history: .* greater"),
                        (lambda d: d["metadata"]["compute"].update(wall_time_s=1e308), r"wall_time_s: .* greater")):
        bad = json.loads(json.dumps(good))
        edit(bad)
        _reject(bad, match)


def test_nan_infinity_size_and_garbage_are_refused(random_results, monkeypatch):
    text = json.dumps(random_results.to_dict())
    for constant in ("NaN", "Infinity", "-Infinity"):
        first = text.replace('"return": ', f'"return": {constant}, "x": ', 1)
        with pytest.raises(R.ResultsError, match="NaN and infinite"):
            R.loads(first.encode())
    monkeypatch.setattr(R, "MAX_FILE_BYTES", 1000)
    with pytest.raises(R.ResultsError, match="the limit is 1,000"):
        R.loads(text.encode())
    monkeypatch.setattr(R, "MAX_FILE_BYTES", 32 * 2**20)
    monkeypatch.setattr(R, "MAX_JSON_BYTES", 1000)
    with pytest.raises(R.ResultsError, match="more than 1,000 bytes of JSON"):
        R.loads(gzip.compress(text.encode()))  # a small gzip that inflates past the limit
    monkeypatch.setattr(R, "MAX_JSON_BYTES", 256 * 2**20)
    # a few hundred KB of gzip holding millions of empty objects: refused before parsing (it asked for 13 GB)
    bomb = gzip.compress(b"[" + b"{}," * (R.MAX_JSON_VALUES // 2) + b"{}]")
    assert len(bomb) < 300_000
    with pytest.raises(R.ResultsError, match=r"holds about 8,388,61\d JSON values; the limit is 8,388,608"):
        R.loads(bomb)
    assert R.loads(gzip.compress(text.encode())).entries  # the honest file, well inside the limit
    with pytest.raises(R.ResultsError, match="not valid JSON"):
        R.loads(b"{not json")
    with pytest.raises(R.ResultsError, match="not valid gzip"):
        R.loads(b"\x1f\x8b\x08garbage")


def test_summary(random_results, small_suite):
    summary = scores.summarize(random_results, small_suite)
    by_name = {e.name: e for e in summary.entries}
    bandit = random_results.entry("bandit").successes()
    assert by_name["bandit"].success.rate == bandit.mean()
    assert by_name["frozenlake"].normalised == pytest.approx(
        random_results.entry("frozenlake").successes().mean() / small_suite.entry("frozenlake").oracle_success)
    score, low, high = summary.score
    assert low <= score <= high
    assert "score" in scores.format_summary(summary)


def test_the_order_of_a_files_episodes_and_entries_changes_no_number(random_results, small_suite):
    """A file's episodes are read in seed order and its entries scored in the suite's order: shuffling either (which
    replays and re-generates as well) cannot move an interval or a pairing, so a submitter cannot pick one."""
    data = random_results.to_dict()
    shuffled = json.loads(json.dumps(data))
    for entry in shuffled["entries"]:
        entry["episodes"].reverse()
    shuffled["entries"].reverse()
    again = R.Results.from_dict(shuffled)
    assert scores.summarize(again, small_suite).score == scores.summarize(random_results, small_suite).score
    for entry in random_results.entries:
        assert (again.entry(entry.name).successes() == entry.successes()).all()
        assert [e.seed for e in again.entry(entry.name).episodes] == sorted(e.seed for e in entry.episodes)


def test_results_are_scored_only_with_their_own_suite(random_results):
    with pytest.raises(UserError, match="results of suite .* cannot be scored with suite 'agentgym-v1'"):
        scores.summarize(random_results, load_suite("agentgym-v1"))
