"""vLLM generation backend (GPU; the optional extra ``pip install -e '.[vllm]'``).

vLLM is imported only when a :class:`VLLMPolicy` is created. Prompts are rendered with the model's own chat
template (as in :class:`~agentgym_bench.rollout.hf.HFPolicy`) or given as token ids (:meth:`VLLMPolicy.generate_ids`,
for :class:`~agentgym_bench.rollout.tokens.TokenInTokenOut`) and sent as one ``LLM.generate`` batch; each request
carries its own seed: with ``keys`` (keyed sampling, as ``eval`` plays) the conversation's own
(:func:`~agentgym_bench.rollout.policy.key_seed`), so its draws do not depend on the rest of the batch; without,
``seed + request number``, reproducible for a fixed batch order. vLLM does not promise batch-invariant numerics, so
a keyed reply re-generated in another batch can still differ in rare tokens (a leaderboard re-generates ``hf``
policies only, so a ``vllm`` results file goes on a board as *replayed*).

For a trainer the engine is *colocated*, following vLLM's documented RL pattern for one engine per training process
(``examples/offline_inference/torchrun_example.py``; TRL's ``vllm_mode="colocate"``):

- ``distributed_executor_backend="external_launcher"``: the engine runs inside this process (vLLM then turns off
  its engine-core subprocess, ``VLLM_ENABLE_V1_MULTIPROCESSING=0``) on this process's GPU; under ``torchrun`` every
  rank has its own engine on ``cuda:LOCAL_RANK``. Launched plainly, :func:`single_process_launch_env` supplies the
  one-process ``torch.distributed`` variables that launcher reads.
- Weight updates (:meth:`VLLMPolicy.load_weights`) go through ``collective_rpc`` to a worker extension that calls the
  vLLM model's own ``load_weights``; in-process that is a direct call, so the trainer's CUDA tensors are copied on
  the GPU, never serialised.
- ``sleep_mode=True`` (``enable_sleep_mode``, CUDA only): :meth:`VLLMPolicy.sleep` frees the engine's weights and KV
  cache (level 2) while the trainer updates; :meth:`VLLMPolicy.load_weights` wakes the weights, loads the new ones,
  then wakes the KV cache (the order TRL uses), and clears the prefix cache.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Sequence
from typing import Any

from agentgym_bench.agent.tools import offered_tools
from agentgym_bench.errors import MissingExtra, install_command
from agentgym_bench.rollout.policy import Generation, Message, key_seed
from agentgym_bench.rollout.tokens import render_many

INSTALL_HINT = f"vLLM is not installed (it needs a CUDA GPU); install it with {install_command('vllm')}"


def single_process_launch_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The ``torch.distributed`` variables vLLM's ``external_launcher`` reads, for a process not started by
    ``torchrun``: rank 0 of 1 on a free local port. Variables already set (under ``torchrun``) are kept.

    Returns:
        The variables that were added (``environ`` is updated in place; ``os.environ`` by default).
    """
    environ = os.environ if environ is None else environ
    added = {}
    if "WORLD_SIZE" not in environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        added = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                 "MASTER_PORT": str(port)}
        environ.update(added)
    return added


def named_weights(model: Any) -> Iterable[tuple[str, Any]]:
    """``(Hugging Face name, tensor)`` pairs of a model's parameters and persistent buffers, as its ``state_dict``
    names them (the names vLLM's ``load_weights`` maps), detached; a DDP/FSDP wrapper's ``module`` is unwrapped."""
    model = getattr(model, "module", model)
    for name, tensor in model.state_dict().items():
        yield name, tensor.detach()


def request_seeds(seed: int, first: int, n: int, keys: Sequence[tuple[int, ...]] | None) -> list[int]:
    """vLLM's per-request seeds for a batch of ``n`` requests: each key's own seed (``key_seed(seed, key)``), or
    without keys ``seed + first + i`` (``first``: requests made before this batch).

    Raises:
        ValueError: ``keys`` is given with another length than ``n``.
    """
    if keys is None:
        return [seed + first + i for i in range(n)]
    if len(keys) != n:
        raise ValueError(f"{len(keys)} keys for {n} prompts")
    return [key_seed(seed, k) for k in keys]


class WeightLoaderExtension:
    """Mixed into vLLM's GPU worker (``worker_extension_cls``); ``self`` is the worker."""

    def agentgym_load_weights(self, weights: list[tuple[str, Any]]) -> int:
        """Load ``weights`` into the worker's model; returns how many tensors were given."""
        self.model_runner.model.load_weights(weights=weights)
        return len(weights)


class VLLMPolicy:
    """Generate replies with a vLLM engine.

    Arguments:
        model: a model folder or hub id.
        temperature / top_p / max_new_tokens: sampling settings (``temperature=0`` is greedy).
        seed: engine seed and the base of the per-request seeds.
        gpu_memory_utilization: fraction of GPU memory vLLM may take (leave room for a colocated trainer).
        colocated: run the engine in this process (``external_launcher``; see the module docstring). ``False`` uses
            vLLM's default executor, for generation without a trainer.
        sleep_mode: allow :meth:`sleep` (frees GPU memory while a trainer updates).
        llm_kwargs: more keyword arguments for ``vllm.LLM`` (``dtype``, ``max_model_len``, ...).

    ``Generation.token_ids`` include the stop token when the reply ended with one; ``Generation.logprobs`` are
    vLLM's log-probabilities of the sampled tokens (``SamplingParams(logprobs=0)``).

    Raises:
        ImportError: vLLM is not installed (the message names the install command).
    """

    def __init__(self, model: str, *, temperature: float = 1.0, top_p: float = 1.0, max_new_tokens: int = 32,
                 seed: int = 0, gpu_memory_utilization: float = 0.5, colocated: bool = True,
                 sleep_mode: bool = False, **llm_kwargs: Any):
        try:
            import vllm
        except ImportError as e:
            raise MissingExtra("vLLM is not installed (it needs a CUDA GPU)", "vllm") from e
        self._vllm = vllm
        if colocated:
            single_process_launch_env()
            llm_kwargs.setdefault("distributed_executor_backend", "external_launcher")
        self.llm = vllm.LLM(model=model, seed=seed, gpu_memory_utilization=gpu_memory_utilization,
                            enable_prefix_caching=True, enable_sleep_mode=sleep_mode,
                            worker_extension_cls=f"{__name__}.{WeightLoaderExtension.__name__}", **llm_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.seed = seed
        self.requests_made = 0
        self.sleep_mode, self.asleep = sleep_mode, False

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[Any] | None = None,
                 keys: Sequence[tuple[int, ...]] | None = None) -> list[Generation]:
        """Reply to each conversation (``envs`` only give the ``tools`` an agent env in tool format offers, passed
        to the chat template); ``keys``: one per conversation, see :mod:`agentgym_bench.rollout.policy`."""
        tools = offered_tools(envs, len(conversations))
        return self.generate_text(render_many(self.tokenizer, conversations, tools), keys)

    def generate_text(self, prompts: Sequence[str], keys: Sequence[tuple[int, ...]] | None = None
                      ) -> list[Generation]:
        """Continue already rendered prompt strings; ``keys`` as in :meth:`generate`."""
        return self._generate(list(prompts), keys)

    def generate_ids(self, prompts: Sequence[Sequence[int]], keys: Sequence[tuple[int, ...]] | None = None
                     ) -> list[Generation]:
        """Continue prompts given as token ids (nothing is re-tokenised); ``keys`` as in :meth:`generate`."""
        return self._generate([{"prompt_token_ids": list(ids)} for ids in prompts], keys)

    def _generate(self, prompts: list[Any], keys: Sequence[tuple[int, ...]] | None) -> list[Generation]:
        if self.asleep:
            raise RuntimeError("the vLLM engine is asleep; load_weights wakes it")
        seeds = request_seeds(self.seed, self.requests_made, len(prompts), keys)
        self.requests_made += len(prompts)
        params = [self._vllm.SamplingParams(temperature=self.temperature, top_p=self.top_p,
                                            max_tokens=self.max_new_tokens, seed=s, logprobs=0) for s in seeds]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        results = []
        for output in outputs:
            completion = output.outputs[0]
            ids = list(completion.token_ids)
            logprobs = None
            if completion.logprobs is not None:
                logprobs = [float(step[token].logprob) for step, token in zip(completion.logprobs, ids, strict=True)]
            results.append(Generation(completion.text, ids, logprobs))
        return results

    def sleep(self) -> None:
        """Free the engine's weights and KV cache (level 2) until the next :meth:`load_weights`; a no-op without
        ``sleep_mode``."""
        if self.sleep_mode and not self.asleep:
            self.llm.sleep(level=2)
            self.asleep = True

    def load_weights(self, weights: Iterable[tuple[str, Any]]) -> None:
        """Push new weights (Hugging Face names) into the engine, e.g. after a trainer's update; wakes it first."""
        if self.asleep:
            self.llm.wake_up(tags=["weights"])
        self.llm.collective_rpc("agentgym_load_weights", args=(list(weights),))
        if self.asleep:
            self.llm.wake_up(tags=["kv_cache"])
            self.asleep = False
        self.llm.reset_prefix_cache()  # cached prefixes were computed with the old weights

    def sync_weights(self, model: Any) -> None:
        """:meth:`load_weights` with every tensor of a Hugging Face ``model`` (:func:`named_weights`)."""
        self.load_weights(named_weights(model))
