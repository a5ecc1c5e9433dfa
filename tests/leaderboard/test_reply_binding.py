"""One reply, one truth (issue 58): replay plays a reply's text and re-generation compares its tokens, so the two
are bound (the text is the decoding of the tokens under the model's tokenizer), what a file may claim of a reply is
bounded by its own sampling budget, and nothing a file holds moves it across the re-generation cap. Each attack of
the issue, written as it was made: refused with one line naming the turn, or marked honestly."""

from __future__ import annotations

import gzip
import json

import pytest

from agentgym_bench.benchmark.kinds import replay_entry
from agentgym_bench.benchmark.results import ResultsError, loads
from agentgym_bench.leaderboard.regenerate import prompt_tokens
from agentgym_bench.leaderboard.verify import REPLAYED, REPRODUCED, verify
from agentgym_bench.rollout.hf import decode_reply, load_tokenizer
from tests.leaderboard.conftest import play, tree_digest
from tests.leaderboard.test_board import board, cli_submit  # noqa: F401 - the board fixture
from tests.leaderboard.test_verify import edit


@pytest.fixture(scope="module")
def oracle_compact(suite) -> bytes:
    """The oracle on the tiny suite with the hf file's prompt settings, so its observations are the model's."""
    return play("oracle", suite, prompt="compact", history=0)


def _data(raw: bytes) -> dict:
    return json.loads(gzip.decompress(raw))


def _pack(data: dict) -> bytes:
    return gzip.compress(json.dumps(data).encode())


def test_oracle_texts_over_the_models_genuine_tokens_are_refused(suite, hf_bytes, oracle_compact, board,  # noqa: F811
                                                                tmp_path, suite_file, capsys):
    """The issue's first attack: the model's failed bandit episodes carry the oracle's reply texts (replay: success)
    while each turn's token_ids are what the published model really generated for that observation. Replay and
    re-generation each pass alone; binding the text to the tokens refuses the file, by ``submit`` and ``--check``
    alike, and the board is left untouched."""
    data, oracle = _data(hf_bytes), _data(oracle_compact)
    swapped = 0
    for mine, theirs in zip(data["entries"][0]["episodes"], oracle["entries"][0]["episodes"], strict=True):
        if mine["success"] or not theirs["success"]:
            continue
        genuine = mine["turns"][0]["token_ids"]
        assert mine["turns"][0]["observation_sha256"] == theirs["turns"][0]["observation_sha256"]
        mine.update({k: theirs[k] for k in ("turns", "success", "return", "final_observation_sha256")})
        mine["turns"][0]["token_ids"] = genuine
        swapped += 1
    assert swapped > 0
    forged = _pack(data)
    for entry in loads(forged).entries:  # replay alone passes: the forgery is a consistent game
        replay_entry(entry)
    with pytest.raises(ResultsError, match=r"entry bandit, seed \d+, turn 1: the reply text is not the decoding of "
                                           r"its token_ids under the model's tokenizer"):
        verify(forged, suite)
    before = tree_digest(board)
    path = tmp_path / "forged.json.gz"
    path.write_bytes(forged)
    for extra in (("--check",), ()):
        assert cli_submit(path, "forged", board, suite_file, *extra) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress line: one line, the reason
        assert last.startswith("agentgym-bench: error: entry bandit, seed ") and "is not the decoding" in last
    assert tree_digest(board) == before


def test_a_copy_with_one_thought_edited_is_refused(suite, hf_bytes):
    """The issue's second attack: another entry's file with one ``<think>`` text edited (tokens kept)."""
    def rethink(d):
        turn = d["entries"][1]["episodes"][2]["turns"][0]
        turn["reply"] = "<think>I planned this.</think>" + turn["reply"]

    assert verify(hf_bytes, suite).mark == REPRODUCED
    with pytest.raises(ResultsError, match=r"seed 1000000002, turn 1: the reply text is not the decoding"):
        verify(edit(hf_bytes, rethink), suite)


def test_padded_replies_cannot_buy_their_way_out_of_regeneration(suite, hf_bytes, model_dir):
    """The issue's third attack, each way it can be written: 92 KB of ``<think>`` padding in the text (the tokens
    kept) is refused by the binding; the padding in the tokens too is more than the file's ``max_new_tokens``; and
    padding that is consistent (special tokens, which decode to nothing) under a claimed ``max_new_tokens`` of a
    million changes neither the cost estimate nor what re-generation finds: the forgery is re-generated and refused at
    the first call, under a cap that keeps the honest file's full re-generation out."""
    tokenizer, stops = load_tokenizer(model_dir)
    padding = "<think>" + "x" * 92_000 + "</think>"
    with pytest.raises(ResultsError, match="turn 1: the reply text is not the decoding"):
        verify(edit(hf_bytes, lambda d: d["entries"][1]["episodes"][0]["turns"][0].update(
            reply=padding + d["entries"][1]["episodes"][0]["turns"][0]["reply"])), suite)
    think = tokenizer.convert_tokens_to_ids("think")
    with pytest.raises(ResultsError, match="turn 1: the reply has 5016 token ids, more than the file's own "
                                           "max_new_tokens=16 allows"):
        verify(edit(hf_bytes, lambda d: d["entries"][1]["episodes"][0]["turns"][0].update(
            token_ids=[think] * 5000 + d["entries"][1]["episodes"][0]["turns"][0]["token_ids"])), suite)

    def pad(d):
        d["metadata"]["policy"]["sampling"]["max_new_tokens"] = 1_000_000
        for episode in d["entries"][1]["episodes"]:
            for turn in episode["turns"]:
                turn["token_ids"] = turn["token_ids"] + [tokenizer.pad_token_id] * 5000
                assert decode_reply(tokenizer, stops, turn["token_ids"]) == turn["reply"]
                d["metadata"]["compute"]["generated_tokens"] += 5000  # its claimed cost made to agree

    padded = edit(hf_bytes, pad)
    costs = []
    for raw in (hf_bytes, padded):
        results = loads(raw)
        texts = {e.name: replay_entry(e, keep={ep.seed for ep in e.episodes}) for e in results.entries}
        costs.append(prompt_tokens(results, suite, texts, tokenizer, first_turns=True))
    assert costs[0] == costs[1]
    from agentgym_bench.leaderboard.regenerate import parameter_count

    cap = 2.0 * parameter_count(model_dir) * costs[0] * 1.0001  # the first call's prompts, and a little
    honest = verify(hf_bytes, suite, regeneration_cap=cap)
    assert honest.mark == REPLAYED
    assert honest.regeneration.startswith("re-generation stopped at this verifier's cap"), honest.regeneration
    with pytest.raises(ResultsError, match=r"^re-generation: entry bandit, seed \d+, turn 1: the recorded reply "
                                           r"differs .* sampling cannot write it"):
        verify(padded, suite, regeneration_cap=cap)  # at the first call, before any reply is scored


def test_token_ids_on_a_model_free_policys_turns_are_refused(suite, oracle_bytes):
    with pytest.raises(ResultsError, match="turn 1: the oracle policy writes text, not tokens"):
        verify(edit(oracle_bytes, lambda d: d["entries"][1]["episodes"][0]["turns"][0].update(token_ids=[1, 2])),
               suite)


def test_a_file_of_weights_found_here_without_token_ids_or_keys_is_refused(suite, hf_bytes):
    """``eval`` records a model's tokens and keys its sampling; a file naming weights found here (their hash matches)
    that leaves either out could only be replayed, with the model's name beside it (the audit of 2026-12-01 put the
    oracle's replies under the published model's name that way): refused, naming what is missing."""
    def untokened(d):
        n = len(d["entries"][1]["episodes"][3]["turns"][0].pop("token_ids"))
        d["metadata"]["compute"]["generated_tokens"] -= n

    with pytest.raises(ResultsError, match=r"^entry sokoban-6x6, seed 1000000003, turn 1 records no token_ids, but "
                                           r"eval records them for every reply of a model"):
        verify(edit(hf_bytes, untokened), suite)
    with pytest.raises(ResultsError, match=r"^metadata.policy.sampling.keyed is false, but eval samples a model with "
                                           r"keyed draws"):
        verify(edit(hf_bytes, lambda d: d["metadata"]["policy"]["sampling"].update(keyed=False)), suite)


@pytest.mark.parametrize("past", [0, 2**40])
def test_a_token_id_outside_the_vocabulary_is_refused(suite, hf_bytes, model_dir, past):
    """Not a traceback from the tokenizer (an id past 64 bits overflows it), and not an empty decoding."""
    size = len(load_tokenizer(model_dir)[0])
    with pytest.raises(ResultsError, match=f"turn 1: token id {size + past} is not in the model's vocabulary of "
                                           f"{size:,}"):
        verify(edit(hf_bytes, lambda d: d["entries"][1]["episodes"][0]["turns"][0].update(token_ids=[size + past])),
               suite)


def test_a_reply_one_token_over_the_files_own_budget_is_refused(suite, hf_bytes):
    """The bound is exact: a file whose longest reply is one token over its own max_new_tokens is refused."""
    longest = max(len(t["token_ids"]) for e in _data(hf_bytes)["entries"] for ep in e["episodes"] for t in ep["turns"])
    with pytest.raises(ResultsError, match=f"the reply has {longest} token ids, more than the file's own "
                                           f"max_new_tokens={longest - 1} allows"):
        verify(edit(hf_bytes, lambda d: d["metadata"]["policy"]["sampling"].update(max_new_tokens=longest - 1)),
               suite)


@pytest.mark.parametrize("pad", [" ", "\n", "\t "])
def test_a_reply_text_padded_with_white_space_is_not_its_tokens(suite, hf_bytes, pad):
    """White space is text too: a reply with white space added (its tokens kept) is refused, not compared loosely."""
    def padded(d):
        turn = d["entries"][1]["episodes"][0]["turns"][0]
        turn["reply"] = turn["reply"] + pad

    with pytest.raises(ResultsError, match=r"turn 1: the reply text is not the decoding of its token_ids"):
        verify(edit(hf_bytes, padded), suite)


@pytest.mark.parametrize("change", [1, -1, 10**9])
def test_a_claimed_prompt_token_count_is_what_the_prompts_hold(suite, hf_bytes, change):
    """``metadata.compute.prompt_tokens`` is bound to the replies' prompts under the model's tokenizer: an honest
    file's count is theirs, and one off either way is refused naming the field; ``null`` (not reported) passes."""
    claimed = _data(hf_bytes)["metadata"]["compute"]["prompt_tokens"]
    assert isinstance(claimed, int) and claimed > 0

    def claim(value):
        return lambda d: d["metadata"]["compute"].update(prompt_tokens=value)

    with pytest.raises(ResultsError, match=rf"metadata.compute.prompt_tokens is {claimed + change}, but the prompts "
                                           rf"of the file's replies hold {claimed} tokens"):
        verify(edit(hf_bytes, claim(claimed + change)), suite, regenerate=True)
    assert verify(edit(hf_bytes, claim(None)), suite).mark == REPRODUCED
