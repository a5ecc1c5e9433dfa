"""vLLM generation backend (GPU; the optional extra ``pip install 'agentgym-bench[vllm]'``).

vLLM is imported only when a :class:`VLLMPolicy` is created. Prompts are rendered with the model's own chat
template (as in :class:`~agentgym_bench.rollout.hf.HFPolicy`) and sent as one ``LLM.generate`` batch; each request
carries its own seed (``seed + request number``), so a run is reproducible for a fixed batch order.

Weight updates from a trainer: :meth:`VLLMPolicy.load_weights` pushes ``(name, tensor)`` pairs (Hugging Face
parameter names, e.g. ``model.state_dict().items()``) into the running engine through vLLM's
``collective_rpc`` and a worker extension whose method calls the vLLM model's own ``load_weights``. This is the
colocated, single-GPU (tensor parallel 1) path; with vLLM's V1 engine in a separate process set
``VLLM_ENABLE_V1_MULTIPROCESSING=0`` so the tensors need no serialisation. :meth:`VLLMPolicy.sync_weights` does it
for a whole model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agentgym_bench.rollout.policy import Generation, Message

INSTALL_HINT = "vLLM is not installed; install the extra with: pip install 'agentgym-bench[vllm]' (needs a CUDA GPU)"


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
        llm_kwargs: more keyword arguments for ``vllm.LLM`` (``dtype``, ``max_model_len``, ...).

    ``Generation.token_ids`` include the stop token when the reply ended with one; ``Generation.logprobs`` are
    vLLM's log-probabilities of the sampled tokens (``SamplingParams(logprobs=0)``).

    Raises:
        ImportError: vLLM is not installed (the message names the install command).
    """

    def __init__(self, model: str, *, temperature: float = 1.0, top_p: float = 1.0, max_new_tokens: int = 32,
                 seed: int = 0, gpu_memory_utilization: float = 0.5, **llm_kwargs: Any):
        try:
            import vllm
        except ImportError as e:
            raise ImportError(INSTALL_HINT) from e
        self._vllm = vllm
        self.llm = vllm.LLM(model=model, seed=seed, gpu_memory_utilization=gpu_memory_utilization,
                            enable_prefix_caching=True,
                            worker_extension_cls=f"{__name__}.{WeightLoaderExtension.__name__}", **llm_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.seed = seed
        self.requests_made = 0

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[Any] | None = None) -> list[Generation]:
        """Reply to each conversation (``envs`` is ignored)."""
        prompts = [self.tokenizer.apply_chat_template(list(c), add_generation_prompt=True, tokenize=False)
                   for c in conversations]
        first = self.requests_made
        self.requests_made += len(prompts)
        params = [self._vllm.SamplingParams(temperature=self.temperature, top_p=self.top_p,
                                            max_tokens=self.max_new_tokens, seed=self.seed + first + i, logprobs=0)
                  for i in range(len(prompts))]
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

    def load_weights(self, weights: Iterable[tuple[str, Any]]) -> None:
        """Push new weights (Hugging Face names) into the engine, e.g. after a trainer's update."""
        self.llm.collective_rpc("agentgym_load_weights", args=(list(weights),))
        self.llm.reset_prefix_cache()  # cached prefixes were computed with the old weights

    def sync_weights(self, model: Any) -> None:
        """:meth:`load_weights` with every tensor of a Hugging Face ``model``."""
        self.load_weights((name, tensor.detach()) for name, tensor in model.state_dict().items())
