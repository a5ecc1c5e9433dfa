"""LoRA through ``peft`` (``lora_target``, ``lora_rank``, ``lora_alpha``: ROLL's keys), the optional extra
``pip install -e '.[lora]'``.

- :func:`add_adapters`: wrap actor or critic with fresh adapters (the critic's value head stays fully trainable,
  ``peft``'s ``TOKEN_CLS`` task), drawn from the run's seed without touching the global RNG; or, on resume, load
  the adapters a checkpoint kept.
- :class:`AdaptersOff`: the reference policy of a KL term is the actor with its adapters disabled (the base
  weights), not a second copy of the model.
- :func:`merged_state_dict`: base weights + ``B @ A * alpha / r`` under the base model's own parameter names: the
  final model saved as a plain Hugging Face folder (and the weights pushed to a vLLM engine).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench.errors import install_command
from trainers.runtime.config_loading import ConfigError

INSTALL_HINT = f"lora_target needs the peft package; install it with {install_command('lora')}"
ADAPTER = "default"
_PREFIX = "base_model.model."
VALUE_HEADS = ["classifier", "score"]  # the token-classification heads of GPT-2 / Qwen2 / Llama (peft's TOKEN_CLS)


def require_peft() -> Any:
    """Import ``peft``, or raise a :class:`~trainers.runtime.config_loading.ConfigError` naming the extra."""
    try:
        import peft
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return peft


def target_modules(lora_target: str) -> str | list[str]:
    """ROLL's ``lora_target`` as ``peft`` reads it: ``all`` -> every linear layer, a regular expression as it is,
    else the comma-separated module names."""
    if lora_target.strip() == "all":
        return "all-linear"
    if any(c in lora_target for c in "*$|("):
        return lora_target
    return [name.strip() for name in lora_target.split(",") if name.strip()]


def add_adapters(model: torch.nn.Module, config: Any, task: str, saved: Path | None = None) -> torch.nn.Module:
    """``model`` with LoRA adapters: new ones (``B = 0``, so the model starts as the base; ``A`` drawn from
    ``config.seed``), or those saved in ``saved`` (a checkpoint's adapter folder), trainable. ``config``: the RL
    trainer's config (its ``lora_rank``, ``lora_alpha``, ``lora_target`` and ``seed`` are read; the runtime does not
    import the trainer). ``task``: ``CAUSAL_LM`` (actor) or ``TOKEN_CLS`` (critic: its value head is trained and saved
    whole)."""
    peft = require_peft()
    with warnings.catch_warnings():  # peft reads transformers' deprecated is_gradient_checkpointing: says nothing
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        if saved is not None:
            return peft.PeftModel.from_pretrained(model, saved, is_trainable=True)
        heads = VALUE_HEADS if task == "TOKEN_CLS" else None  # trained whole (modules_to_save), not adapted
        lora = peft.LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha or 2 * config.lora_rank,
                               lora_dropout=0.0, target_modules=target_modules(config.lora_target), task_type=task,
                               exclude_modules=heads)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            try:
                return peft.get_peft_model(model, lora)
            except ValueError as error:  # peft: a target that matches no module
                raise ConfigError(f"lora_target={config.lora_target!r}: {str(error).splitlines()[0]}") from None


def is_lora(model: Any) -> bool:
    return hasattr(model, "disable_adapter") and hasattr(model, "peft_config")


class AdaptersOff:
    """Calls the model with its adapters disabled: the base model, i.e. the initial policy (LoRA's ``B`` starts at
    0), for the KL reference."""

    def __init__(self, model: torch.nn.Module):
        self.model = model

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.model.disable_adapter():
            return self.model(*args, **kwargs)

    def get_output_embeddings(self) -> torch.nn.Module:
        """The model's output head (for :func:`agentgym_bench.rollout.heads.logits_at`)."""
        return self.model.get_output_embeddings()

    def get_base_model(self) -> torch.nn.Module:
        """The model under the adapters (whose forward's arguments :func:`agentgym_bench.rollout.hf.cache_argument`
        reads)."""
        return self.model.get_base_model()


def layer_scales(model: torch.nn.Module) -> dict[str, tuple[float, bool]]:
    """``{module name in the state dict: (alpha / r, fan_in_fan_out)}`` of every LoRA layer of a ``peft`` model
    (GPT-2's ``Conv1D`` stores its weight transposed: ``fan_in_fan_out``)."""
    from peft.tuners.lora import LoraLayer

    return {name: (float(module.scaling[ADAPTER]), bool(module.fan_in_fan_out))
            for name, module in model.named_modules() if isinstance(module, LoraLayer)}


def merged_state_dict(state: dict[str, torch.Tensor],
                      scales: dict[str, tuple[float, bool]]) -> dict[str, torch.Tensor]:
    """The base model's state dict with each LoRA layer merged, ``W + transpose(B @ A, fan_in_fan_out) * scale``
    (``peft``'s ``merge_and_unload`` arithmetic), under the base model's parameter names.

    Arguments:
        state: a ``peft`` model's full state dict (``base_model.model.<name>.base_layer.weight``,
            ``...lora_A.default.weight``, ``...modules_to_save.default.weight`` ...).
        scales: :func:`layer_scales` of that model.
    """
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if ".lora_A." in key or ".lora_B." in key or ".original_module." in key:
            continue
        name = key.removeprefix(_PREFIX)
        module = name.rsplit(".", 1)[0]
        if ".base_layer." in name:
            module = name.split(".base_layer.")[0]
            name = name.replace(".base_layer.", ".")
            layer = _PREFIX + module
            if name.endswith(".weight") and layer in scales:
                scale, fan_in_fan_out = scales[layer]
                a, b = state[f"{layer}.lora_A.{ADAPTER}.weight"], state[f"{layer}.lora_B.{ADAPTER}.weight"]
                delta = b @ a
                value = value + (delta.T if fan_in_fan_out else delta) * scale
        name = name.replace(f".modules_to_save.{ADAPTER}.", ".")
        out[name] = value
    return out
