import copy

import pytest

from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.hf import HFPolicy
from agentgym_bench.rollout.scripted import NoisyOraclePolicy
from agentgym_bench.rollout.tokens import TokenView, collate, render, step_token_views, trajectory_token_view
from tests.rollout.toy_game import TOY_ID

CHATML = (  # Qwen2.5-style: a default system prompt, "\n" after each end-of-turn token, no generation markers
    "{%- if messages[0]['role'] != 'system' -%}{{ '<|im_start|>system\nYou are helpful.<|im_end|>\n' }}{%- endif -%}"
    "{%- for m in messages -%}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}"
)


@pytest.fixture(scope="module")
def chatml_tokenizer(model_and_tokenizer):
    tokenizer = copy.deepcopy(model_and_tokenizer[1])
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tokenizer.eos_token = "<|im_end|>"
    tokenizer.chat_template = CHATML
    return tokenizer


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
        if source == "sampled":  # the sampled ids themselves, not a re-tokenisation
            for (a, b), turn in zip(view.spans, trajectory.turns, strict=True):
                assert view.input_ids[a:b] == turn.token_ids


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
    tokenizer = model_and_tokenizer[1]
    views = [trajectory_token_view(t, tokenizer) for t in oracle_trajectories()]
    batch = collate(views, tokenizer.pad_token_id)
    length = max(len(v) for v in views)
    assert batch["input_ids"].shape == batch["loss_mask"].shape == batch["rewards"].shape == (len(views), length)
    for i, v in enumerate(views):
        assert batch["input_ids"][i, : len(v)].tolist() == v.input_ids
        assert batch["attention_mask"][i].sum() == len(v)
        assert batch["loss_mask"][i, len(v):].sum() == 0
    with pytest.raises(ValueError, match="max_length"):
        collate(views, tokenizer.pad_token_id, max_length=length - 1)
