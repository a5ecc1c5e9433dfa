import gymnasium as gym
import pytest
import torch

from agentgym_bench.rollout.hf import HFPolicy, stop_token_ids
from tests.rollout.toy_game import TOY_ID, register


def conversations(n=6):
    """Conversations of different lengths (1 to 3 user turns) on the toy game (registered here too: tests outside
    tests/rollout use them without its conftest)."""
    register()
    env = gym.make(TOY_ID, prompt="compact")
    out = []
    for i in range(n):
        obs, _ = env.reset(seed=i)
        conv = [{"role": "user", "content": obs}]
        for _ in range(i % 3):
            conv += [{"role": "assistant", "content": "<think></think><answer>Left</answer>"},
                     {"role": "user", "content": obs}]
        out.append(conv)
    return out


def test_same_seed_same_replies_and_global_rng_untouched(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    state = torch.random.get_rng_state()
    a = HFPolicy(model, tokenizer, seed=1, max_new_tokens=8).generate(conversations())
    b = HFPolicy(model, tokenizer, seed=1, max_new_tokens=8).generate(conversations())
    c = HFPolicy(model, tokenizer, seed=2, max_new_tokens=8).generate(conversations())
    assert torch.equal(torch.random.get_rng_state(), state)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    assert [g.token_ids for g in a] != [g.token_ids for g in c]


def test_greedy_batch_of_mixed_lengths_equals_one_at_a_time(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    policy = HFPolicy(model, tokenizer, temperature=0, max_new_tokens=10)
    convs = conversations()
    batch = policy.generate(convs)
    single = [policy.generate([c])[0] for c in convs]
    assert [g.token_ids for g in batch] == [g.token_ids for g in single]
    assert [g.text for g in batch] == [g.text for g in single]
    for a, b in zip(batch, single, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_chunked_batches_give_the_same_greedy_replies(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    whole = HFPolicy(model, tokenizer, temperature=0, max_new_tokens=6).generate(conversations())
    chunked = HFPolicy(model, tokenizer, temperature=0, max_new_tokens=6, max_batch_size=4).generate(conversations())
    assert [g.token_ids for g in whole] == [g.token_ids for g in chunked]


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize(("temperature", "top_p"), [(1.0, 1.0), (0.7, 1.0), (1.0, 0.8)])
def test_a_sampled_token_follows_the_sampling_distribution(model_and_tokenizer, keyed, temperature, top_p):
    """Each row inverts its CDF at one uniform draw, from the policy's generator or from its own (keyed): the
    tokens' frequencies over 40,000 rows are the softmax of logits / temperature (cut to the top_p nucleus), within
    five standard errors; a token outside the nucleus or of zero probability is never drawn; the reported log-prob
    is the token's under that distribution."""
    policy = HFPolicy(*model_and_tokenizer, seed=3, temperature=temperature, top_p=top_p)
    row = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, float("-inf")])
    n = 40_000
    generators = [torch.Generator().manual_seed(i) for i in range(n)] if keyed else None
    tokens, logprobs = policy._pick(row.repeat(n, 1), generators)
    p = torch.softmax(row / temperature, -1)
    nucleus = (p.cumsum(0) - p) < top_p  # the tokens whose higher-ranked mass is below top_p (row is sorted)
    q = torch.where(nucleus, p, 0.0) / p[nucleus].sum()
    frequency = torch.bincount(tokens, minlength=len(row)).double() / n
    assert torch.all((frequency - q).abs() <= 5 * (q * (1 - q) / n).sqrt() + 1e-12)
    assert frequency[~nucleus].sum() == 0 and frequency[-1] == 0
    assert torch.allclose(logprobs, q.log()[tokens].float(), atol=1e-5)


def test_a_sharp_row_over_a_large_vocabulary_keeps_its_rare_mass(model_and_tokenizer):
    """A trained policy's row: one token at 0.99, the rest spread thinly over 2,537 (the default model's vocabulary),
    the top token in the middle so the rare tokens after it sit on a CDF near 1, where float32 steps are coarsest.
    Over 200,000 draws the rare tokens' total share (the exploration RL learns from) and the share of the 20 most
    likely of them are the softmax's within five standard errors. (Keyed draws invert the same CDF.)"""
    policy = HFPolicy(*model_and_tokenizer, seed=5, temperature=1.0)
    row = torch.randn(2537, generator=torch.Generator().manual_seed(0)) * 2 - 6
    row[1200] = torch.logsumexp(row, 0) + torch.log(torch.tensor(99.0))  # p(1200) = 0.99
    p = torch.softmax(row.double(), -1)
    n, chunk = 200_000, 20_000
    tokens = torch.cat([policy._pick(row.repeat(chunk, 1))[0] for _ in range(n // chunk)])
    frequency = torch.bincount(tokens, minlength=len(row)).double() / n
    rare = torch.ones(len(row), dtype=torch.bool)
    rare[1200] = False
    top = p.masked_fill(~rare, 0).topk(20).indices
    for q, f in ((p[rare].sum(), frequency[rare].sum()), (p[top].sum(), frequency[top].sum())):
        assert abs(f - q) <= 5 * (q * (1 - q) / n).sqrt()


def test_tiny_top_p_is_greedy(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    greedy = HFPolicy(model, tokenizer, temperature=0, max_new_tokens=6).generate(conversations())
    nucleus = HFPolicy(model, tokenizer, temperature=1.0, top_p=1e-6, max_new_tokens=6).generate(conversations())
    assert [g.token_ids for g in greedy] == [g.token_ids for g in nucleus]
    assert all(lp == pytest.approx(0.0, abs=1e-6) for g in nucleus for lp in g.logprobs)


def test_generation_fields(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    stops = set(stop_token_ids(model.generation_config, tokenizer))
    for g in HFPolicy(model, tokenizer, max_new_tokens=12, seed=5).generate(conversations(12)):
        assert 1 <= len(g.token_ids) <= 12 and len(g.logprobs) == len(g.token_ids)
        assert all(lp <= 0 for lp in g.logprobs)
        assert not stops & set(g.token_ids[:-1])  # a reply ends at its first stop token
        body = g.token_ids[:-1] if g.token_ids[-1] in stops else g.token_ids
        assert g.text == tokenizer.decode(body, skip_special_tokens=True)


def test_logprobs_match_a_full_forward_pass(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    conv = conversations(1)
    g = HFPolicy(model, tokenizer, max_new_tokens=8, seed=3).generate(conv)[0]
    prompt = tokenizer.apply_chat_template(conv[0], add_generation_prompt=True, tokenize=False)
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    full = torch.tensor([ids + g.token_ids])
    with torch.no_grad():
        logp = torch.log_softmax(model(full).logits[0, len(ids) - 1 : -1], dim=-1)
    expected = logp.gather(1, torch.tensor(g.token_ids)[:, None])[:, 0]
    assert g.logprobs == pytest.approx(expected.tolist(), abs=1e-4)


def test_too_long_prompt_is_a_clear_error(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    policy = HFPolicy(model, tokenizer, max_new_tokens=8)
    with pytest.raises(ValueError, match="positions"):
        policy.generate([[{"role": "user", "content": "_" * (model.config.n_positions + 100)}]])


def test_an_overlong_prompt_is_an_empty_reply_and_each_prompt_is_tokenised_once(model_and_tokenizer, monkeypatch):
    """``overlong="empty"`` (the board evaluation's setting): the prompt that does not fit gets an empty reply with
    its token count, the others the replies they get alone (keyed rows), and the prompts go through the tokenizer in
    one call, which both the length check and the model use."""
    model, tokenizer = model_and_tokenizer
    fits = conversations(3)
    long = [{"role": "user", "content": "_ " * model.config.n_positions}]
    policy = HFPolicy(model, tokenizer, max_new_tokens=8, seed=3, overlong="empty")
    alone = policy.generate(fits, keys=[(i,) for i in range(3)])
    calls = []
    tokenize = type(tokenizer).__call__
    monkeypatch.setattr(type(tokenizer), "__call__", lambda self, *a, **k: calls.append(1) or tokenize(self, *a, **k))
    mixed = policy.generate([fits[0], long, fits[1], fits[2]], keys=[(0,), (9,), (1,), (2,)])
    assert len(calls) == 1
    assert mixed[1].text == "" and mixed[1].token_ids == []
    assert mixed[1].prompt_tokens > model.config.n_positions
    assert [g.token_ids for g in (mixed[0], *mixed[2:])] == [g.token_ids for g in alone]


@pytest.mark.parametrize("kwargs", [{"temperature": -1}, {"top_p": 0}, {"max_new_tokens": 0},
                                    {"max_batch_size": 0}])
def test_bad_arguments(model_and_tokenizer, kwargs):
    model, tokenizer = model_and_tokenizer
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        HFPolicy(model, tokenizer, **kwargs)


def test_a_qwen2_architecture_takes_the_same_path(model_and_tokenizer):
    """A tiny randomly initialised Qwen2 (rotary positions, grouped-query attention): left padding and the KV cache
    must give the same greedy replies batched as one at a time."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = model_and_tokenizer[1]
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = Qwen2ForCausalLM(config).eval()
    policy = HFPolicy(model, tokenizer, temperature=0, max_new_tokens=8)
    convs = conversations()
    batch = policy.generate(convs)
    assert [g.token_ids for g in batch] == [policy.generate([c])[0].token_ids for c in convs]


@pytest.mark.parametrize("architecture", ["gpt2", "llama"])
def test_generation_uses_the_cache_argument_without_a_deprecation_warning(model_and_tokenizer, architecture):
    """transformers renamed ``past_key_values`` to ``cache`` (5.24 warns on every eval, 5.40 drops it): the
    sampler passes whichever name the installed version's forward takes, so no FutureWarning reaches users."""
    import warnings

    from transformers import LlamaConfig, LlamaForCausalLM

    model, tokenizer = model_and_tokenizer
    if architecture == "llama":
        config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, max_position_embeddings=512,
                             eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = LlamaForCausalLM(config).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        generations = HFPolicy(model, tokenizer, temperature=0, max_new_tokens=4).generate(conversations(3))
    assert all(len(g.token_ids) >= 1 for g in generations)


@pytest.mark.parametrize("architecture", ["gpt2", "llama"])
def test_logits_on_the_last_position_only_give_the_same_keyed_replies(model_and_tokenizer, architecture):
    """The output head runs on the last position only, the prompt's included (``logits_to_keep``); keyed sampling
    gives the same replies as with every position's logits. The default model, and its Llama form."""
    from trainers.sft.default_model import ModelSize, build_model

    model, tokenizer = model_and_tokenizer
    if architecture == "llama":
        model = build_model(len(tokenizer), pad_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id,
                            size=ModelSize(architecture="llama")).eval()
    convs, keys = conversations(24), [(k, 7) for k in range(24)]

    def generate(every_position):
        policy = HFPolicy(model, tokenizer, max_new_tokens=12, seed=4)
        if every_position:
            policy.logits_argument = None  # as before: the head on every position of the prompt
        widths = []  # positions the head ran on, per forward pass
        head = model.get_output_embeddings()
        hook = head.register_forward_hook(lambda _module, args, _out: widths.append(args[0].shape[1]))
        try:
            return policy.generate(convs, keys=keys), widths
        finally:
            hook.remove()

    (replies, widths), (want, want_widths) = generate(False), generate(True)
    assert widths == [1] * 12 and want_widths[0] > 1 and want_widths[1:] == [1] * 11  # prefill, then 11 steps
    assert [g.token_ids for g in replies] == [g.token_ids for g in want]
    for g, w in zip(replies, want, strict=True):
        assert g.logprobs == pytest.approx(w.logprobs, abs=1e-5)


def test_logits_processors_and_top_logprobs_leave_the_replies_as_they_were(model_and_tokenizer):
    """A processor that changes nothing and ``top_logprobs`` sample the same replies; the top tokens are of the
    distribution sampled from (at temperature 0 the first is the token taken); a processor that bans a token bans
    it."""
    model, tokenizer = model_and_tokenizer
    convs, keys = conversations(3), [(2, i) for i in range(3)]
    plain = HFPolicy(model, tokenizer, max_new_tokens=8, temperature=0).generate(convs, keys=keys)
    seen = []
    same = HFPolicy(model, tokenizer, max_new_tokens=8, temperature=0, top_logprobs=3,
                    logits_processors=[lambda ids, logits: seen.append(ids.shape) or logits])
    same = same.generate(convs, keys=keys)
    assert [(g.text, g.token_ids) for g in same] == [(g.text, g.token_ids) for g in plain]
    assert seen[0] == (3, 0) and seen[1][1] == 1  # the reply so far, not the prompt
    for g in same:
        assert [top[0][0] for top in g.top_logprobs] == g.token_ids and all(len(top) == 3 for top in g.top_logprobs)
        assert [top[0][1] for top in g.top_logprobs] == pytest.approx(g.logprobs)
    banned = plain[0].token_ids[0]

    def ban(ids, logits):
        return logits.index_fill(1, torch.tensor([banned]), float("-inf"))

    other = HFPolicy(model, tokenizer, max_new_tokens=8, temperature=0, logits_processors=[ban]).generate(convs[:1])
    assert banned not in other[0].token_ids
