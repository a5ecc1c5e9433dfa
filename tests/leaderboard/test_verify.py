"""verify(): honest files pass; every kind of tampering is named; re-generation catches a wrong model."""

from __future__ import annotations

import gzip
import json

import pytest

from agentgym_bench.benchmark.results import ResultsError
from agentgym_bench.leaderboard.verify import REPLAYED, REPRODUCED, check_name, verify


def edit(raw: bytes, change) -> bytes:
    """``raw`` with ``change(data)`` applied to its JSON."""
    data = json.loads(gzip.decompress(raw))
    change(data)
    return gzip.compress(json.dumps(data).encode())


def test_honest_oracle_and_random_files_are_replayed(suite, oracle_bytes, random_bytes):
    for raw in (oracle_bytes, random_bytes):
        verified = verify(raw, suite)
        assert verified.mark == REPLAYED
        assert verified.episodes == 20
        assert "not re-generated" in verified.regeneration


def test_the_default_model_is_reproduced(suite, hf_bytes):
    verified = verify(hf_bytes, suite, sample=6)
    assert verified.mark == REPRODUCED, verified.regeneration
    assert "6 sampled episodes" in verified.regeneration


def test_regeneration_catches_replies_of_another_model(suite, models, hf_bytes):
    """Results of model a, metadata naming model b (its real folder and weights hash): replay passes, as the
    replies are consistent with the envs, but re-generation with b does not give a's replies."""
    from agentgym_bench.rollout.specs import model_sha256

    def rename(data):
        data["metadata"]["policy"]["model"] = str(models[1])
        data["metadata"]["policy"]["model_sha256"] = model_sha256(models[1])

    verified = verify(edit(hf_bytes, rename), suite, sample=6)
    assert verified.mark == REPLAYED
    assert "re-generation of 6 sampled episodes failed" in verified.regeneration
    assert verify(hf_bytes, suite, sample=6).mark == REPRODUCED


def test_a_model_folder_whose_weights_changed_is_not_regenerated(suite, hf_bytes):
    def other_hash(data):
        data["metadata"]["policy"]["model_sha256"] = "0" * 64

    verified = verify(edit(hf_bytes, other_hash), suite)
    assert verified.mark == REPLAYED and "do not match the recorded model_sha256" in verified.regeneration


def first_episode_with_turns(data, entry=1):
    return data["entries"][entry]["episodes"][0]


@pytest.mark.parametrize("change, message", [
    (lambda d: first_episode_with_turns(d).update(success=not first_episode_with_turns(d)["success"]), "success is"),
    (lambda d: first_episode_with_turns(d)["turns"][0].update(reward=first_episode_with_turns(d)["turns"][0]
                                                               ["reward"] + 1.0), "turn 1: reward"),
    (lambda d: first_episode_with_turns(d).update(**{"return": first_episode_with_turns(d)["return"] + 0.5}),
     "return"),
    (lambda d: first_episode_with_turns(d)["turns"][0].update(reply="<answer>Up || Up || Up</answer>"),
     "turn 1: the reply parses to actions"),
    (lambda d: first_episode_with_turns(d)["turns"][0].update(observation_sha256="ab" * 32),
     "turn 1: the observation differs"),
    (lambda d: first_episode_with_turns(d).update(final_observation_sha256="cd" * 32),
     "final observation differs"),
    (lambda d: d["entries"][0]["episodes"].pop(), "missing [1000000011]"),
    (lambda d: d["entries"][0]["episodes"][0].update(seed=5), "foreign [5]"),
    (lambda d: d["entries"][0]["episodes"].__setitem__(1, d["entries"][0]["episodes"][0]), "duplicated [1000000000]"),
    (lambda d: d["suite"].update(version=2), "version 2"),
    (lambda d: d["suite"].update(name="other"), "suite 'other'"),
    (lambda d: d["entries"].pop(), "missing ['sokoban-6x6']"),
    (lambda d: d["entries"][0]["env_kwargs"].update(max_turns=50), "env_kwargs"),
    (lambda d: d["entries"][0]["env_kwargs"].update(prompt="mine"), "prompt 'mine'"),
    (lambda d: d["entries"][0].update(env_id="AgentBanditTest-v0"), "env id"),
])
def test_tampering_is_rejected_with_the_reason(suite, oracle_bytes, change, message):
    with pytest.raises(ResultsError, match=None) as caught:
        verify(edit(oracle_bytes, change), suite)
    assert message in str(caught.value)


def test_an_altered_reply_with_the_same_actions_still_replays(suite, oracle_bytes):
    """Replies are replayed, not compared as text: changing the thinking keeps the actions, and the file is the
    same game. (An altered reply that changes what happens is caught above.)"""
    def rethink(data):
        turn = data["entries"][1]["episodes"][0]["turns"][0]
        turn["reply"] = turn["reply"].replace("<think>", "<think>I am sure. ", 1)

    assert verify(edit(oracle_bytes, rethink), suite).mark == REPLAYED


def test_another_package_version_is_accepted_only_if_it_replays(suite, oracle_bytes):
    def older(data):
        data["metadata"]["package_version"] = "0.0.1"

    assert "replays identically" in verify(edit(oracle_bytes, older), suite).notes[0]

    def older_with_other_observations(data):
        older(data)
        for episode in data["entries"][1]["episodes"]:
            episode["turns"][0]["observation_sha256"] = "ef" * 32

    with pytest.raises(ResultsError, match=r"written by agentgym-bench 0.0.1, this is .* versions differ"):
        verify(edit(oracle_bytes, older_with_other_observations), suite)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinite_numbers_are_rejected(suite, oracle_bytes, number):
    text = gzip.decompress(oracle_bytes).decode()
    text = text.replace('"reward":', f'"reward":{number},"x":', 1)
    with pytest.raises(ResultsError, match="NaN and infinite"):
        verify(text.encode(), suite)


def test_a_file_over_the_size_limit_is_rejected(suite, monkeypatch, tmp_path):
    from agentgym_bench.benchmark import results

    monkeypatch.setattr(results, "MAX_FILE_BYTES", 1000)
    path = tmp_path / "big.json.gz"
    path.write_bytes(b"\x1f\x8b" + bytes(2000))
    with pytest.raises(ResultsError, match="the limit is 1,000"):
        verify(path, suite)


@pytest.mark.parametrize("name", ["a/b", "..\\x", "<b>x</b>", "", " ", "x" * 65, "a\nb", "[x](http://e)"])
def test_bad_names_are_refused(name):
    with pytest.raises(ResultsError, match="not allowed"):
        check_name(name)


def test_good_names_pass():
    assert check_name(" Qwen2.5-0.5B + StarPO_v1 ") == "Qwen2.5-0.5B + StarPO_v1"


@pytest.mark.slow
def test_a_full_suite_random_file_replays_and_a_late_change_is_caught():
    """The bundled agentgym-v1 suite end to end: 2,900 episodes; a reward changed in the last WebShop episode."""
    from agentgym_bench.benchmark.suites import load_suite
    from tests.leaderboard.conftest import play

    raw = play("random", load_suite("agentgym-v1"))
    verified = verify(raw)
    assert verified.episodes == 2900 and verified.mark == REPLAYED

    def late(data):
        data["entries"][-1]["episodes"][-1]["turns"][-1]["reward"] += 0.25

    with pytest.raises(ResultsError, match="entry webshop, seed 1000000499, turn .*: reward"):
        verify(edit(raw, late))
