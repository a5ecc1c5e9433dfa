"""The output head on chosen positions only (``logits_at``) and the warm start's loss built on it, against the
full-position computation (every position's logits, masked afterwards), on the default model; and the same logits with
shared prompts run once (``logits_at_shared_prefixes``), against ``logits_at``."""

import pytest
import torch

from agentgym_bench.rollout.heads import logits_at, logits_at_shared_prefixes
from trainers.sft.warmstart import reply_loss


def padded_batch(tokenizer):
    """Warm-start rows (turns of noisy-oracle FrozenLake episodes, whole history) right-padded, the replies in the
    loss mask."""
    from agentgym_bench.rollout.engine import EnvGroups
    from agentgym_bench.rollout.scripted import NoisyOraclePolicy
    from agentgym_bench.rollout.tokens import collate, step_token_views

    groups = EnvGroups(["AgentFrozenLake-v0"], [3], 1, env_kwargs={"prompt": "compact"}, seed=10_000)
    trajectories = groups.rollout(NoisyOraclePolicy(0.5, seed=0), history=None)
    batch = collate([v for t in trajectories for v in step_token_views(t, tokenizer)], tokenizer.pad_token_id)
    assert not batch["attention_mask"].all() and 0 < batch["loss_mask"].float().mean() < 0.5
    return batch


def test_logits_at_are_the_full_logits_at_those_positions(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    batch = padded_batch(tokenizer)
    predicts = batch["loss_mask"][:, 1:].bool()
    logits = logits_at(model, batch["input_ids"], batch["attention_mask"], predicts)
    full = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
    assert logits.shape == (int(predicts.sum()), len(tokenizer))
    torch.testing.assert_close(logits, full[predicts], rtol=1e-5, atol=1e-5)
    assert not model.get_output_embeddings()._forward_pre_hooks  # the next forward is an ordinary one
    assert model(input_ids=batch["input_ids"]).logits.shape[:2] == batch["input_ids"].shape


def test_the_warm_start_loss_and_gradient_equal_the_full_position_ones(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    batch = padded_batch(tokenizer)
    losses, grads = [], []
    for full in (False, True):
        model.zero_grad(set_to_none=True)
        if full:
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
            mask = batch["loss_mask"][:, 1:].bool()
            loss = torch.nn.functional.cross_entropy(logits[mask], batch["input_ids"][:, 1:][mask])
        else:
            loss = reply_loss(model, batch)
        loss.backward()
        losses.append(loss.detach())
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    model.zero_grad(set_to_none=True)
    assert float(losses[0]) > 0
    torch.testing.assert_close(losses[0], losses[1], rtol=1e-6, atol=1e-6)
    for name, value in grads[1].items():
        torch.testing.assert_close(grads[0][name], value, rtol=1e-5, atol=1e-7, msg=name)


def rl_batch(tokenizer):
    """RL training rows as the trainers see them: one row per turn (history 0) of groups of 4 FrozenLake and Sokoban
    episodes, each group from one start state, played by a noisy oracle so that members' replies and later states
    differ; right-padded, replies in the loss mask; plus a row with nothing in its loss mask."""
    from agentgym_bench.rollout.engine import EnvGroups
    from agentgym_bench.rollout.scripted import NoisyOraclePolicy
    from agentgym_bench.rollout.tokens import collate, step_token_views

    groups = EnvGroups(["AgentFrozenLake-v0", "AgentSokoban-v0"], [2, 2], 4, env_kwargs={"prompt": "compact"},
                       seed=10_000)
    trajectories = groups.rollout(NoisyOraclePolicy(0.5, seed=0), history=0)
    batch = collate([v for t in trajectories for v in step_token_views(t, tokenizer)], tokenizer.pad_token_id)
    batch["loss_mask"][-1] = False
    return batch


@pytest.mark.parametrize("architecture", ["gpt2", "llama"])
def test_shared_prefixes_give_logits_at_s_logits_and_gradients(model_and_tokenizer, architecture):
    """Rows of varying lengths that share prompts (and one without a wanted position): the logits and the gradient of
    a loss on them equal :func:`logits_at`'s up to round-off, while the prompts ran once (the first forward's rows)."""
    from trainers.sft.default_model import ModelSize, build_model

    tokenizer = model_and_tokenizer[1]
    model = model_and_tokenizer[0] if architecture == "gpt2" else build_model(
        len(tokenizer), pad_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id,
        size=ModelSize(architecture="llama"))
    batch = rl_batch(tokenizer)
    ids, att, predicts = batch["input_ids"], batch["attention_mask"], batch["loss_mask"][:, 1:].bool()
    assert len(set(att.sum(1).tolist())) > 3  # rows of many lengths
    rows_seen = []
    counting = model.register_forward_pre_hook(lambda _m, _a, kw: rows_seen.append(len(kw["input_ids"])),
                                               with_kwargs=True)
    results = []
    for head in (logits_at, logits_at_shared_prefixes):
        model.zero_grad(set_to_none=True)
        logits = head(model, ids, att, predicts)
        torch.log_softmax(logits, -1).gather(1, ids[:, 1:][predicts][:, None]).sum().backward()
        results.append((logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    counting.remove()
    model.zero_grad(set_to_none=True)
    assert rows_seen[0] == len(ids) and rows_seen[2] == len(ids)  # logits_at: one forward of every row
    prompts = {tuple(ids[i, : int(predicts[i].int().argmax())].tolist()) for i in range(len(ids) - 1)}
    assert rows_seen[1] <= len(prompts) + 1 < len(ids)  # shared: each distinct prompt once, then the suffixes
    (logits, grads), (shared, shared_grads) = results
    assert shared.shape == logits.shape == (int(predicts.sum()), len(tokenizer))
    torch.testing.assert_close(shared, logits, rtol=1e-5, atol=1e-5)
    for name, value in grads.items():  # sums over many rows in another order: compared as a whole
        assert float((shared_grads[name] - value).norm()) <= 1e-5 * float(value.norm()), name
