# ruff: noqa: E501 - chat templates below are verbatim test data
import copy

import pytest

from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.hf import HFPolicy
from agentgym_bench.rollout.policy import Generation
from agentgym_bench.rollout.scripted import NoisyOraclePolicy
from agentgym_bench.rollout.tokens import (
    TokenInTokenOut,
    TokenView,
    collate,
    render,
    render_many,
    sampled_logprobs,
    step_token_views,
    step_views,
    trajectory_token_view,
)
from tests.rollout.toy_game import TOY_ID

CHATML = (  # Qwen2.5-style: a default system prompt, "\n" after each end-of-turn token, no generation markers
    "{%- if messages[0]['role'] != 'system' -%}{{ '<|im_start|>system\nYou are helpful.<|im_end|>\n' }}{%- endif -%}"
    "{%- for m in messages -%}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}"
)


LLAMA3 = (  # Llama 3's published template without its date/tools preamble: header ids, <|eot_id|> ends a turn
    "{{- bos_token }}{%- for m in messages -%}"
    "{{- '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' + m['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor -%}{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{%- endif -%}"
)

# Qwen3's published chat template (Qwen/Qwen3-0.6B ... tokenizer_config.json, as shipped in TRL's
# trl/chat_templates/qwen3.jinja), verbatim: assistant turns before the last user query lose their <think> part.
QWEN3 = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}"""

SPECIAL = {"chatml": ["<|im_start|>", "<|im_end|>"], "qwen3": ["<|im_start|>", "<|im_end|>"],
           "llama3": ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]}


def with_template(tokenizer, name):
    """The default tokenizer with a model family's special tokens, end-of-turn token and chat template."""
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIAL[name]})
    tokenizer.eos_token = SPECIAL[name][-1]
    if name == "llama3":
        tokenizer.bos_token = "<|begin_of_text|>"
    tokenizer.chat_template = {"chatml": CHATML, "qwen3": QWEN3, "llama3": LLAMA3}[name]
    return tokenizer


@pytest.fixture(scope="module")
def chatml_tokenizer(model_and_tokenizer):
    return with_template(model_and_tokenizer[1], "chatml")


def oracle_trajectories(**kw):
    return EnvGroups([TOY_ID], [4], 2, env_kwargs={"prompt": "compact"}).rollout(NoisyOraclePolicy(0.5, seed=2), **kw)


def sampled_trajectories(model_and_tokenizer, **kw):
    policy = HFPolicy(*model_and_tokenizer, max_new_tokens=10, seed=0)
    return EnvGroups([TOY_ID], [4], 2, env_kwargs={"prompt": "compact"}).rollout(policy, **kw)


def check_view(view: TokenView, tokenizer, turns):
    """Masked tokens are exactly the replies (+ their stop token); rewards sit on reply ends."""
    assert len(view.input_ids) == len(view.loss_mask) == len(view.rewards)
    masked = {i for i, m in enumerate(view.loss_mask) if m}
    assert masked == {i for a, b in view.spans for i in range(a, b)}
    for (a, b), t in zip(view.spans, view.turns, strict=True):
        assert tokenizer.decode(view.input_ids[a:b], skip_special_tokens=True) == turns[t].reply
        assert view.rewards[b - 1] == turns[t].reward
    assert sum(view.rewards) == pytest.approx(sum(turns[t].reward for t in view.turns))
    prompt_text = tokenizer.decode([x for x, m in zip(view.input_ids, view.loss_mask, strict=True) if not m])
    for t in view.turns:  # every observation the model read is in the prompt part
        assert turns[t].observation in prompt_text


@pytest.mark.parametrize("source", ["oracle", "sampled"])
def test_trajectory_view_round_trip_with_the_default_tokenizer(model_and_tokenizer, source):
    tokenizer = model_and_tokenizer[1]
    trajectories = oracle_trajectories() if source == "oracle" else sampled_trajectories(model_and_tokenizer)
    for trajectory in trajectories:
        view = trajectory_token_view(trajectory, tokenizer)
        assert view.turns == list(range(len(trajectory.turns)))
        check_view(view, tokenizer, trajectory.turns)
        logprobs = sampled_logprobs(view, trajectory)
        assert len(logprobs) == len(view.input_ids)
        assert all(lp == 0.0 for lp, m in zip(logprobs, view.loss_mask, strict=True) if not m)
        if source == "sampled":  # the sampled ids themselves, not a re-tokenisation, and their log-probs
            for (a, b), turn in zip(view.spans, trajectory.turns, strict=True):
                assert view.input_ids[a:b] == turn.token_ids and logprobs[a:b] == turn.logprobs
        else:  # the oracle reports no log-probs
            assert set(logprobs) == {0.0}


def test_text_replies_match_the_templates_generation_markers(model_and_tokenizer):
    tokenizer = model_and_tokenizer[1]
    for trajectory in oracle_trajectories():
        view = trajectory_token_view(trajectory, tokenizer)
        messages = trajectory.messages(len(trajectory.turns))[:-1]  # the whole conversation without the final obs
        out = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        assert view.input_ids == list(out["input_ids"])
        assert view.loss_mask == list(out["assistant_masks"])


def test_chatml_template_without_generation_markers(model_and_tokenizer, chatml_tokenizer):
    for trajectories in (oracle_trajectories(), sampled_trajectories(model_and_tokenizer)):
        for trajectory in trajectories:
            view = trajectory_token_view(trajectory, chatml_tokenizer)
            check_view(view, chatml_tokenizer, trajectory.turns)
    for trajectory in oracle_trajectories():  # text replies end with the tokenizer's eos, <|im_end|>
        view = trajectory_token_view(trajectory, chatml_tokenizer)
        tokens = chatml_tokenizer.convert_ids_to_tokens(view.input_ids)
        for _, b in view.spans:
            assert tokens[b - 1] == "<|im_end|>"
        for _, b in view.spans[:-1]:  # the template's "\n" after <|im_end|> is prompt, not reply
            assert tokens[b] == "\n" and tokens[b + 1] == "<|im_start|>"


@pytest.mark.parametrize("history", [None, 0, 1])
def test_step_views_hold_the_prompt_the_model_read(model_and_tokenizer, chatml_tokenizer, history):
    for tokenizer in (model_and_tokenizer[1], chatml_tokenizer):
        for trajectory in sampled_trajectories(model_and_tokenizer, history=history):
            views = step_token_views(trajectory, tokenizer)
            assert len(views) == len(trajectory.turns)
            for t, view in enumerate(views):
                check_view(view, tokenizer, trajectory.turns)
                a, _ = view.spans[0]
                prompt = render(tokenizer, trajectory.messages(t))
                assert view.input_ids[:a] == tokenizer(prompt, add_special_tokens=False)["input_ids"]


def test_step_views_of_many_trajectories_are_each_text_tokenised_alone(model_and_tokenizer, chatml_tokenizer):
    """step_views tokenises each distinct prompt and text reply of a chunk of trajectories once, in one call; its
    rows are those of every text tokenised on its own, in trajectory then turn order, whatever the chunk size."""
    for tokenizer in (model_and_tokenizer[1], chatml_tokenizer):
        for trajectories in (oracle_trajectories(history=0), sampled_trajectories(model_and_tokenizer, history=0)):
            views = step_views(trajectories, tokenizer)
            assert [v.input_ids for v in step_views(trajectories, tokenizer, chunk=3)] == [v.input_ids for v in views]
            expected = []
            for trajectory in trajectories:
                for t, turn in enumerate(trajectory.turns):
                    prompt = tokenizer(render(tokenizer, trajectory.messages(t)), add_special_tokens=False)["input_ids"]
                    reply = (list(turn.token_ids) if turn.token_ids is not None else
                             tokenizer(turn.reply, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])
                    expected.append(prompt + reply)
            assert [v.input_ids for v in views] == expected
            prompts = [tuple(v.input_ids[:v.spans[0][0]]) for v in views]
            assert len(set(prompts)) < len(prompts)  # group members read the same prompt: what one call per text saves


def test_render_many_runs_the_template_once_per_distinct_conversation(chatml_tokenizer):
    """Each text is render()'s; equal conversations with equal tools share one template call, and the same messages
    offered other tools are rendered apart."""
    tokenizer = copy.copy(chatml_tokenizer)
    calls = []
    template = tokenizer.apply_chat_template

    def counting(messages, **kw):
        calls.append(1)
        return template(messages, **kw)

    tokenizer.apply_chat_template = counting
    a, b = [{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]
    tool = [{"type": "function", "function": {"name": "move", "parameters": {"type": "object", "properties": {}}}}]
    conversations, tools = [a, b, [dict(a[0])], a, a], [None, None, None, tool, tool]
    texts = render_many(tokenizer, conversations, tools)
    assert texts == [render(chatml_tokenizer, c, t) for c, t in zip(conversations, tools, strict=True)]
    assert len(calls) == 3  # a, b, and a offered a tool
    assert render_many(tokenizer, [a, b]) == [render(chatml_tokenizer, a), render(chatml_tokenizer, b)]


def test_windowed_trajectory_has_no_single_sequence_view(model_and_tokenizer):
    trajectory = oracle_trajectories(history=0)[0]
    with pytest.raises(ValueError, match="history"):
        trajectory_token_view(trajectory, model_and_tokenizer[1])


def test_a_template_that_rewrites_past_turns_is_reported(chatml_tokenizer):
    tokenizer = copy.deepcopy(chatml_tokenizer)
    tokenizer.chat_template = (  # drops the <think> part of earlier assistant turns, as some reasoning templates do
        "{%- for m in messages -%}{%- if m['role'] == 'assistant' -%}"
        "{{ '<|im_start|>assistant\n' + m['content'].split('</think>')[-1] + '<|im_end|>\n' }}"
        "{%- else -%}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
        "{%- endif -%}{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}")
    trajectory = next(t for t in oracle_trajectories() if len(t.turns) > 1)
    with pytest.raises(ValueError, match="re-renders"):
        trajectory_token_view(trajectory, tokenizer)


def test_collate_pads_on_the_right(model_and_tokenizer):
    import torch

    tokenizer = model_and_tokenizer[1]
    views = [trajectory_token_view(t, tokenizer) for t in oracle_trajectories()]
    batch = collate(views, tokenizer.pad_token_id)
    length = max(len(v) for v in views)
    assert batch["input_ids"].shape == batch["loss_mask"].shape == batch["rewards"].shape == (len(views), length)
    for i, v in enumerate(views):
        assert batch["input_ids"][i, : len(v)].tolist() == v.input_ids
        assert batch["input_ids"][i, len(v):].eq(tokenizer.pad_token_id).all()
        assert batch["attention_mask"][i].tolist() == [1] * len(v) + [0] * (length - len(v))
        assert batch["loss_mask"][i].tolist() == list(v.loss_mask) + [0] * (length - len(v))
        assert batch["rewards"][i, : len(v)].equal(torch.tensor(v.rewards, dtype=torch.float32))
        assert batch["rewards"][i, len(v):].eq(0).all()
    assert any(v.rewards[-1] for v in views)  # rewards land where the views put them, not only zeros
    with pytest.raises(ValueError, match="max_length"):
        collate(views, tokenizer.pad_token_id, max_length=length - 1)


class IdsBackend:
    """A backend that takes token ids (as vLLM's ``prompt_token_ids``) and records them; it replies with the noisy
    oracle's text, tokenised, plus the end-of-turn token."""

    def __init__(self, tokenizer):
        self.tokenizer, self.read, self.oracle = tokenizer, [], NoisyOraclePolicy(0.5, seed=2)

    def generate_ids(self, prompts):
        self.read += [tuple(p) for p in prompts]
        return [Generation(g.text, self.tokenizer(g.text, add_special_tokens=False)["input_ids"]
                           + [self.tokenizer.eos_token_id]) for g in self.oracle.generate([[]] * len(prompts), self.envs)]


class PassEnvs:
    """Hands the engine's envs to the oracle-backed backend (which needs them) and generates token-in-token-out."""

    def __init__(self, backend, tokenizer):
        self.backend, self.tito = backend, TokenInTokenOut(backend, tokenizer)

    def generate(self, conversations, envs=None):
        self.backend.envs = envs
        return self.tito.generate(conversations, envs)


@pytest.mark.parametrize("name", ["chatml", "llama3", "qwen3"])
def test_token_in_token_out_rows_hold_exactly_the_ids_the_model_read(model_and_tokenizer, name):
    tokenizer = with_template(model_and_tokenizer[1], name)
    backend = IdsBackend(tokenizer)
    trajectories = EnvGroups([TOY_ID], [4], 2, env_kwargs={"prompt": "compact"}).rollout(PassEnvs(backend, tokenizer))
    assert max(len(t.turns) for t in trajectories) > 1
    for trajectory in trajectories:
        view = trajectory_token_view(trajectory, tokenizer, tito=True)
        check_view(view, tokenizer, trajectory.turns)
        for (a, b), turn in zip(view.spans, trajectory.turns, strict=True):
            assert view.input_ids[a:b] == turn.token_ids  # the sampled ids themselves
            assert tuple(view.input_ids[:a]) in backend.read  # and before them, exactly what the model read
        if name != "qwen3":  # prefix-stable templates: token-in-token-out changes nothing
            assert view == trajectory_token_view(trajectory, tokenizer)


class RecordingHFPolicy(HFPolicy):
    """The real HF backend, keeping every prompt it was sent as token ids."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read = []

    def generate_ids(self, prompts, keys=None):
        self.read += [tuple(p) for p in prompts]
        return super().generate_ids(prompts, keys)


@pytest.mark.parametrize("keyed", [False, True])
def test_token_in_token_out_with_the_hf_backend_and_qwen3s_template(model_and_tokenizer, keyed):
    """The default model generates from token ids through Qwen3's template (which re-renders history): each
    whole-episode row holds exactly the ids the model read and sampled, so the log-probs recomputed on the row are
    the sampled ones."""
    import torch

    tokenizer = with_template(model_and_tokenizer[1], "qwen3")
    model = copy.deepcopy(model_and_tokenizer[0])
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    policy = RecordingHFPolicy(model, tokenizer, max_new_tokens=6, seed=0)
    trajectories = EnvGroups([TOY_ID], [2], 2, env_kwargs={"prompt": "compact"}).rollout(
        TokenInTokenOut(policy, tokenizer), keyed=keyed)
    assert sum(len(t.turns) - 1 for t in trajectories) > 0
    continued = 0
    for trajectory in trajectories:
        view = trajectory_token_view(trajectory, tokenizer, tito=True)
        assert len(view.spans) == len(trajectory.turns)
        for (a, b), turn in zip(view.spans, trajectory.turns, strict=True):
            assert view.input_ids[a:b] == turn.token_ids
            assert tuple(view.input_ids[:a]) in policy.read
            continued += a > view.spans[0][1]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([view.input_ids])).logits[0, :-1].float()
        recomputed = torch.log_softmax(logits, -1).gather(1, torch.tensor(view.input_ids[1:])[:, None])[:, 0]
        generated = torch.tensor(view.loss_mask[1:], dtype=torch.bool)
        sampled = torch.tensor([lp for turn in trajectory.turns for lp in turn.logprobs])
        torch.testing.assert_close(recomputed[generated], sampled, atol=1e-4, rtol=0)
    assert continued == sum(len(t.turns) - 1 for t in trajectories)


def test_qwen3_re_renders_history_so_only_token_in_token_out_keeps_a_single_row(model_and_tokenizer):
    tokenizer = with_template(model_and_tokenizer[1], "qwen3")
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "<think>x</think><answer>Up</answer>"},
                {"role": "user", "content": "b"}]
    assert "<think>" in render(tokenizer, messages[:1]) + messages[1]["content"]
    assert "<think>" not in render(tokenizer, messages)  # the earlier turn lost its thought
    trajectory = next(t for t in oracle_trajectories() if len(t.turns) > 1 and "<think>" in t.turns[0].reply)
    with pytest.raises(ValueError, match="re-renders earlier turns differently"):
        trajectory_token_view(trajectory, tokenizer)
    assert trajectory_token_view(trajectory, tokenizer, tito=True).turns == list(range(len(trajectory.turns)))
