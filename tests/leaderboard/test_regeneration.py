"""Check 7 re-generates every reply of a local model in the batches the evaluation made, so nothing a submitter
controls picks what is re-generated, and an honest file's mark does not depend on the batch around a reply."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from agentgym_bench.benchmark.evaluate import evaluate_suite
from agentgym_bench.benchmark.kinds import replay_entry
from agentgym_bench.benchmark.results import ResultsError, dumps, loads
from agentgym_bench.leaderboard.regenerate import evaluation_batches
from agentgym_bench.leaderboard.verify import REPLAYED, REPRODUCED, verify
from agentgym_bench.rollout.specs import Sampling, policy_from_spec
from tests.leaderboard.test_matches_board import hf_ma_bytes, ma_suite, ma_suite_file  # noqa: F401 - fixtures
from tests.leaderboard.test_verify import edit


class Recorder:
    """A policy that passes every call on to ``policy`` and keeps what it was asked: (conversations, keys)."""

    def __init__(self, policy: Any):
        self.policy, self.calls = policy, []

    def generate(self, conversations, envs=None, keys=None):
        self.calls.append(([list(c) for c in conversations], list(keys)))
        return self.policy.generate(conversations, envs, keys=keys)


def _rebuilt_calls(raw: bytes, suite) -> list[tuple[list, list]]:
    results = loads(raw)
    texts = {e.name: replay_entry(e, keep={ep.seed for ep in e.episodes}) for e in results.entries}
    return [([m.messages for m in call], [m.key for m in call]) for call in evaluation_batches(results, suite, texts)]


def test_the_batches_rebuilt_from_a_file_are_the_evaluations_calls(suite, model_dir):
    """Every generate call of ``eval`` on a single-agent suite (all entries at once, one call per turn), rebuilt
    from the file alone: the same conversations, keys and order in each call."""
    policy, record = policy_from_spec(f"hf:{model_dir}", Sampling(max_new_tokens=16, seed=3))
    recorder = Recorder(policy)
    raw = dumps(evaluate_suite(recorder, suite, record, prompt="compact", history=1))
    assert len(recorder.calls) > 2 and len(recorder.calls[0][0]) == suite.episodes  # turn 1: every episode at once
    assert _rebuilt_calls(raw, suite) == recorder.calls


def test_the_batches_rebuilt_from_a_match_file_are_the_evaluations_calls(ma_suite, model_dir):  # noqa: F811
    """Two-player suites: entry by entry, one call per move of the matches in lockstep (the learner's seat against
    a fixed opponent, every seat in self-play)."""
    from agentgym_bench.benchmark.kinds import suite_policy

    policy, record = suite_policy(f"hf:{model_dir}", ma_suite, Sampling(max_new_tokens=12, seed=3))
    recorder = Recorder(policy)
    raw = dumps(evaluate_suite(recorder, ma_suite, record, history=None))
    assert _rebuilt_calls(raw, ma_suite) == recorder.calls


def test_a_reply_generated_alone_can_differ_from_the_same_reply_in_its_batch(model_dir):
    """Why the batches matter: on a CPU the last bits of a row's logits depend on the other rows (matrix products of
    another shape), so re-generating a sample in any other batch can flip a sampled token of an honest file."""
    import torch

    from agentgym_bench.rollout.hf import load_model

    model, _ = load_model(model_dir)
    draw = torch.Generator().manual_seed(1)
    rows = [torch.randint(5, model.config.vocab_size, (n,), generator=draw).tolist() for n in (40, 40, 57, 120, 300)]

    def last_logits(batch):
        length = max(len(r) for r in batch)
        ids = torch.tensor([[0] * (length - len(r)) + r for r in batch])
        mask = torch.tensor([[0] * (length - len(r)) + [1] * len(r) for r in batch])
        with torch.no_grad():
            out = model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0))
        return out.logits[:, -1]

    alone = last_logits(rows[:1])[0]
    batches = [rows[:2], rows[:3], [rows[0], rows[3]], rows]  # same length; padded; padded more
    batched = [last_logits(b)[0] for b in batches]
    assert all(torch.allclose(alone, b, atol=1e-5) for b in batched)
    assert any(not torch.equal(alone, b) for b in batched)
    assert all(torch.equal(last_logits(b)[0], x) for b, x in zip(batches, batched, strict=True))  # same batch


def test_honest_model_files_are_reproduced_in_full(suite, hf_bytes, ma_suite, hf_ma_bytes):  # noqa: F811
    verified = verify(hf_bytes, suite)
    assert verified.mark == REPRODUCED, verified.regeneration
    assert verified.regeneration == "all 20 episodes re-generated token for token in the evaluation's batches"
    verified = verify(hf_ma_bytes, ma_suite)
    assert verified.mark == REPRODUCED, verified.regeneration


def test_one_forged_reply_is_found_whatever_the_bytes_of_the_file(suite, hf_bytes, model_dir):
    """One reply's tokens changed, its text the decoding of the new tokens (so the file is consistent and replay
    passes): every reply is re-generated, so no re-encoding of the file (the issue's grind: gzip headers with other
    mtimes) can hide it from a sample, and the changed token is not what the key draws there, so the file is refused
    (until 2026-12-02 it stood *replayed*, one of the differences a machine's last bits were allowed). Changing the
    tokens alone is refused outright (the text must be theirs)."""
    from agentgym_bench.rollout.hf import decode_reply, load_tokenizer

    tokenizer, stops = load_tokenizer(model_dir)
    data = json.loads(gzip.decompress(hf_bytes))
    turn = data["entries"][1]["episodes"][5]["turns"][0]
    only_tokens = edit(hf_bytes, lambda d: d["entries"][1]["episodes"][5]["turns"][0].update(
        token_ids=[tokenizer.convert_tokens_to_ids("Left"), *turn["token_ids"][1:]]))
    with pytest.raises(ResultsError, match="seed 1000000005, turn 1: the reply text is not the decoding of its "):
        verify(only_tokens, suite)
    turn["token_ids"] = [tokenizer.convert_tokens_to_ids("think"), *turn["token_ids"][1:]]
    turn["reply"] = decode_reply(tokenizer, stops, turn["token_ids"])
    text = json.dumps(data).encode()
    for mtime in range(4):
        with pytest.raises(ResultsError, match=r"^re-generation: entry sokoban-6x6, seed 1000000005, turn 1: "
                                               r"the recorded reply differs from the re-generated one and is not a "
                                               r"draw of the named weights under the recorded sampling: a token of "):
            verify(gzip.compress(text, mtime=mtime), suite)
    assert verify(edit(hf_bytes, lambda d: None), suite).mark == REPRODUCED


class Flipper:
    """Another machine, as a test can make one: the model's own keyed replies, except that the first token of the
    reply to one key is swapped for the next token id (as a flip at a CDF boundary would), the episode then played on
    from that reply by the model, every later reply its own keyed draw."""

    def __init__(self, policy: Any, key: tuple[int, ...]):
        self.policy, self.key = policy, key

    def generate(self, conversations, envs=None, keys=None):
        from agentgym_bench.rollout.hf import decode_reply

        out = self.policy.generate(conversations, envs, keys=keys)
        for i, key in enumerate(keys):
            if tuple(key) == self.key:
                ids = [(out[i].token_ids[0] + 1) % self.policy.model.config.vocab_size, *out[i].token_ids[1:]]
                text = decode_reply(self.policy.tokenizer, set(self.policy.stop_ids), ids)
                out[i] = type(out[i])(text, ids, out[i].logprobs, prompt_tokens=out[i].prompt_tokens)
        return out


def test_a_flipped_token_is_tolerated_only_as_close_to_its_draw_as_a_machines_last_bits(suite, model_dir,
                                                                                        monkeypatch):
    """A reply whose token another machine's rounding flipped differs from re-generation; it, and every later reply
    of its episode, must still be what the key draws to within ``DRAW_TOLERANCE``. With the tolerance opened to the
    whole mass (so that this test's hand-made flip counts as one) the file is *replayed* with the difference named
    and the episode's later turns bound; at the real tolerance the same flip is refused."""
    from agentgym_bench.leaderboard import regenerate

    policy, record = policy_from_spec(f"hf:{model_dir}", Sampling(max_new_tokens=16, seed=3))
    honest = loads(dumps(evaluate_suite(policy, suite, record, prompt="compact", history=1)))
    long = next(e for e in honest.entries[1].episodes if len(e.turns) > 2)  # a Sokoban episode of several turns
    texts = {e.name: replay_entry(e, keep={ep.seed for ep in e.episodes}) for e in honest.entries}
    key = next(m.key for call in evaluation_batches(honest, suite, texts) for m in call
               if m.episode == ("sokoban-6x6", long.seed) and m.key[-1] == 0)
    raw = dumps(evaluate_suite(Flipper(policy, key), suite, record, prompt="compact", history=1))
    monkeypatch.setattr(regenerate, "DRAW_TOLERANCE", 1.0)
    checked, check_draws = [], regenerate.check_draws
    monkeypatch.setattr(regenerate, "check_draws", lambda p, moves: checked.extend(m.where for m in moves) or
                        check_draws(p, moves))
    verified = verify(raw, suite)
    assert verified.mark == REPLAYED
    assert verified.regeneration.startswith("re-generation failed: 1 of the "), verified.regeneration
    assert f"seed {long.seed}, turn 1: " in verified.regeneration
    turns = len(next(e for e in loads(raw).entries[1].episodes if e.seed == long.seed).turns)
    assert checked == [f"entry sokoban-6x6, seed {long.seed}, turn {t}" for t in range(1, turns + 1)]
    monkeypatch.undo()
    with pytest.raises(ResultsError, match=f"seed {long.seed}, turn 1: the recorded reply differs from the "
                                           "re-generated one and is not a draw of the named weights"):
        verify(raw, suite)


def test_a_file_played_entry_by_entry_is_regenerated_in_its_own_batches(suite, model_dir):
    """``eval`` plays one entry after the other (so finished entries are kept): the file says so
    (``compute.batching: "entry"``), the batches rebuilt from it are its calls, and it is reproduced."""
    from agentgym_bench.benchmark.evaluate import evaluate_by_entry

    policy, record = policy_from_spec(f"hf:{model_dir}", Sampling(max_new_tokens=16, seed=3))
    recorder = Recorder(policy)
    raw = dumps(evaluate_by_entry(recorder, suite, record, prompt="compact", history=1))
    assert loads(raw).metadata["compute"]["batching"] == "entry"
    assert len(recorder.calls[0][0]) == suite.entries[0].episodes  # turn 1 of the first entry alone
    assert _rebuilt_calls(raw, suite) == recorder.calls
    assert verify(raw, suite, root=model_dir.parent).mark == REPRODUCED


def test_re_generation_runs_on_the_evaluations_torch_threads(suite, hf_bytes, monkeypatch):
    """``eval`` records torch's thread count, and re-generation runs on as many (at most the cores here) and restores
    the caller's: on a CPU the last bits of a matrix product depend on it (one reply in ten thousand flipped between
    one and two threads, 2026-12-03). A value the file makes up (0, a string, true, 10^5) cannot do more than that."""
    import os

    import torch

    from agentgym_bench.benchmark.evaluate import hardware
    from agentgym_bench.leaderboard import regenerate

    assert hardware()["torch_threads"] == torch.get_num_threads()
    before, cores = torch.get_num_threads(), os.cpu_count() or 1
    for recorded, inside in [(1, 1), (10**5, cores), (0, before), ("1", before), (True, before), (None, before)]:
        with regenerate.evaluation_threads(recorded):
            assert torch.get_num_threads() == inside, recorded
        assert torch.get_num_threads() == before
    seen = []
    real = regenerate.check_draws
    monkeypatch.setattr(regenerate, "check_draws", lambda *a: seen.append(torch.get_num_threads()) or real(*a))
    recorded = 2 if before == 1 else 1  # not the threads this process runs on, where the machine allows
    other = edit(hf_bytes, lambda d: d["metadata"]["hardware"].update(torch_threads=recorded))
    verified = verify(other, suite)
    assert verified.mark == REPRODUCED and seen and set(seen) == {min(recorded, cores)}
    assert torch.get_num_threads() == before
