"""Token views of trajectories: what a trainer feeds the model, built with the tokenizer's own chat template.

A :class:`TokenView` is one training row: ``input_ids``, a ``loss_mask`` that is 1 exactly on the tokens the model
generated (each reply and the stop token it emitted; never a prompt, observation or chat-template token), the
``spans`` ``[start, end)`` of those replies, and per-token ``rewards`` holding each turn's reward on the last token
of its reply.

Two shapes:

- :func:`trajectory_token_view`: the whole episode as one sequence (StarPO, trajectory-level samples). Needs the
  full conversation (``history=None``), since then every turn's prompt extends the previous one.
- :func:`step_token_views`: one row per turn, its prompt exactly as the model read it under the trajectory's history
  window, followed by the reply (GiGPO / verl-agent step-level samples; any window); :func:`step_views` the same
  for many trajectories, tokenising each distinct prompt once.

How the sequence is built, for any chat template: the prompt text of turn ``t`` is
``apply_chat_template(messages(t), add_generation_prompt=True, tokenize=False)``. Template text between replies is
tokenised as prompt; replies keep the token ids the policy sampled (``Turn.token_ids``; the ids whose log-probs a
PPO ratio needs), or, for text-only policies (oracle, HTTP APIs), the tokenised reply followed by the tokenizer's
eos token, so supervised fine-tuning teaches the model to stop. If a reply ends with a special token whose text the
template writes right after the reply (``<|end|>``, Qwen's ``<|im_end|>``), that text is not repeated. No model
family's token ids are special-cased. A template that does not render earlier turns verbatim (so the prompt of
turn ``t+1`` does not start with the prompt of turn ``t`` plus reply ``t``) is reported with a ``ValueError``.

Token-in-token-out (TITO), for templates that re-render history. Qwen3's published template drops the ``<think>``
part of assistant turns before the last user message, so the conversation is not prefix-stable. With TITO a
conversation is never re-rendered: the prompt of turn ``t+1`` is the prompt of turn ``t``, the reply's sampled ids,
then only the new segment (:func:`observation_segment`: the rest of the template's end-of-assistant text and the
new user turn with the generation prompt, rendered after a fixed base conversation, as SkyRL's generator and TRL's
tool-suffix do). :class:`TokenInTokenOut` makes a backend generate from those prompts, and
``trajectory_token_view(..., tito=True)`` builds the same sequence as the training row, so the row holds what the
model read. For prefix-stable templates (Qwen2.5, Llama 3, the default model) both give the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from agentgym_bench.agent.tools import offered_tools
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.policy import Message
from agentgym_bench.rollout.trajectory import Trajectory, Turn


@dataclass
class TokenView:
    """One training row.

    Attributes:
        input_ids: the token ids.
        loss_mask: 1 on model-generated tokens (the replies), 0 elsewhere; same length.
        rewards: each turn's reward on the last token of its reply, 0 elsewhere; same length.
        spans: ``[start, end)`` of each reply in ``input_ids``, in turn order.
        turns: the trajectory's turn index of each span.
    """

    input_ids: list[int]
    loss_mask: list[int]
    rewards: list[float]
    spans: list[tuple[int, int]]
    turns: list[int]

    @property
    def attention_mask(self) -> list[int]:
        """All ones (a view is unpadded; :func:`collate` pads)."""
        return [1] * len(self.input_ids)

    def __len__(self) -> int:
        return len(self.input_ids)


def render(tokenizer: Any, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> str:
    """The prompt text of ``messages`` (and the ``tools`` offered, if any) with the generation prompt, by the
    tokenizer's chat template."""
    return tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=True, tokenize=False)


def render_many(tokenizer: Any, conversations: Sequence[list[Message]],
                tools: Sequence[list[dict[str, Any]] | None] | None = None) -> list[str]:
    """:func:`render` of each conversation (offered ``tools[i]``, if given), each distinct one rendered once: a
    group's members often read the same prompt, and a chat template costs about 0.1 ms a call."""
    offered = tools if tools is not None else [None] * len(conversations)
    rendered: dict[str, str] = {}
    texts = []
    for messages, its_tools in zip(conversations, offered, strict=True):
        key = repr((messages, its_tools))
        if key not in rendered:
            rendered[key] = render(tokenizer, list(messages), its_tools)
        texts.append(rendered[key])
    return texts


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text`` (no special tokens added; special-token text inside it is recognised). A text longer
    than the model's positions is encoded without transformers' warning: what happens to such a prompt is the
    policy's to decide and say (``overlong``)."""
    return list(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]) if text else []


def encode_many(tokenizer: Any, texts: Sequence[str]) -> dict[str, list[int]]:
    """:func:`encode` of each distinct text of ``texts``, in one tokenizer call: ``{text: ids}``."""
    distinct = list(dict.fromkeys(t for t in texts if t))
    ids = tokenizer(distinct, add_special_tokens=False, verbose=False)["input_ids"] if distinct else []
    return {"": [], **{text: list(i) for text, i in zip(distinct, ids, strict=True)}}


class ModelFilesError(UserError, ValueError):
    """A model whose files cannot play a game (:func:`check_model_files`)."""


def check_model_files(model: Any, tokenizer: Any, where: str = "the model", folder: Any = None) -> None:
    """Raise :class:`ModelFilesError` (one line, naming the fix) where the model's ``folder`` holds no tokenizer
    files (transformers may still build an empty tokenizer), ``where``'s tokenizer has no chat template (every turn
    is rendered with ``apply_chat_template``), neither its ``generation_config`` nor its tokenizer names an eos token
    (what ends a reply), or the tokenizer has more tokens than the model has embedding rows (an id past them fails
    inside the model). docs/rollout.md, "Your own model"."""
    fix = "(docs/rollout.md, 'Your own model')"
    missing = no_tokenizer_note(folder) if folder is not None else ""
    if missing:
        raise ModelFilesError(f"cannot use {where}{missing}")
    if tokenizer.chat_template is None:
        raise ModelFilesError(f"{where}'s tokenizer has no chat template, and every turn is rendered with "
                              "tokenizer.apply_chat_template: set tokenizer.chat_template (e.g. the template of the "
                              f"model's instruct version) and save_pretrained the tokenizer {fix}")
    config_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if config_eos is None and tokenizer.eos_token_id is None:
        raise ModelFilesError(f"neither {where}'s generation_config nor its tokenizer names an eos token, so no reply "
                              f"would end: set tokenizer.eos_token (the token the model writes to stop) {fix}")
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    rows = getattr(embeddings, "num_embeddings", None)
    if rows is not None and len(tokenizer) > rows:
        raise ModelFilesError(f"{where}'s tokenizer has {len(tokenizer)} tokens and its embedding {rows} rows, so ids "
                              f"from {rows} on would fail inside the model: resize_token_embeddings({len(tokenizer)}) "
                              f"or use the model's own tokenizer {fix}")


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt")


def no_tokenizer_note(path: Any) -> str:
    """``" (the folder holds no tokenizer files ...)"`` for a local folder without any of :data:`TOKENIZER_FILES`
    (transformers then blames sentencepiece or tiktoken), else ``""``."""
    folder = Path(str(path))
    if not folder.is_dir() or any((folder / name).is_file() for name in TOKENIZER_FILES):
        return ""
    return (f" (the folder holds no tokenizer files ({', '.join(TOKENIZER_FILES)}): save the model's tokenizer there "
            "too, tokenizer.save_pretrained(folder))")


def unknown_words(tokenizer: Any, texts: Sequence[str], limit: int = 5000) -> list[str]:
    """The pieces of ``texts`` (the first ``limit`` distinct ones) that ``tokenizer`` encodes as its unknown token
    (the default model's ``<|unk|>``), each once, in the order met: words a model with this tokenizer can neither
    read nor write. ``[]`` for a tokenizer without an unknown token or without offsets (a slow one)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    distinct = list(dict.fromkeys(t for t in texts if t))[:limit]
    if unk is None or not getattr(tokenizer, "is_fast", False) or not distinct:
        return []
    encoded = tokenizer(distinct, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    found = [text[a:b] for text, ids, offsets in zip(distinct, encoded["input_ids"], encoded["offset_mapping"],
                                                      strict=True)
             for i, (a, b) in zip(ids, offsets, strict=True) if i == unk]
    return list(dict.fromkeys(w for w in found if w.strip()))


def unknown_words_note(who: str, words: list[str], tokenizer: Any) -> str:
    """One warning line for :func:`unknown_words`'s ``words`` found in ``who`` (e.g. "the demonstrations' replies")."""
    shown = ", ".join(repr(w) for w in words[:8]) + (", ..." if len(words) > 8 else "")
    return (f"warning: {who} hold {len(words)} word(s) the model's tokenizer does not know ({shown}): it reads each "
            f"as {tokenizer.unk_token}, so the model cannot write them; a model built with `agentgym-bench init-model "
            "--env MODULE:ID` has an env's words (docs/core-env-contract.md, 'A model that can write your actions')")


def reply_token_ids(tokenizer: Any, turn: Turn, encoded: dict[str, list[int]] | None = None) -> list[int]:
    """The reply's generated ids, or for text-only replies the tokenised reply (from ``encoded`` where given) plus
    the eos token."""
    if turn.token_ids is not None:
        return list(turn.token_ids)
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no eos token to end text-only replies with")
    reply = encode(tokenizer, turn.reply) if encoded is None else encoded[turn.reply]
    return reply + [tokenizer.eos_token_id]


def _stop_text(tokenizer: Any, ids: list[int]) -> str:
    """Text of the reply's last token if it is a special token (the stop token the model emitted), else ``""``."""
    if ids and ids[-1] in set(tokenizer.all_special_ids):
        return tokenizer.decode(ids[-1:], skip_special_tokens=False)
    return ""


def _assemble(pieces: list[tuple[str, list[int], float, int]], encoded: dict[str, list[int]]) -> TokenView:
    """Build a view from ``(prompt text before the reply, reply ids, reward, turn index)`` pieces, the prompts' ids
    from ``encoded`` (:func:`encode_many`)."""
    view = TokenView([], [], [], [], [])
    for prompt, ids, reward, turn in pieces:
        prompt_ids = encoded[prompt]
        view.input_ids += prompt_ids + ids
        view.loss_mask += [0] * len(prompt_ids) + [1] * len(ids)
        view.rewards += [0.0] * (len(prompt_ids) + len(ids))
        end = len(view.input_ids)
        if ids:
            view.rewards[end - 1] = float(reward)
        view.spans.append((end - len(ids), end))
        view.turns.append(turn)
    return view


_BASE = "agentgym-base-message"
_REPLY = "agentgym-reply-marker"


def assistant_end_text(tokenizer: Any) -> str:
    """What the chat template writes after an assistant message's content (Qwen: ``<|im_end|>`` and a newline)."""
    messages = [{"role": "user", "content": _BASE}, {"role": "assistant", "content": _REPLY}]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    return text[text.rindex(_REPLY) + len(_REPLY):]


def observation_segment(tokenizer: Any, observation: str) -> str:
    """The text of a new user turn holding ``observation`` plus the generation prompt, rendered after a fixed base
    conversation (so no earlier turn is re-rendered).

    Raises:
        ValueError: the template renders the base conversation differently once a message follows it.
    """
    base = [{"role": "user", "content": _BASE}]
    before = tokenizer.apply_chat_template(base, tokenize=False)
    after = render(tokenizer, base + [{"role": "user", "content": observation}])
    if not after.startswith(before):
        raise ValueError("the chat template renders a user message differently once another follows it; "
                         "token-in-token-out cannot split it")
    return after[len(before):]


def tito_continuation(tokenizer: Any, reply_ids: list[int], observation: str) -> str:
    """Prompt text between a reply's sampled ids and the next reply: the rest of the end-of-assistant text (minus the
    stop token the model emitted) and the new user turn (:func:`observation_segment`)."""
    end, stop = assistant_end_text(tokenizer), _stop_text(tokenizer, reply_ids)
    if stop and end.startswith(stop):
        end = end[len(stop):]
    return end + observation_segment(tokenizer, observation)


class TokenInTokenOut:
    """A generation backend whose multi-turn prompts are never re-rendered (module docstring).

    A conversation that continues one this wrapper answered in its previous call is prompted with that prompt, the
    sampled reply and :func:`tito_continuation`; any other is rendered whole. With a backend that takes token ids
    (``generate_ids``: :class:`~agentgym_bench.rollout.hf.HFPolicy`,
    :class:`~agentgym_bench.rollout.vllm_backend.VLLMPolicy`) the sampled ids themselves are sent, so the model reads
    exactly the training row of ``trajectory_token_view(..., tito=True)``; ``keys`` (the engine's keyed sampling)
    are passed on. A backend that takes only text (``generate_text``) gets the reply decoded with its special
    tokens, which is exact when those ids re-tokenise to themselves (``rollout/logprob_diff`` in the trainer shows
    when they do not). One call is one turn of the rollout engine, so only the previous call's contexts are kept.
    """

    def __init__(self, policy: Any, tokenizer: Any):
        self.policy, self.tokenizer = policy, tokenizer
        self.by_ids = hasattr(policy, "generate_ids")
        self._contexts: dict[tuple, tuple[Any, list[int]]] = {}

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[Any] | None = None,
                 keys: Sequence[tuple[int, ...]] | None = None) -> list[Any]:
        """Reply to each conversation (``envs`` give the ``tools`` an agent env in tool format offers; ``keys`` go to
        a text backend's keyed sampling)."""
        prompts = []
        for messages, tools in zip(conversations, offered_tools(envs, len(conversations)), strict=True):
            previous = self._contexts.get(_key(messages[:-1]))
            if previous is None:
                text = render(self.tokenizer, list(messages), tools)
                prompts.append(encode(self.tokenizer, text) if self.by_ids else text)
            else:
                context, ids = previous
                more = tito_continuation(self.tokenizer, ids, messages[-1]["content"])
                prompts.append(context + encode(self.tokenizer, more) if self.by_ids else context + more)
        send = self.policy.generate_ids if self.by_ids else self.policy.generate_text
        generations = send(prompts) if keys is None else send(prompts, keys)
        self._contexts = {}
        for messages, prompt, generation in zip(conversations, prompts, generations, strict=True):
            if generation.token_ids is None:
                raise ValueError("token-in-token-out needs a backend that reports the sampled token ids")
            ids = list(generation.token_ids)
            reply = ids if self.by_ids else self.tokenizer.decode(ids, skip_special_tokens=False)
            key = _key([*messages, {"role": "assistant", "content": generation.text}])
            self._contexts[key] = (prompt + reply, ids)
        return generations


def _key(messages: Sequence[Message]) -> tuple:
    return tuple((m["role"], m["content"]) for m in messages)


def trajectory_token_view(trajectory: Trajectory, tokenizer: Any, *, tito: bool = False) -> TokenView:
    """The whole conversation as one row (requires ``trajectory.history is None``).

    The final observation is not included (nothing is generated after it). With ``tito`` the row is built
    token-in-token-out (for a rollout through :class:`TokenInTokenOut`): never re-rendered, so any template works.

    Raises:
        ValueError: the trajectory used a history window, or (without ``tito``) the chat template is not
            prefix-stable.
    """
    if trajectory.history is not None:
        raise ValueError(f"trajectory used history={trajectory.history}; a single-sequence view needs the full "
                         "conversation (history=None) — use step_token_views")
    if tito:
        pieces, previous = [], None
        for t, turn in enumerate(trajectory.turns):
            ids = reply_token_ids(tokenizer, turn)
            prompt = (render(tokenizer, trajectory.messages(t), trajectory.tools) if previous is None
                      else tito_continuation(tokenizer, previous, turn.observation))
            pieces.append((prompt, ids, turn.reward, t))
            previous = ids
        return _assemble(pieces, encode_many(tokenizer, [prompt for prompt, *_ in pieces]))
    pieces = []
    consumed, pending_stop = "", ""
    for t, turn in enumerate(trajectory.turns):
        prompt = render(tokenizer, trajectory.messages(t), trajectory.tools)
        if not prompt.startswith(consumed):
            raise ValueError(f"the chat template re-renders earlier turns differently (turn {t}): the prompt does "
                             "not start with the previous prompt and reply; roll out through TokenInTokenOut and "
                             "use tito=True, or use step_token_views")
        delta = prompt[len(consumed):]
        if pending_stop and delta.startswith(pending_stop):
            delta = delta[len(pending_stop):]
        ids = reply_token_ids(tokenizer, turn)
        pieces.append((delta, ids, turn.reward, t))
        consumed, pending_stop = prompt + turn.reply, _stop_text(tokenizer, ids)
    return _assemble(pieces, encode_many(tokenizer, [prompt for prompt, *_ in pieces]))


def sampled_logprobs(view: TokenView, trajectory: Trajectory) -> list[float]:
    """The log-probabilities the policy sampled each of ``view``'s tokens with, aligned to ``view.input_ids``
    (``(T,)``): a reply's own (``Turn.logprobs``) on its span, 0.0 on every other token and on a reply whose policy
    reported none (oracle, an endpoint without logprobs). The "old" log-probs of an importance ratio or PPO clip."""
    logprobs = [0.0] * len(view.input_ids)
    for (lo, hi), t in zip(view.spans, view.turns, strict=True):
        sampled = trajectory.turns[t].logprobs
        if sampled is not None and len(sampled) == hi - lo:
            logprobs[lo:hi] = sampled
    return logprobs


def step_token_views(trajectory: Trajectory, tokenizer: Any) -> list[TokenView]:
    """One row per turn: the prompt the model read (under the trajectory's history window) and its reply."""
    return step_views([trajectory], tokenizer)


def step_views(trajectories: Sequence[Trajectory], tokenizer: Any, chunk: int = 1024) -> list[TokenView]:
    """:func:`step_token_views` of every trajectory, in trajectory then turn order. Each distinct prompt of
    ``chunk`` trajectories at a time is rendered once (:func:`render_many`) and, with each distinct text-only reply,
    tokenised once, in one tokenizer call: a group's members, which are neighbours, often read the same prompt; the
    chunks bound the memory of a warm start's many rows."""
    views = []
    for start in range(0, len(trajectories), chunk):
        chunk_turns = [(trajectory, t) for trajectory in trajectories[start:start + chunk]
                       for t in range(len(trajectory.turns))]
        prompts = render_many(tokenizer, [trajectory.messages(t) for trajectory, t in chunk_turns],
                              [trajectory.tools for trajectory, _ in chunk_turns])
        turns = [(t, trajectory.turns[t], prompt)
                 for (trajectory, t), prompt in zip(chunk_turns, prompts, strict=True)]
        encoded = encode_many(tokenizer, [prompt for *_, prompt in turns]
                              + [turn.reply for _, turn, _ in turns if turn.token_ids is None])
        views += [_assemble([(prompt, reply_token_ids(tokenizer, turn, encoded), turn.reward, t)], encoded)
                  for t, turn, prompt in turns]
    return views


def collate(views: Sequence[TokenView], pad_token_id: int, *, max_length: int | None = None) -> dict[str, Any]:
    """Right-pad views into ``(B, T)`` tensors: ``input_ids``, ``attention_mask``, ``loss_mask`` (long) and
    ``rewards`` (float32). Each field is filled from all rows at once, not a row at a time: an RL iteration has
    hundreds of short rows.

    Raises:
        ValueError: a view is longer than ``max_length``.
    """
    import torch

    if not views:
        raise ValueError("collate needs at least one view")
    lengths = np.array([len(v) for v in views])
    length = int(lengths.max())
    if max_length is not None and length > max_length:
        raise ValueError(f"a view has {length} tokens, more than max_length={max_length}")
    real = np.arange(length) < lengths[:, None]  # (B, T), True on each row's tokens

    def padded(field: str, fill: int, dtype: Any) -> torch.Tensor:
        out = np.full(real.shape, fill, dtype=dtype)
        out[real] = np.fromiter(chain.from_iterable(getattr(v, field) for v in views), dtype=dtype,
                                count=int(lengths.sum()))  # row-major: each row's tokens in order
        return torch.from_numpy(out)

    return {"input_ids": padded("input_ids", pad_token_id, np.int64),
            "attention_mask": torch.from_numpy(real.astype(np.int64)),
            "loss_mask": padded("loss_mask", 0, np.int64),
            "rewards": padded("rewards", 0, np.float32)}
