"""The output head on chosen positions only (``logits_at``) and the warm start's loss built on it, against the
full-position computation (every position's logits, masked afterwards), on the default model."""

import torch

from agentgym_bench.rollout.heads import logits_at
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
