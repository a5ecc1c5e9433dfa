"""``serve`` with real clients on loopback: stop strings end generation early (fewer tokens generated, counted, not
timed), and ``/v1/models`` reports the model's context as vLLM does (``max_model_len``), which ``eval``'s pre-check
uses."""

from __future__ import annotations

import json

import pytest

from agentgym_bench.rollout.endpoint import check_model, served_models
from agentgym_bench.rollout.hf import HFPolicy
from agentgym_bench.serving.chat import ChatHandler, ChatServer
from tests.cli import cli, one_line
from tests.rollout.test_hf import conversations

openai = pytest.importorskip("openai", reason="the dev extra installs the official client")


class Posts(ChatHandler):
    count = 0

    def do_POST(self):  # noqa: N802
        Posts.count += 1
        super().do_POST()


@pytest.fixture(scope="module")
def server(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    with ChatServer(model, tokenizer, model_name="tiny", handler=Posts) as s:
        yield s


def sdk(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=30, max_retries=0)


def first_stop(tokenizer, ids: list[int], stop: str) -> int:
    """How many of ``ids`` it takes for the decoded reply to hold ``stop``."""
    return next(k for k in range(1, len(ids) + 1) if stop in tokenizer.decode(ids[:k], skip_special_tokens=True))


def test_a_stop_string_ends_generation_at_the_token_that_completes_it(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    prompts = conversations(3)
    keys = [(1, i) for i in range(3)]
    whole = HFPolicy(model, tokenizer, max_new_tokens=24, seed=3).generate(prompts, keys=keys)
    assert all(len(g.token_ids) == 24 and len(g.text) > 12 for g in whole), [g.text for g in whole]
    stops = [whole[0].text[6:9], whole[1].text[4:6]]  # rows 0 and 1 meet one; row 2 perhaps, perhaps not
    early = HFPolicy(model, tokenizer, max_new_tokens=24, seed=3, stop_strings=stops).generate(prompts, keys=keys)
    for g, e in zip(whole, early, strict=True):
        ends = [first_stop(tokenizer, g.token_ids, s) for s in stops if s in g.text]
        n = min(ends, default=len(g.token_ids))
        assert e.token_ids == g.token_ids[:n] and e.logprobs == g.logprobs[:n]  # the same tokens, no more
    assert len(early[0].token_ids) < 24 and len(early[1].token_ids) < 24


def test_serve_generates_fewer_tokens_with_a_stop_string_also_streaming_and_with_n(server, model_and_tokenizer):
    _, tokenizer = model_and_tokenizer
    client = sdk(server)
    messages = conversations(1)[0]
    whole = client.chat.completions.create(model="tiny", messages=messages, max_tokens=16, temperature=0,
                                           logprobs=True)
    reply = whole.choices[0].message.content
    assert whole.usage.completion_tokens == 16 and whole.choices[0].finish_reason == "length"
    stop = reply[5:8]
    ids = tokenizer.convert_tokens_to_ids([t.token for t in whole.choices[0].logprobs.content])
    needed = first_stop(tokenizer, ids, stop)
    assert needed < 16
    cut = client.chat.completions.create(model="tiny", messages=messages, max_tokens=16, temperature=0, stop=stop)
    assert cut.choices[0].message.content == reply[: reply.index(stop)]
    assert cut.choices[0].finish_reason == "stop"
    assert cut.usage.completion_tokens == needed  # generated up to the token that completed the stop string
    assert cut.usage.total_tokens == cut.usage.prompt_tokens + needed

    chunks = list(client.chat.completions.create(model="tiny", messages=messages, max_tokens=16, temperature=0,
                                                 stop=[stop], stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == reply[: reply.index(stop)]
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    assert chunks[-1].usage.completion_tokens == needed

    sampled = client.chat.completions.create(model="tiny", messages=messages, max_tokens=16, n=4, seed=11)
    texts = [c.message.content for c in sampled.choices]
    common = sorted(set(texts[0]) & set(texts[1]))[0]  # a character rows 0 and 1 both write
    stopped = client.chat.completions.create(model="tiny", messages=messages, max_tokens=16, n=4, seed=11,
                                             stop=common)
    assert stopped.usage.completion_tokens < sampled.usage.completion_tokens
    for before, after in zip(texts, stopped.choices, strict=True):
        if common in before:
            assert after.finish_reason == "stop" and after.message.content == before[: before.index(common)]
        else:
            assert after.message.content == before


def test_models_report_max_model_len_as_vllm_does(server, model_and_tokenizer):
    model, _ = model_and_tokenizer
    positions = model.config.max_position_embeddings
    client = sdk(server)
    [listed] = client.models.list().data
    assert listed.id == "tiny" and listed.max_model_len == positions == 1024
    assert client.models.retrieve("tiny").max_model_len == positions
    assert served_models(server.base_url) == {"tiny": positions}
    assert check_model(server.base_url, "tiny") == positions


class ShortContextHandler(ChatHandler):
    """An endpoint that reports a shorter context than the one it generates within (as one that cuts prompts
    silently would): eval must trust the report."""

    def _model_object(self):
        return {**super()._model_object(), "max_model_len": 50}


@pytest.fixture(scope="module")
def short_server(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    with ChatServer(model, tokenizer, model_name="tiny", handler=ShortContextHandler) as s:
        yield s


SUITE = {"name": "tiny-context", "version": 1, "split": "test", "seed_start": 1_000_000_000,
         "entries": [{"name": "bandit", "env_id": "AgentBandit-v0", "env_kwargs": {}, "prompts": ["compact"],
                      "episodes": 2, "oracle_success": 1.0},
                     {"name": "sokoban", "env_id": "AgentSokoban-v0", "env_kwargs": {}, "prompts": ["compact"],
                      "episodes": 2, "oracle_success": 1.0}]}


def test_eval_checks_its_prompts_against_the_reported_context(tmp_path, server, short_server):
    (tmp_path / "suite.json").write_text(json.dumps(SUITE))
    run = ["eval", "--suite", "suite.json", "--out", "r.json.gz"]
    Posts.count = 0
    line = one_line(cli(*run, "--policy", f"openai:tiny@{server.base_url}", "--max-new-tokens", "1024",
                          cwd=tmp_path))
    assert "--max-new-tokens 1024 leaves no room for a prompt in the model's context of 1024 tokens" in line
    assert Posts.count == 0  # refused before any request

    line = one_line(cli(*run, "--policy", f"openai:tiny@{short_server.base_url}", "--max-new-tokens", "16",
                          cwd=tmp_path))  # bandit's prompt (17 tokens) fits 50 with 16 new; Sokoban's (42) does not
    assert "entry sokoban's first prompt is 42 tokens, which with --max-new-tokens 16 exceeds the model's context " \
           "of 50 tokens (max_model_len at /models)" in line and "--max-new-tokens 8 or less" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite.json"]

    done = cli(*run, "--policy", f"openai:tiny@{server.base_url}", "--max-new-tokens", "16", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
