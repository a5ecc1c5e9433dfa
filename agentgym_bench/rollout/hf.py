"""Hugging Face transformers generation backend: batched, left-padded, KV-cached sampling on CPU or GPU.

The sampling loop is written here rather than calling ``model.generate``: it draws from an owned
``torch.Generator`` (``generate`` uses the global RNG), reports the log-probability of every sampled token, and
stays small. It works for any causal LM whose forward takes ``input_ids``, ``attention_mask``, ``position_ids``
and a KV cache (``cache`` in recent transformers, ``past_key_values`` before: :func:`cache_argument`) — GPT-2 (the
default model), Qwen2, Llama, ... Where the forward takes ``logits_to_keep`` (:func:`logits_argument`) the output
head runs on the last position only, the prompt's included. Rows of a batch with the same prompt (an RL group's
members, often) share one prefill: the prompt runs through the model once and its KV cache is copied to each row.
After the prefill the cache and the attention mask get room for the whole reply at once (:func:`reserve`), so a
decode step writes one position in place instead of copying the cache by ``torch.cat``; the logits are bit-identical.

:func:`load_model` loads ``(model, tokenizer)`` from a Hugging Face folder, a name under the home or a hub id: the
one loader of every backend, command and trainer.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch  # noqa: TID253 - the HF backend: imported only where a model runs (through specs, or trainers/)

from agentgym_bench.agent.tools import offered_tools
from agentgym_bench.errors import UserError
from agentgym_bench.paths import resolve_model
from agentgym_bench.rollout.policy import Generation, Message, key_seed
from agentgym_bench.rollout.tokens import check_model_files, encode_many, no_tokenizer_note, render_many


def cache_argument(model: Any) -> str:
    """The name ``model``'s forward takes and returns its KV cache under: ``"cache"`` (recent transformers; 5.24
    warns on the old name and drops it in 5.40) or ``"past_key_values"`` (earlier versions). A PEFT wrapper passes
    keyword arguments on to its base model, which decides."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def logits_argument(model: Any) -> str | None:
    """The name ``model``'s forward takes the number of last positions to compute logits for under:
    ``"logits_to_keep"`` (recent transformers, GPT-2 and Llama among them), ``"num_logits_to_keep"`` (the older
    name, on the models that had it), or ``None`` (logits on every position)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    parameters = inspect.signature(base.forward).parameters
    return next((name for name in ("logits_to_keep", "num_logits_to_keep") if name in parameters), None)


def stop_token_ids(generation_config: Any, tokenizer: Any) -> list[int]:
    """The ids that end a reply: the model's ``generation_config.eos_token_id`` (int or list) and the tokenizer's
    ``eos_token_id``. No model family is special-cased; Qwen2.5-Instruct lists ``<|im_end|>`` and ``<|endoftext|>``
    there, the default model ``<|end|>``."""
    ids: set[int] = set()
    for value in (generation_config.eos_token_id, tokenizer.eos_token_id):
        if value is None:
            continue
        ids.update([value] if isinstance(value, int) else value)
    if not ids:
        raise ValueError("neither the model's generation_config nor the tokenizer defines an eos token id")
    return sorted(ids)


def decode_reply(tokenizer: Any, stop_ids: Sequence[int], ids: Sequence[int]) -> str:
    """A reply's text from its token ids, as :class:`HFPolicy` decodes every reply: the ids before a final stop token
    (``stop_ids``), special tokens skipped. The one rule that binds a reply's text to its tokens (a leaderboard's
    re-generation check refuses a file whose texts are not this of its tokens)."""
    text_ids = list(ids[:-1]) if ids and ids[-1] in stop_ids else list(ids)
    return tokenizer.decode(text_ids, skip_special_tokens=True)


def load_tokenizer(path: str | os.PathLike) -> tuple[Any, list[int]]:
    """A local model folder's tokenizer and stop ids (:func:`stop_token_ids` of its generation config), without
    loading the weights: what reading a reply's tokens needs. The generation config is ``generation_config.json``,
    else derived from ``config.json``, as ``from_pretrained`` does for the model."""
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    with no_progress_bars():
        tokenizer = AutoTokenizer.from_pretrained(path)
        try:
            generation_config = GenerationConfig.from_pretrained(path)
        except OSError:
            generation_config = GenerationConfig.from_model_config(AutoConfig.from_pretrained(path))
    return tokenizer, stop_token_ids(generation_config, tokenizer)


def expandable(cache: Any) -> bool:
    """Whether ``cache.batch_select_indices`` copies rows of every state the cache holds, repeated indices too: a
    cache whose layers are all transformers' (5.24) ``DynamicLayer``, ``DynamicSlidingWindowLayer`` or
    ``DynamicIndexedLayer``, which index plain tensors. Static layers have no such method; quantized and linear
    attention layers keep states it leaves as they are."""
    from transformers import cache_utils

    kinds = tuple(getattr(cache_utils, name) for name in ("DynamicLayer", "DynamicSlidingWindowLayer",
                                                          "DynamicIndexedLayer") if hasattr(cache_utils, name))
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer) in kinds for layer in layers)


def reserve(cache: Any, capacity: int) -> Any:
    """Give each of ``cache``'s plain ``DynamicLayer`` layers (transformers 5.24) room for ``capacity`` positions
    at once (:func:`reserved_layer`), so that decoding writes each step's keys and values in place instead of growing
    them by ``torch.cat``; other layers (sliding window, quantized, static, linear attention) are left as they are.
    The keys and values the attention reads are the same numbers either way (checked token for token against the
    plain cache, on the published checkpoint and a Llama model). Returns ``cache``."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None) or []
    for i, layer in enumerate(layers):
        if type(layer) is DynamicLayer and layer.is_initialized and layer.keys.dim() == 4:
            layers[i] = reserved_layer()(layer.keys, layer.values, capacity)
    return cache


@functools.cache
def reserved_layer() -> type:
    """The class of :func:`reserve`'s layers, defined on first use (transformers is imported only where a model
    runs): a ``DynamicLayer`` whose keys and values live in ``(B, H, capacity, D)`` buffers. ``keys`` and ``values``
    are views of the filled positions; ``update`` copies the new positions into the buffers (which double if ever
    full) and ``batch_select_indices`` indexes the buffers' rows, repeated indices too."""
    from transformers.cache_utils import DynamicLayer

    class ReservedLayer(DynamicLayer):
        def __init__(self, keys: torch.Tensor, values: torch.Tensor, capacity: int):
            super().__init__()
            self.device, self.is_initialized, self.length = keys.device, True, keys.shape[-2]
            self.key_buffer, self.value_buffer = self._buffer(keys, capacity), self._buffer(values, capacity)
            self._views()

        @staticmethod
        def _buffer(states: torch.Tensor, capacity: int) -> torch.Tensor:
            batch, heads, length, dim = states.shape
            buffer = states.new_empty((batch, heads, max(capacity, length), dim))
            buffer[:, :, :length] = states
            return buffer

        def _views(self) -> None:
            self.keys = self.key_buffer[:, :, : self.length]
            self.values = self.value_buffer[:, :, : self.length]

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
                   ) -> tuple[torch.Tensor, torch.Tensor]:
            end = self.length + key_states.shape[-2]
            if end > self.key_buffer.shape[-2]:
                self.key_buffer = self._buffer(self.keys, 2 * end)
                self.value_buffer = self._buffer(self.values, 2 * end)
            self.key_buffer[:, :, self.length : end] = key_states
            self.value_buffer[:, :, self.length : end] = value_states
            self.length = end
            self._views()
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self.length

        def crop(self, tokens_to_remove: int) -> None:
            super().crop(tokens_to_remove)
            self.length = self.keys.shape[-2]

        def batch_repeat_interleave(self, repeats: int) -> None:
            self.key_buffer = self.key_buffer.repeat_interleave(repeats, dim=0)
            self.value_buffer = self.value_buffer.repeat_interleave(repeats, dim=0)
            self._views()

        def batch_select_indices(self, indices: torch.Tensor) -> None:
            self.key_buffer, self.value_buffer = self.key_buffer[indices], self.value_buffer[indices]
            self._views()

        def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
            self.batch_select_indices(beam_idx.to(self.key_buffer.device))

    return ReservedLayer


LogitsProcessor = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``processor(generated, logits) -> logits``: transformers' ``LogitsProcessor`` convention, called before each
token is sampled with the reply's tokens so far (``(R, t)``, the prompt not included) and the next token's logits
(``(R, V)``, float32) of the rows still generating."""


@dataclass
class TopGeneration(Generation):
    """A :class:`~agentgym_bench.rollout.policy.Generation` with, for each generated token, the ``top_logprobs``
    most likely tokens of the distribution it was sampled from: ``(token id, log-probability)``, most likely first
    (tokens the sampler could not pick, outside ``top_p``, left out)."""

    top_logprobs: list[list[tuple[int, float]]] | None = None


class HFPolicy:
    """Generate replies with a transformers causal LM.

    Each call renders every conversation with the tokenizer's chat template (``add_generation_prompt=True``),
    left-pads the batch and samples up to ``max_new_tokens`` tokens per row with a KV cache; a row stops at its
    first stop token (:func:`stop_token_ids`). Replies are decoded without special tokens. :meth:`generate_text`
    continues rendered prompt strings and :meth:`generate_ids` prompt token ids (token-in-token-out: a multi-turn
    prompt built from the sampled ids, never re-rendered or re-tokenised).

    ``Generation.token_ids`` are the sampled ids including the stop token when one was sampled;
    ``Generation.logprobs`` are their log-probabilities under the distribution sampled from (after temperature and
    top-p; at ``temperature=0``, under the unmodified model). The model is used as given (``model.eval()`` is not
    called), so a trainer can pass the model it trains.

    Arguments:
        model: a ``PreTrainedModel`` for causal LM.
        tokenizer: its tokenizer; needs a chat template and a pad token (the eos token is used if pad is unset).
        temperature: 0 means greedy.
        top_p: nucleus sampling threshold in (0, 1].
        max_new_tokens: reply budget in tokens.
        seed: seeds the policy's own ``torch.Generator``; the same seed and inputs give the same replies.
        max_batch_size: split larger batches into chunks of this many conversations (``None``: one chunk).
        overlong: what a prompt that does not fit the model's positions (with ``max_new_tokens``) gets:
            ``"error"`` (a ``ValueError``, the default: a training config that cannot work should stop) or
            ``"empty"`` (an empty reply without running the model, which the env scores as an invalid turn: a
            benchmark evaluation goes on, and the model scores nothing where it cannot read the page).
        stop_strings: strings that end a row's reply (OpenAI's ``stop``, for ``serve``): after each step, a row
            whose decoded reply so far (special tokens skipped, as replies are decoded) holds one ends there, its
            reply the tokens up to the one that completed it (the text kept whole: ``serve`` cuts it before the stop
            string), and generation stops as soon as every row has a stop string or a stop token. Until then such a
            row stays in the batch, so the other rows sample exactly as without stop strings (the shared generator's
            draws do not shift) and every reply is the one generated without them, cut. Checked by decoding, which
            any tokenizer can: transformers' ``StopStringCriteria`` (5.24) matches token strings and raises on the
            default model's word-level vocabulary.
        logits_processors: :data:`LogitsProcessor` callables applied in order to each step's logits before
            temperature and ``top_p`` (``serve``'s ``logit_bias`` and penalties); the log-probabilities reported are
            then under the processed distribution. None by default, and then the logits go to the sampler untouched.
        top_logprobs: with ``k > 0`` every reply is a :class:`TopGeneration` carrying, for each token, the ``k`` most
            likely tokens of the distribution it was sampled from (``serve``'s ``top_logprobs``).
        share_prefill: prefill each distinct prompt of a batch once (the rows then sample independently, as
            before); False prefills every row, for benchmarks and debugging. The replies are the same either way,
            the log-probabilities up to float rounding (the prefill's batch size differs).
    """

    def __init__(self, model: Any, tokenizer: Any, *, temperature: float = 1.0, top_p: float = 1.0,
                 max_new_tokens: int = 32, seed: int = 0, max_batch_size: int | None = None,
                 overlong: str = "error", stop_strings: Sequence[str] = (),
                 logits_processors: Sequence[LogitsProcessor] = (), top_logprobs: int = 0,
                 share_prefill: bool = True):
        if not 0 <= temperature < math.inf:
            raise ValueError(f"temperature={temperature} must be a finite number >= 0")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p={top_p} must be in (0, 1]")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens={max_new_tokens} must be >= 1")
        if max_batch_size is not None and max_batch_size < 1:
            raise ValueError(f"max_batch_size={max_batch_size} must be >= 1 or None")
        if overlong not in ("error", "empty"):
            raise ValueError(f"overlong={overlong!r} must be 'error' or 'empty'")
        if top_logprobs < 0:
            raise ValueError(f"top_logprobs={top_logprobs} must be >= 0")
        if not isinstance(share_prefill, bool):
            raise ValueError(f"share_prefill={share_prefill!r} must be True or False")
        check_model_files(model, tokenizer)
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_new_tokens = max_new_tokens
        self.max_batch_size = max_batch_size
        self.overlong = overlong
        self.stop_strings = [s for s in stop_strings if s]
        self.logits_processors = list(logits_processors)
        self.top_logprobs = top_logprobs
        self.share_prefill = share_prefill
        self.reserve_cache = True  # False: the KV cache and mask grow by torch.cat each step (tests, benchmarks)
        self.stop_ids = stop_token_ids(model.generation_config, tokenizer)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.stop_ids[0]
        self.max_positions = getattr(model.config, "max_position_embeddings", None)
        self.logits_argument = logits_argument(model)  # None: the head runs on every position of the prompt
        self.device = next(model.parameters()).device
        self.seed = seed
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)
        self._top: tuple[torch.Tensor, torch.Tensor] | None = None  # top_logprobs' ids and values, (B, N, k) each

    @classmethod
    def from_pretrained(cls, path: str, *, device: str = "cpu", dtype: Any = None, **kwargs: Any) -> HFPolicy:
        """Load a model (``AutoModelForCausalLM`` / ``AutoTokenizer``) and wrap it.

        ``path``: a folder (``~`` expanded), a name under ``$AGENTGYM_BENCH_HOME/models`` (``"warmstart"``,
        ``"default"``) or a hub id; see :func:`agentgym_bench.paths.resolve_model`.
        """
        model, tokenizer = load_model(path, device=device, dtype=dtype)
        return cls(model, tokenizer, **kwargs)

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[Any] | None = None,
                 keys: Sequence[tuple[int, ...]] | None = None) -> list[Generation]:
        """Reply to each conversation; ``envs`` only give the ``tools`` an agent env in tool format offers (passed to
        the chat template). With ``keys`` (one per conversation) each row samples
        from its own ``torch.Generator`` seeded by :func:`~agentgym_bench.rollout.policy.key_seed`, so its reply does
        not depend on the rest of the batch; without, the batch shares :attr:`generator`."""
        if keys is not None and len(keys) != len(conversations):
            raise ValueError(f"{len(keys)} keys for {len(conversations)} conversations")
        ids = self.prompt_ids(conversations, envs)
        out: list[Generation | None] = [None] * len(ids)
        rows = [i for i, row in enumerate(ids) if not self.answers_empty(row)]
        for i in set(range(len(ids))) - set(rows):
            out[i] = Generation("", [], [], prompt_tokens=len(ids[i]))
        replies = self.generate_ids([ids[i] for i in rows], None if keys is None else [keys[i] for i in rows])
        for i, reply in zip(rows, replies, strict=True):
            out[i] = reply
        return [g for g in out if g is not None]

    def prompt_ids(self, conversations: Sequence[list[Message]], envs: Sequence[Any] | None = None
                   ) -> list[list[int]]:
        """Each conversation's prompt as the model reads it (chat template with the ``tools`` ``envs`` offer, then
        token ids; each distinct prompt tokenised once)."""
        prompts = render_many(self.tokenizer, conversations, offered_tools(envs, len(conversations)))
        encoded = encode_many(self.tokenizer, prompts)
        return [list(encoded[p]) for p in prompts]

    def answers_empty(self, prompt: Sequence[int]) -> bool:
        """Whether a prompt of these ids gets an empty reply: with ``overlong="empty"``, one whose reply budget does
        not fit in the model's positions."""
        return (self.overlong == "empty" and self.max_positions is not None
                and len(prompt) + self.max_new_tokens > self.max_positions)

    def generate_text(self, prompts: Sequence[str], keys: Sequence[tuple[int, ...]] | None = None
                      ) -> list[Generation]:
        """Continue already rendered prompt strings (one batch, no chunking); ``keys`` as in :meth:`generate`."""
        if not prompts:
            return []
        encoded = encode_many(self.tokenizer, prompts)
        return self._continue([list(encoded[p]) for p in prompts], None if keys is None else
                              [key_seed(self.seed, k) for k in keys])

    def generate_ids(self, prompts: Sequence[Sequence[int]], keys: Sequence[tuple[int, ...]] | None = None,
                     seeds: Sequence[int] | None = None) -> list[Generation]:
        """Continue prompts given as token ids, nothing re-tokenised (token-in-token-out,
        :class:`~agentgym_bench.rollout.tokens.TokenInTokenOut`), in chunks of ``max_batch_size``; ``keys`` as in
        :meth:`generate`. ``seeds``, instead of ``keys``: each row's own generator seed, e.g. an endpoint request's
        ``seed`` (a row seeded with ``key_seed(policy seed, key)`` samples exactly what the keyed row samples)."""
        rows = keys if keys is not None else seeds
        if rows is not None and len(rows) != len(prompts):
            raise ValueError(f"{len(rows)} keys or seeds for {len(prompts)} prompts")
        if keys is not None and seeds is not None:
            raise ValueError("give keys or seeds, not both")
        seeds = [key_seed(self.seed, k) for k in keys] if keys is not None else seeds
        size = self.max_batch_size or max(len(prompts), 1)
        out: list[Generation] = []
        for start in range(0, len(prompts), size):
            out += self._continue([list(p) for p in prompts[start:start + size]],
                                  None if seeds is None else seeds[start:start + size])
        return out

    def _continue(self, prompts: list[list[int]], seeds: Sequence[int] | None) -> list[Generation]:
        """Left-pad one batch of prompt ids, sample (each row from a generator of its own seed in ``seeds``, else
        from the shared :attr:`generator`), and cut each row at its first stop token."""
        if not prompts:
            return []
        if any(not row for row in prompts):
            raise ValueError("an empty prompt cannot be continued")
        generators = None
        if seeds is not None:
            generators = [torch.Generator(device=self.device).manual_seed(seed) for seed in seeds]
        length = max(len(row) for row in prompts)
        if self.max_positions is not None and length + self.max_new_tokens > self.max_positions:
            raise PromptTooLong(length, self.max_new_tokens, self.max_positions)
        input_ids = torch.tensor([[self.pad_id] * (length - len(row)) + row for row in prompts], dtype=torch.long)
        attention_mask = torch.tensor([[0] * (length - len(row)) + [1] * len(row) for row in prompts],
                                      dtype=torch.long)
        self._top = None
        tokens, logprobs, lengths = self._sample(input_ids.to(self.device), attention_mask.to(self.device),
                                                 generators)
        results: list[Generation] = []
        stops = set(self.stop_ids)
        for row, (row_tokens, row_logprobs, n, prompt) in enumerate(zip(tokens.tolist(), logprobs.tolist(),
                                                                         lengths.tolist(), prompts, strict=True)):
            ids = row_tokens[:n]
            reply = (decode_reply(self.tokenizer, stops, ids), ids, row_logprobs[:n])
            if self._top is None:
                results.append(Generation(*reply, prompt_tokens=len(prompt)))
                continue
            top_ids, top_logprobs = self._top[0][row, :n].tolist(), self._top[1][row, :n].tolist()
            top = [[(i, lp) for i, lp in zip(step_ids, step_lps, strict=True) if lp > -math.inf]
                   for step_ids, step_lps in zip(top_ids, top_logprobs, strict=True)]
            results.append(TopGeneration(*reply, prompt_tokens=len(prompt), top_logprobs=top))
        return results

    @torch.no_grad()
    def _sample(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                generators: list[torch.Generator] | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample ``(B, N)`` token ids and their log-probs, ``N <= max_new_tokens``, and each row's length (its
        reply's tokens: up to its stop token, or to the token that completed a :attr:`stop_strings` string, included;
        later columns hold pad or tokens past the stop string). ``generators``: one per row (keyed sampling), else the
        shared :attr:`generator`.

        With :attr:`share_prefill`, rows with the same (padded) prompt are prefilled once and the cache and logits
        copied to each of them (:meth:`_prefill`). Finished rows leave the batch (and the KV cache,
        ``Cache.batch_select_indices``) so they cost nothing. The output head runs on each row's last position only
        (:func:`logits_argument`), the prompt's included. With :attr:`reserve_cache` (the default) the cache's layers
        and the mask are reserved for ``prompt + max_new_tokens`` positions after the prefill (:func:`reserve`); the
        plain path grows both by ``torch.cat`` each step. Both give the same logits bit for bit (tested).
        """
        batch = input_ids.shape[0]
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        cache_name = cache_argument(self.model)
        last = {self.logits_argument: 1} if self.logits_argument else {}
        cache, logits = self._prefill(input_ids, attention_mask, position_ids, cache_name, last)
        length = input_ids.shape[1]
        if self.reserve_cache:  # room for every step at once: no torch.cat per step (same numbers, see reserve)
            cache = reserve(cache, length + self.max_new_tokens)
            mask = attention_mask.new_ones((batch, length + self.max_new_tokens))
            mask[:, :length] = attention_mask
            attention_mask = mask
        next_position = position_ids[:, -1:] + 1
        stop_ids = torch.tensor(self.stop_ids, device=self.device)
        tokens = torch.full((batch, self.max_new_tokens), self.pad_id, dtype=torch.long, device=self.device)
        logprobs = torch.zeros((batch, self.max_new_tokens), device=self.device)
        rows = torch.arange(batch, device=self.device)  # the rows still generating
        lengths = torch.zeros(batch, dtype=torch.long, device=self.device)
        said = torch.zeros(batch, dtype=torch.bool, device=self.device)  # rows whose reply holds a stop string
        if self.top_logprobs:
            k = min(self.top_logprobs, logits.shape[-1])
            self._top = (torch.zeros((batch, self.max_new_tokens, k), dtype=torch.long, device=self.device),
                         torch.zeros((batch, self.max_new_tokens, k), device=self.device))
        steps = 0
        for step in range(self.max_new_tokens):
            step_logits = logits.float()
            for processor in self.logits_processors:
                step_logits = processor(tokens[rows, :step], step_logits)
            self._rows, self._step = rows, step  # where _pick records the top log-probabilities
            token, logprob = self._pick(step_logits,
                                        None if generators is None else [generators[r] for r in rows.tolist()])
            tokens[rows, step], logprobs[rows, step] = token, logprob
            lengths[rows[~said[rows]]] = step + 1
            steps = step + 1
            going = ~torch.isin(token, stop_ids)
            if self.stop_strings:
                open_rows = rows[~said[rows]]
                said[open_rows] = self._stopped_by_string(tokens[open_rows, : step + 1])
            if step == self.max_new_tokens - 1 or not bool((going & ~said[rows]).any()):
                break
            if not bool(going.all()):
                keep = going.nonzero()[:, 0]
                rows, token, next_position = rows[keep], token[keep], next_position[keep]
                attention_mask = attention_mask[keep]
                cache.batch_select_indices(keep)
            if self.reserve_cache:
                step_mask = attention_mask[:, : length + step + 1]
            else:
                attention_mask = step_mask = torch.cat([attention_mask, torch.ones_like(attention_mask[:, :1])], 1)
            out = self.model(input_ids=token[:, None], attention_mask=step_mask, position_ids=next_position,
                             use_cache=True, **{cache_name: cache}, **last)
            cache, logits = getattr(out, cache_name), out.logits[:, -1, :]
            next_position = next_position + 1
        return tokens[:, :steps], logprobs[:, :steps], lengths

    def _prefill(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                 cache_name: str, last: dict[str, int]) -> tuple[Any, torch.Tensor]:
        """The prompt's forward pass: the KV cache and each row's last logits. With :attr:`share_prefill` and
        repeated rows, only the distinct rows run and :func:`expandable` caches are indexed back to the batch;
        a cache that is not expandable is thrown away and every row prefilled."""
        def forward(ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> tuple[Any, torch.Tensor]:
            out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **last)
            return getattr(out, cache_name), out.logits[:, -1, :]

        if self.share_prefill and input_ids.shape[0] > 1:
            length = input_ids.shape[1]
            distinct, inverse = torch.unique(torch.cat([input_ids, attention_mask], 1), dim=0, return_inverse=True)
            if distinct.shape[0] < input_ids.shape[0]:
                mask = distinct[:, length:]
                cache, logits = forward(distinct[:, :length], mask, (mask.cumsum(-1) - 1).clamp(min=0))
                if expandable(cache):
                    cache.batch_select_indices(inverse)
                    return cache, logits[inverse]
        return forward(input_ids, attention_mask, position_ids)

    def _stopped_by_string(self, generated: torch.Tensor) -> torch.Tensor:
        """Which rows of ``generated`` (``(R, n)``: each row's tokens so far) decode to a text holding one of
        :attr:`stop_strings` (special tokens skipped, as replies are decoded)."""
        texts = self.tokenizer.batch_decode(generated.tolist(), skip_special_tokens=True)
        return torch.tensor([any(s in text for s in self.stop_strings) for text in texts], device=generated.device)

    def _pick(self, logits: torch.Tensor, generators: list[torch.Generator] | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """One token per row from ``(B, V)`` logits, and its log-probability under the sampling distribution.

        Each row inverts its CDF at one uniform draw: from its own generator with ``generators`` (one per row), else
        from :attr:`generator` (one draw a row, in row order; ``torch.multinomial`` draws one exponential per
        vocabulary entry instead: about a fifth of an RL rollout's time at a 2.5k-token vocabulary). With
        :attr:`top_logprobs`, the rows' most likely tokens go to ``self._top`` (at the step :meth:`_sample` is at)."""
        if self.temperature == 0:
            token = logits.argmax(dim=-1)
            logp = torch.log_softmax(logits, dim=-1)
            self._keep_top(logp)
            return token, logp.gather(1, token[:, None])[:, 0]
        logp = sampling_logp(logits, self.temperature, self.top_p)
        self._keep_top(logp)
        u = (torch.rand(len(logp), generator=self.generator, device=logp.device) if generators is None else
             torch.cat([torch.rand(1, generator=g, device=logp.device) for g in generators]))
        cdf = logp.exp().cumsum(dim=-1)
        token = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None]).clamp(max=logp.shape[-1] - 1)[:, 0]
        # u on a flat stretch of the CDF (u = 0 before zero-probability tokens) picks a token it cannot sample
        off = ~torch.isfinite(logp.gather(1, token[:, None])[:, 0])
        if off.any():
            token[off] = logp[off].argmax(dim=-1)
        return token, logp.gather(1, token[:, None])[:, 0]


    def _keep_top(self, logp: torch.Tensor) -> None:
        """Record the :attr:`top_logprobs` most likely tokens of each row still generating (``self._rows``) at
        step ``self._step``; nothing without ``top_logprobs``."""
        if self._top is not None:
            values, ids = logp.topk(self._top[0].shape[-1], dim=-1)
            self._top[0][self._rows, self._step], self._top[1][self._rows, self._step] = ids, values


def sampling_logp(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """``(B, V)`` log-probabilities of the distribution :meth:`HFPolicy._pick` samples from, given ``(B, V)`` float
    logits: softmax at ``temperature`` (> 0), then nucleus ``top_p`` (the tokens ranked below the first ``top_p`` of
    the mass get probability 0) and renormalised."""
    logp = torch.log_softmax(logits / temperature, dim=-1)
    if top_p < 1:
        sorted_logp, order = logp.sort(dim=-1, descending=True)
        before = sorted_logp.exp().cumsum(dim=-1) - sorted_logp.exp()  # mass of the tokens ranked above
        sorted_logp = sorted_logp.masked_fill(before >= top_p, float("-inf"))
        logp = torch.full_like(logp, float("-inf")).scatter(1, order, sorted_logp)
        logp = torch.log_softmax(logp, dim=-1)
    return logp


@contextmanager
def no_progress_bars() -> Iterator[None]:
    """Hide transformers' progress bars (``Loading weights``, ``Writing model shards``) while a local model folder
    loads or saves: for a model of a few MB they flash by on every command and say nothing. The switch is
    ``transformers.utils.logging.disable_progress_bar`` (it also silences ``huggingface_hub``'s bars); the previous
    setting is restored afterwards, so a user's own loads keep theirs."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


class PromptTooLong(ValueError):
    """A prompt whose reply budget does not fit in the model's positions (``HFPolicy`` with ``overlong="error"``)."""

    def __init__(self, length: int, max_new_tokens: int, max_positions: int):
        self.length, self.max_new_tokens, self.max_positions = length, max_new_tokens, max_positions
        super().__init__(f"prompt of {length} tokens + max_new_tokens={max_new_tokens} exceeds the model's "
                         f"{max_positions} positions; shorten the prompt (prompt='compact', a history window), lower "
                         "max_new_tokens, or build the policy with overlong='empty' (an empty reply: an invalid turn)")


def check_device(device: Any) -> torch.device:
    """``device`` as a ``torch.device``; a one-line :class:`UserError` for a name that is none or CUDA without GPU."""
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        raise UserError(f"device {device!r} is not a torch device: cpu, cuda or cuda:N") from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        build = "a CPU build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}, finding no GPU"
        raise UserError(f"device {str(device)!r}: this torch ({torch.__version__}) is {build}; use the cpu "
                        "(--device cpu; in a trainer's config, device=cpu), or a machine with an NVIDIA GPU and a "
                        "CUDA build of torch")
    return resolved


def load_model(path: str | os.PathLike = "default", *, device: str = "cpu", dtype=None):
    """Load ``(model, tokenizer)`` from a Hugging Face folder or hub id, exactly as for any causal LM.

    ``path`` goes through :func:`agentgym_bench.paths.resolve_model`: a folder (``~`` expanded), a name under
    ``$AGENTGYM_BENCH_HOME/models`` (``"default"``, ``"warmstart"``) or a hub id. ``dtype=None`` on a CPU computes
    in float32 whatever the checkpoint stores (the boards' published models store bfloat16, which converts exactly);
    elsewhere it keeps the checkpoint's dtype, as transformers does. A local folder loads without progress bars
    (:func:`no_progress_bars`); a hub id keeps them (it may download).

    Raises:
        UserError: a built model name or local path that does not exist (the message says what to run), or a folder
            or hub id that transformers cannot load.
    """
    path = resolve_model(path)  # before importing transformers: a wrong name fails at once
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype is None and str(device) == "cpu":
        dtype = torch.float32
    check_device(device)
    if Path(path).is_dir() and not Path(path, "config.json").is_file():
        raise UserError(f"cannot load a model from {path!r}: it has no config.json, so it is not a Hugging Face model "
                        "folder (one holds config.json, the weights and the tokenizer's files)")
    try:
        with no_progress_bars() if Path(path).is_dir() else nullcontext():
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    except (OSError, ValueError) as err:  # transformers: no such repo / folder without a model / unknown architecture
        said = " ".join(str(err).split()) or type(err).__name__  # transformers' messages run over several lines
        raise UserError(f"cannot load a model from {path!r}: {said[:400]}{no_tokenizer_note(path)}") from err
    check_model_files(model, tokenizer, repr(path), path)
    return model.to(device).eval(), tokenizer
