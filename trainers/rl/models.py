"""The networks of an RL run and their optimisers: :class:`Models` (actor, tokenizer, critic, reference),
:func:`load_models` from ``pretrain`` or a checkpoint (with LoRA, DDP or FSDP2 as the config says) and
:func:`make_optimizers`. The loop that uses them is :mod:`trainers.rl.train`."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench.paths import resolve_model
from agentgym_bench.rollout.hf import no_progress_bars
from agentgym_bench.rollout.tokens import check_model_files, no_tokenizer_note, unknown_words, unknown_words_note
from agentgym_bench.rollout.vllm_backend import INSTALL_HINT
from trainers.rl.config import TrainConfig
from trainers.runtime import fsdp, lora
from trainers.runtime.config_loading import ConfigError
from trainers.runtime.distributed import Dist
from trainers.runtime.schedule import iteration_schedule


@dataclass
class Models:
    """The networks of a run. ``actor`` / ``critic`` may be DDP wrappers (``*_module`` are the bare models) or
    FSDP2-sharded models (the same objects). ``reference`` is a frozen model, or with LoRA
    :class:`trainers.runtime.lora.AdaptersOff` over the actor."""

    actor: torch.nn.Module
    tokenizer: Any
    critic: torch.nn.Module | None = None
    reference: Any = None

    @property
    def actor_module(self) -> torch.nn.Module:
        return getattr(self.actor, "module", self.actor)

    @property
    def critic_module(self) -> torch.nn.Module | None:
        return None if self.critic is None else getattr(self.critic, "module", self.critic)


def _own_memory(model: torch.nn.Module) -> torch.nn.Module:
    """Copy every parameter into a fresh allocation (tied weights stay tied: they are one Parameter).

    ``from_pretrained`` can leave tensors inside the memory-mapped file at offsets that are not 64-byte aligned, and
    CPU kernels may then take another code path and round differently; with fresh copies a resumed run computes
    bit for bit what the uninterrupted run does."""
    for param in model.parameters():
        param.data = param.data.clone()
    return model


def load_models(config: TrainConfig, dist: Dist, checkpoint: Path | None = None) -> Models:
    """Actor and tokenizer (from the checkpoint or ``pretrain``), critic if ``gae``, the reference policy if a KL is
    used; with ``lora_target`` LoRA adapters on actor and critic; under ``torchrun`` wrapped for the ``strategy``.

    The critic is ``AutoModelForTokenClassification`` with one label on the same weights (RAGEN / verl); its new
    value head (and LoRA's initial ``A`` matrices) are drawn from ``config.seed`` without touching the global RNG.
    The reference is a frozen copy of ``pretrain``, or with LoRA the actor with its adapters disabled (no copy).
    A LoRA run resumes from ``pretrain`` plus the adapters the checkpoint kept (``actor_adapter/``,
    ``critic_adapter/``). No Hugging Face progress bars while they load from a local folder (a few MB: the bars
    say nothing); a hub id keeps its download bars.
    """
    pretrain = resolve_model(config.pretrain)
    with no_progress_bars() if Path(pretrain).is_dir() else contextlib.nullcontext():
        models = _load_models(config, dist, checkpoint, pretrain)
    if dist.is_main:
        warn_unwritable_actions(config, models.tokenizer)
    return models


def warn_unwritable_actions(config: TrainConfig, tokenizer: Any) -> None:
    """A warning on stderr where a training env's actions (its ``valid_actions`` after a reset on the first training
    seed) hold a word the tokenizer encodes as unknown: the model cannot write that action, so RL cannot teach it."""
    manager = config.train_env_manager
    actions: list[str] = []
    for tag in manager.tags:
        try:
            env = gym.make(tag, **manager.env_kwargs)
            actions += env.reset(seed=config.train_seed_start)[1].get("valid_actions") or []
            env.close()
        except Exception:  # noqa: BLE001 - a two-player env or one made otherwise: its actions are not checked here
            continue
    unknown = unknown_words(tokenizer, actions)
    if unknown:
        print("train: " + unknown_words_note("the training envs' actions", unknown, tokenizer), file=sys.stderr)


def require_backend(config: TrainConfig, device: torch.device) -> None:
    """A one-line :class:`ConfigError` before any model loads where ``generation_backend: vllm`` cannot run: no vLLM,
    or no GPU (``device: auto`` on a machine without one)."""
    if config.generation_backend != "vllm":
        return
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(f"generation_backend: vllm: {INSTALL_HINT}; or set generation_backend: hf")
    if device.type != "cuda":
        raise ConfigError(f"generation_backend: vllm generates on a GPU, and this run's device is {device}: set "
                          "generation_backend: hf")


def _load_models(config: TrainConfig, dist: Dist, checkpoint: Path | None, pretrain: str) -> Models:
    from transformers import AutoModelForCausalLM, AutoModelForTokenClassification, AutoTokenizer

    if config.lora:
        lora.require_peft()
    require_backend(config, dist.device)
    full_weights = checkpoint if checkpoint is not None and not config.lora else None  # else pretrain (+ adapters)
    source = checkpoint / "actor" if checkpoint else pretrain
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as err:  # transformers' own message runs over lines and blames sentencepiece
        said = " ".join(str(err).split())[:300]
        raise ConfigError(f"pretrain: cannot load a tokenizer from {str(source)!r}: {said}"
                          f"{no_tokenizer_note(source)}") from None
    actor = AutoModelForCausalLM.from_pretrained(full_weights / "actor" if full_weights else pretrain,
                                                 dtype=torch.float32)
    check_model_files(actor, tokenizer, f"pretrain {str(source)!r}", source)
    if config.lora:
        actor = lora.add_adapters(actor, config, "CAUSAL_LM", checkpoint / "actor_adapter" if checkpoint else None)
    actor = _own_memory(actor).to(dist.device).eval()
    critic = reference = None
    if config.uses_critic:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            critic = AutoModelForTokenClassification.from_pretrained(
                full_weights / "critic" if full_weights else pretrain, num_labels=1, dtype=torch.float32)
        if config.lora:
            critic = lora.add_adapters(critic, config, "TOKEN_CLS",
                                       checkpoint / "critic_adapter" if checkpoint else None)
        critic = _own_memory(critic).to(dist.device).eval()
    if config.uses_reference and not config.lora:
        reference = AutoModelForCausalLM.from_pretrained(pretrain, dtype=torch.float32)
        reference = _own_memory(reference).to(dist.device).eval()
        reference.requires_grad_(False)
    if config.gradient_checkpointing:
        for model in (actor, critic):
            if model is not None:
                enable_gradient_checkpointing(model)
    if dist.grouped and config.strategy == "fsdp2":  # also a torchrun group of one process
        for model in (actor, critic, reference):
            if model is not None:
                fsdp.shard(model, dist.device, config.dtype)
    elif dist.enabled:
        from torch.nn.parallel import DistributedDataParallel as DDP

        ids = [dist.device.index] if dist.device.type == "cuda" else None
        actor = DDP(actor, device_ids=ids)
        critic = DDP(critic, device_ids=ids) if critic is not None else None
    if config.uses_reference and config.lora:
        reference = lora.AdaptersOff(getattr(actor, "module", actor))
    return Models(actor, tokenizer, critic, reference)


def enable_gradient_checkpointing(model: torch.nn.Module) -> None:
    """Hugging Face gradient checkpointing (non-reentrant), which acts only in train mode: every dropout is set to 0
    so that train mode computes what eval mode does (:func:`trainers.rl.ppo.ppo_update` switches modes)."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5 (the old name is deprecated)
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def trainable(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The parameters an optimiser updates (all, or with LoRA the adapters and the critic's value head)."""
    return [p for p in model.parameters() if p.requires_grad]


def make_optimizers(config: TrainConfig, models: Models) -> tuple[dict[str, Any], dict[str, Any]]:
    """AdamW for the actor (and critic), each with a per-iteration LambdaLR schedule over the iterations that update
    it: the critic's every one (``max_steps``), the actor's those after ``critic_warmup`` (its schedule counts its
    own steps, so it ends where the config says, at ``max_steps``)."""
    params = {"actor": (trainable(models.actor_module), config.learning_rate)}
    if models.critic is not None:
        params["critic"] = (trainable(models.critic_module), config.critic_learning_rate)
    steps = {"actor": config.max_steps - config.critic_warmup, "critic": config.max_steps}
    optimizers = {name: torch.optim.AdamW(p, lr=lr, betas=config.adam_betas, weight_decay=config.weight_decay)
                  for name, (p, lr) in params.items()}
    schedulers = {name: torch.optim.lr_scheduler.LambdaLR(opt, iteration_schedule(
                      config.lr_scheduler_type, config.warmup_steps, steps[name])) for name, opt in optimizers.items()}
    return optimizers, schedulers
