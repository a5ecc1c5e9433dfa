import json

import pytest

from agentgym_bench import stats
from agentgym_bench.benchmark.suites import available_suites, load_suite, oracle_success, parse_suite, quick_text
from agentgym_bench.errors import UserError
from agentgym_bench.seeds import TEST_SEEDS, TRAIN_SEED_START, V1_TEST_SEEDS


def test_bundled_suites():
    assert {"agentgym-v2", "agentgym-v2-validation", "agentgym-v1"} <= set(available_suites())
    assert "agentgym-v1-validation" not in available_suites()  # its validation seeds now draw validation content
    test, val = load_suite("agentgym-v2"), load_suite("agentgym-v2-validation")
    assert load_suite() == test and test.version == val.version == 2
    assert test.split == "test" and val.split == "validation"
    assert [e.env_id for e in test.entries] == [e.env_id for e in val.entries]
    for entry in test.entries:
        assert entry.seeds.start in TEST_SEEDS and entry.seeds.stop - 1 in TEST_SEEDS
        # enough episodes that a 95% interval on a rate near 0.5 is at most +-0.05 wide
        low, high = stats.wilson_interval(entry.episodes // 2, entry.episodes)
        assert high - low <= 0.1
        assert 0 < entry.oracle_success <= 1
    for entry in val.entries:
        assert entry.seeds.stop <= TRAIN_SEED_START and entry.seeds.stop <= TEST_SEEDS.start
    webshop = test.entry("webshop")
    assert webshop.env_kwargs == {} and webshop.episodes == 500  # by seed: test seed s plays test goal s % 500
    assert val.entry("webshop").env_kwargs == {}
    v1 = load_suite("agentgym-v1")  # the archived suite: its retired seeds, its entries
    assert [e.env_id for e in v1.entries] == [e.env_id for e in test.entries]
    assert all(e.seeds.start in V1_TEST_SEEDS and e.seeds.stop - 1 in V1_TEST_SEEDS for e in v1.entries)


def test_prompts_and_errors():
    entry = load_suite().entry("sokoban-6x6")
    assert entry.make_kwargs() == {"prompt": "ragen"}
    assert entry.make_kwargs("compact") == {"prompt": "compact"}
    with pytest.raises(UserError, match="not allowed"):
        entry.make_kwargs("mine")
    with pytest.raises(UserError, match="unknown suite"):
        load_suite("agentgym-v9")
    with pytest.raises(UserError, match="no entry"):
        load_suite().entry("chess")
    base = {"name": "s", "version": 1, "split": "test", "seed_start": 0}
    with pytest.raises(ValueError, match="unknown env id"):
        parse_suite({**base, "entries": [{"name": "x", "env_id": "Nope-v0", "prompts": ["ragen"], "episodes": 1,
                                          "oracle_success": 1}]})
    with pytest.raises(ValueError, match="unique"):
        entry = {"name": "x", "env_id": "AgentBandit-v0", "prompts": ["ragen"], "episodes": 1, "oracle_success": 1}
        parse_suite({**base, "entries": [entry, entry]})


@pytest.mark.parametrize("name", ["frozenlake", "frozenlake-noslip", "bandit", "bandit-heldout-arms"])
def test_oracle_ceilings_are_recomputed(name):
    for suite in ("agentgym-v2", "agentgym-v2-validation", "agentgym-v1"):
        entry = load_suite(suite).entry(name)
        assert oracle_success(entry) == pytest.approx(entry.oracle_success, abs=5e-7)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sokoban-6x6", "sokoban-8x8-2box", "webshop"])
def test_oracle_ceilings_are_recomputed_slow(name):
    for suite in ("agentgym-v2", "agentgym-v2-validation", "agentgym-v1"):
        entry = load_suite(suite).entry(name)
        assert oracle_success(entry) == pytest.approx(entry.oracle_success, abs=5e-7)


def test_a_malformed_suite_file_is_a_user_error_naming_what_is_wrong(tmp_path):
    entry = {"name": "mine", "env_id": "AgentBandit-v0", "prompts": ["compact"], "episodes": 3}
    suite = {"name": "s", "version": 1, "split": "validation", "seed_start": 0, "entries": [entry]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(suite))
    with pytest.raises(UserError, match=r"suite s: field entries\[0\]\.oracle_success is missing \(the oracle's"):
        load_suite(str(path))
    path.write_text(json.dumps({"name": "s", "entries": []}))
    with pytest.raises(UserError, match="suite s: field version is missing"):
        load_suite(str(path))
    path.write_text(json.dumps({**suite, "entries": []}))
    with pytest.raises(UserError, match=r"suite s: field entries: \[\] should be non-empty"):
        load_suite(str(path))
    path.write_text(json.dumps({**suite, "entries": [{**entry, "oracle_success": 1.0, "episodes": "many"}]}))
    with pytest.raises(UserError, match=r"suite s: field entries\[0\]\.episodes is a string, not an integer"):
        load_suite(str(path))
    path.write_text(json.dumps([suite]))
    with pytest.raises(UserError, match="suite: the file is an array, not an object"):
        load_suite(str(path))
    path.write_text("{not json")
    with pytest.raises(UserError, match=r"suite file .*s\.json is not JSON"):
        load_suite(str(path))
    path.write_text(json.dumps({**suite, "entries": [{**entry, "oracle_success": 1.0}]}))
    assert load_suite(str(path)).entry("mine").episodes == 3


def test_a_quick_check_is_named_by_its_flags():
    assert quick_text({"episodes": 3, "entries": ["bandit", "webshop"]}) == "--episodes 3 --entries bandit webshop"
    assert quick_text({"episodes": None, "entries": None}) == "a part not named"  # a file may name neither
