"""The GPU trainers' offline check (issue 48): every GPU code path of the trainers, in minutes, with no network.

It builds a randomly initialised model of a real architecture and size locally (Qwen3-0.6B's shape from
transformers' ``Qwen3Config``, ~0.45B parameters with a 16k vocabulary; Qwen2.5-0.5B's shape where transformers has
no Qwen3) with a byte-level BPE tokenizer trained here with ``tokenizers`` on the envs' text and Qwen3's published
chat template, then runs on the GPU:

- StarPO, StarPO-S and GiGPO on Sokoban with the HF backend, bfloat16 mixed precision and gradient checkpointing:
  2 iterations, a checkpoint, and 1 more iteration resumed from it; finite losses;
- the same for StarPO-S under ``torchrun --nproc_per_node 1`` with ``strategy=fsdp2`` (FSDP2 over a group of one),
  and with LoRA adapters;
- token-in-token-out: every whole-episode row of a StarPO-S rollout holds exactly the ids the model was prompted
  with and sampled, through Qwen3's template (which re-renders history), and the recomputed log-probs match;
- StarPO with asynchronous rollouts (``async_rollout.max_staleness: 1``): the rollout worker process on the same
  GPU, run and resumed as above, every batch's lag within the bound;
- ``agentgym-bench eval --policy hf:... --device cuda`` on a small Sokoban suite, twice, and the share of episodes
  whose replies are identical;
- ``pytest -m gpu``.

It prints one line per check, ``[gpu-check] NAME: ok|FAIL DETAIL (SECONDS s)``, figures per run (generation and
update tokens/s, peak GPU memory per phase, the update's model FLOP utilisation against the card's dense bf16 peak),
and a summary; it exits 1 if any check failed. ``scripts/gpu_check.sh`` installs what the GPU image lacks and runs
it. ``--device cpu --tiny`` runs the same plumbing on a CPU with a tiny model in a few minutes (the FSDP2 run then
uses gloo); ``tests/test_gpu_check.py`` runs it (``-m slow``).

    python scripts/gpu_check.py                       # CUDA, the real size (bash scripts/gpu_check.sh installs first)
    python scripts/gpu_check.py --device cpu --tiny   # the plumbing on a CPU
    python scripts/gpu_check.py --only fsdp2,lora     # some checks again (the model is always built)
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import gzip
import importlib
import importlib.metadata
import json
import math
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
from tokenizers import models as token_models
from tokenizers import trainers as token_trainers

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the project, also when it is not installed
    sys.path.insert(0, str(ROOT))

import agentgym_bench  # noqa: E402 - after the sys.path setup
from agentgym_bench.rollout.tokens import trajectory_token_view  # noqa: E402 - after the sys.path setup
from trainers.runtime.config_loading import merge  # noqa: E402 - after the sys.path setup
from trainers.sft.default_model import bargain_texts, webshop_texts  # noqa: E402 - after the sys.path setup

TAG = "[gpu-check]"
QWEN3_TEMPLATE = ROOT / "scripts" / "qwen3_chat_template.jinja"
"""Qwen3's published chat template, verbatim (the same text as ``tests/rollout/test_tokens.py``'s ``QWEN3``)."""
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
              r"|\s+(?!\S)|\s+")
"""The pre-tokenizer split of Qwen2's and Qwen3's tokenizer.json (then byte-level BPE)."""
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<think>", "</think>"]
REQUIRED = ["numpy", "torch", "transformers", "tokenizers", "safetensors", "peft", "gymnasium", "pettingzoo",
            "jsonschema", "yaml", "matplotlib", "tqdm", "pytest"]
"""Modules the check imports (``yaml`` is the package pyyaml)."""

BF16_PEAK = [  # dense bfloat16 tensor-core peaks (TFLOP/s) from the vendor's data sheets; first match wins
    ("h100 pcie", 756), ("h100 nvl", 835), ("h100", 989), ("gh200", 989), ("h200", 989), ("h800", 989),
    ("b200", 2250), ("b100", 1750), ("a100", 312), ("a800", 312), ("l40s", 362), ("l40", 181), ("l4", 121),
    ("a10g", 70), ("a10", 125), ("rtx 4090", 165), ("rtx 6000 ada", 364),
]


def bf16_peak(name: str) -> float | None:
    """The card's dense bf16 peak in FLOP/s, from :data:`BF16_PEAK` by its name; ``None`` if unknown."""
    lowered = name.lower()
    return next((tflops * 1e12 for key, tflops in BF16_PEAK if key in lowered), None)


@dataclass(frozen=True)
class Size:
    """A decoder's shape, and the vocabulary the BPE tokenizer is trained to (at most)."""

    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    positions: int = 4096


QWEN3_06B = Size(28, 1024, 3072, 16, 8, 128, 16384)  # Qwen/Qwen3-0.6B's config.json, but its 151,936-token vocabulary
QWEN25_05B = Size(24, 896, 4864, 14, 2, 64, 16384)  # Qwen/Qwen2.5-0.5B-Instruct's, likewise
TINY = Size(2, 64, 128, 4, 2, 16, 640, 2048)


# ------------------------------------------------------------------------------------------------------ reporting


def say(text: str) -> None:
    print(f"{TAG} {text}", flush=True)


@dataclass
class Result:
    name: str
    ok: bool
    seconds: float
    detail: str


class Checks:
    """Runs named checks in order, each one line; a check whose prerequisite failed is reported as not run."""

    def __init__(self, budget: float, only: set[str] | None):
        self.results: list[Result] = []
        self.start = time.perf_counter()
        self.budget = budget
        self.only = only

    def ok(self, name: str) -> bool:
        return any(r.name == name and r.ok for r in self.results)

    def run(self, name: str, fn: Callable[[], str], needs: tuple[str, ...] = ()) -> bool:
        if self.only is not None and name not in self.only:
            return False
        tick = time.perf_counter()
        missing = [n for n in needs if not self.ok(n)]
        if missing:
            ok, detail = False, f"not run: needs {', '.join(missing)}"
        elif tick - self.start > self.budget:
            ok, detail = False, f"not run: past the budget of {self.budget:.0f} s"
        else:
            try:
                ok, detail = True, fn()
            except CheckError as error:  # a condition that does not hold: its message says what was seen
                ok, detail = False, str(error)[:400]
            except Exception as error:  # noqa: BLE001 - every failure is reported as the check's line
                lines = traceback.format_exc().rstrip().splitlines()
                print("\n".join(lines[-20:]), file=sys.stderr, flush=True)
                text = str(error).strip().splitlines()
                ok, detail = False, f"{type(error).__name__}: {text[0] if text else ''}"[:400]
        seconds = time.perf_counter() - tick
        self.results.append(Result(name, ok, seconds, detail))
        say(f"{name}: {'ok' if ok else 'FAIL'} {detail} ({seconds:.1f} s)")
        return ok


class CheckError(AssertionError):
    """A check's condition that does not hold; the message says what was seen."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckError(message)


# -------------------------------------------------------------------------------------------------- measurements


@dataclass
class Phase:
    seconds: float = 0.0
    tokens: int = 0
    flops: float = 0.0
    peak_bytes: int = 0
    calls: int = 0


@dataclass
class Meter:
    """Time, tokens, FLOPs and peak GPU memory of the training loop's phases (generation, scoring, update,
    checkpoint, model loading), by wrapping the loop's own functions; per run name (``current``).

    Also keeps, for the token-in-token-out check, the last training rollout's trajectories and every prompt + reply
    (token ids) the actor was asked to continue during it, and whether the loaded actor was FSDP2-sharded."""

    device: str
    current: str = ""
    runs: dict[str, dict[str, Phase]] = field(default_factory=dict)
    trajectories: list[Any] = field(default_factory=list)
    sequences: set[tuple[int, ...]] = field(default_factory=set)
    sharded: bool | None = None
    lora: bool = False
    _params: dict[int, int] = field(default_factory=dict)

    def install(self) -> None:
        import trainers.rl.rollouts  # noqa: PLC0415 - brings torch
        import trainers.rl.train  # noqa: PLC0415 - brings torch
        import trainers.runtime.checkpoint  # noqa: PLC0415 - brings torch
        from agentgym_bench.rollout.hf import HFPolicy  # noqa: PLC0415 - brings torch

        train, rollouts = trainers.rl.train, trainers.rl.rollouts
        original_play = rollouts.play
        train.play = self._wrap("generation", original_play, self._play_tokens, training=True)
        rollouts.play = self._wrap("generation", original_play, self._play_tokens)
        train.score_samples = self._wrap("scoring", train.score_samples, self._score_flops)
        train.ppo_update = self._wrap("update", train.ppo_update, self._update_flops)
        trainers.runtime.checkpoint.save = self._wrap("checkpoint", trainers.runtime.checkpoint.save, None)
        train.load_models = self._wrap("load", train.load_models, self._loaded)  # the name the loop calls
        generate_ids = HFPolicy.generate_ids
        meter = self

        def recording(policy, prompts, keys=None):
            out = generate_ids(policy, prompts, keys)
            meter.sequences.update(tuple(p) + tuple(g.token_ids) for p, g in zip(prompts, out, strict=True))
            return out

        HFPolicy.generate_ids = recording

    def _wrap(self, phase: str, fn: Callable, measure: Callable | None, training: bool = False) -> Callable:
        import torch

        cuda = self.device.startswith("cuda")

        def wrapped(*args, **kwargs):
            if training:  # a training rollout: keep what the TITO check reads
                self.sequences = set()
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            tick = time.perf_counter()
            out = fn(*args, **kwargs)
            if cuda:
                torch.cuda.synchronize()
            record = self.runs.setdefault(self.current, {}).setdefault(phase, Phase())
            record.seconds += time.perf_counter() - tick
            record.calls += 1
            if cuda:
                record.peak_bytes = max(record.peak_bytes, torch.cuda.max_memory_allocated())
            if measure is not None:
                tokens, flops = measure(out, *args, **kwargs)
                record.tokens += tokens
                record.flops += flops
            if training:
                self.trajectories = list(out)
            return out

        return wrapped

    def params(self, model: Any) -> int:
        """Parameters of ``model`` (global counts for FSDP2's DTensors), counted once per model."""
        if id(model) not in self._params:
            model = getattr(model, "model", model) if type(model).__name__ == "AdaptersOff" else model
            self._params[id(model)] = sum(p.numel() for p in model.parameters())
        return self._params[id(model)]

    @staticmethod
    def _play_tokens(trajectories, *args, **kwargs) -> tuple[int, float]:
        return sum(len(turn.token_ids or []) for t in trajectories for turn in t.turns), 0.0

    def _score_flops(self, out, config, models, samples, dist, old_logprob=True) -> tuple[int, float]:
        """Forward passes only: 2 FLOPs a parameter a token, per model scored."""
        tokens = int(samples.attention_mask.sum())
        n = (self.params(models.actor_module) if old_logprob else 0)
        n += self.params(models.reference) if models.reference is not None else 0
        n += self.params(models.critic_module) if models.critic is not None else 0
        return tokens, 2.0 * n * tokens

    def _update_flops(self, out, config, models, optimizers, batch, dist, rng, update_actor=True) -> tuple[int, float]:
        """Model FLOPs of the update: 6 a parameter a token (forward + backward), 4 with LoRA (no weight gradients
        of the frozen base); gradient checkpointing's recomputation is not counted (MFU's convention)."""
        tokens = int(batch.samples.attention_mask.sum()) * config.ppo_epochs
        per_token = 4.0 if config.lora else 6.0
        n = self.params(models.actor_module) if update_actor else 0
        n += self.params(models.critic_module) if models.critic is not None else 0
        return tokens, per_token * n * tokens

    def _loaded(self, models, *args, **kwargs) -> tuple[int, float]:
        from trainers.runtime import fsdp  # noqa: PLC0415 - brings torch

        self.sharded = fsdp.is_sharded(models.actor_module)
        return 0, 0.0


def figures(name: str, phases: dict[str, Phase], peak: float | None) -> str:
    """One line of figures for a run."""

    def memory(p: Phase) -> str:
        return f", peak {p.peak_bytes / 2**30:.1f} GiB" if p.peak_bytes else ""

    parts = []
    if "generation" in phases:
        p = phases["generation"]
        parts.append(f"generation {p.tokens / p.seconds:,.0f} tok/s ({p.tokens} tokens in {p.seconds:.1f} s"
                     f"{memory(p)})")
    if "scoring" in phases:
        p = phases["scoring"]
        parts.append(f"scoring {p.tokens / p.seconds:,.0f} tok/s{memory(p)}")
    if "update" in phases:
        p = phases["update"]
        mfu = f", MFU {100 * p.flops / p.seconds / peak:.1f}% of {peak / 1e12:.0f} TFLOP/s" if peak else ""
        parts.append(f"update {p.tokens / p.seconds:,.0f} tok/s ({p.flops / p.seconds / 1e12:.2f} TFLOP/s{mfu}"
                     f"{memory(p)})")
    if "checkpoint" in phases:
        p = phases["checkpoint"]
        parts.append(f"checkpoint {p.seconds / p.calls:.1f} s each{memory(p)}")
    if "load" in phases:
        p = phases["load"]
        parts.append(f"load {p.seconds / p.calls:.1f} s each{memory(p)}")
    return f"figures {name}: " + "; ".join(parts)


# ------------------------------------------------------------------------------------------ the model and tokenizer


def corpus(tiny: bool) -> list[str]:
    """Text to train the tokenizer on: every agent env's observations and instructions (both prompt templates, a
    few random steps), the bundled WebShop store, Bargain, and the project's Markdown docs."""
    texts: list[str] = []
    seeds = range(3 if tiny else 40)
    rng = random.Random(0)
    for env_id in sorted(agentgym_bench.AGENT_ENVS):
        for prompt in ("ragen", "compact"):
            for seed in seeds:
                try:
                    env = gym.make(env_id, prompt=prompt)
                    obs, info = env.reset(seed=seed)
                except Exception:  # noqa: BLE001 - an env whose game is not installed only shrinks the corpus
                    break
                texts += [obs, str(info.get("system_prompt", ""))]
                for _ in range(3):
                    actions = info.get("valid_actions") or ["Up"]
                    answer = f"<think>I go {rng.choice(actions)}.</think><answer>{rng.choice(actions)}</answer>"
                    obs, _, terminated, truncated, info = env.step(answer)
                    texts += [answer, obs]
                    if terminated or truncated:
                        break
                env.close()
    texts += webshop_texts() + bargain_texts()
    if not tiny:
        texts += [p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))]
    return [t for t in texts if t]


def build_tokenizer(size: Size, tiny: bool):
    """A byte-level BPE tokenizer as Qwen's (NFC, Qwen's split regex, byte-level, BPE), trained here on
    :func:`corpus`, with Qwen3's special tokens and chat template: a ``PreTrainedTokenizerFast``."""
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(token_models.BPE())
    core.normalizer = normalizers.NFC()
    core.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    core.decoder = decoders.ByteLevel()
    trainer = token_trainers.BpeTrainer(vocab_size=size.vocab, min_frequency=2, special_tokens=SPECIAL,
                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    core.train_from_iterator(corpus(tiny), trainer)
    core.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED])
    return PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=QWEN3_TEMPLATE.read_text(), clean_up_tokenization_spaces=False,
                                   model_max_length=size.positions)


def build_model(tokenizer: Any, size: Size, device: str, seed: int = 0):
    """A randomly initialised ``Qwen3ForCausalLM`` (``Qwen2ForCausalLM`` where transformers has no Qwen3) of
    ``size`` with ``tokenizer``'s vocabulary, tied embeddings as the small Qwen models; drawn on ``device``."""
    import torch
    import transformers
    from transformers import GenerationConfig

    family = "Qwen3" if hasattr(transformers, "Qwen3Config") else "Qwen2"
    if family == "Qwen2" and size == QWEN3_06B:
        size = QWEN25_05B
    config_class = getattr(transformers, f"{family}Config")
    model_class = getattr(transformers, f"{family}ForCausalLM")
    pad, eos = tokenizer.convert_tokens_to_ids(["<|endoftext|>", "<|im_end|>"])
    config = config_class(vocab_size=len(tokenizer), hidden_size=size.hidden, intermediate_size=size.intermediate,
                          num_hidden_layers=size.layers, num_attention_heads=size.heads,
                          num_key_value_heads=size.kv_heads, head_dim=size.head_dim,
                          max_position_embeddings=size.positions, rms_norm_eps=1e-6, tie_word_embeddings=True,
                          bos_token_id=pad, eos_token_id=eos, pad_token_id=pad, attention_dropout=0.0)
    torch.manual_seed(seed)
    with torch.device(device):
        model = model_class(config)
    model.generation_config = GenerationConfig(eos_token_id=[eos, pad], pad_token_id=pad, bos_token_id=pad)
    return model


def check_model(args: argparse.Namespace, path: Path) -> str:
    import torch

    size = TINY if args.tiny else QWEN3_06B
    tick = time.perf_counter()
    tokenizer = build_tokenizer(size, args.tiny)
    trained = time.perf_counter() - tick
    model = build_model(tokenizer, size, args.device)
    params = sum(p.numel() for p in model.parameters())
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Sokoban:\n#####\n#_P_#\n#####"},
                {"role": "assistant", "content": "<think>Push left.</think><answer>Left</answer>"},
                {"role": "user", "content": "Again."}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    expect(tokenizer.decode(ids) == text, "the tokenizer does not decode its own encoding back to the text")
    expect(text.endswith("<|im_start|>assistant\n") and "<think>" not in text,
           "Qwen3's template did not render as published (the earlier turn's <think> part stays)")
    model.to(torch.bfloat16).save_pretrained(path)
    tokenizer.save_pretrained(path)
    del model
    free_memory()
    return (f"{_family()}, {params:,} parameters ({size.layers} layers, width "
            f"{size.hidden}), byte-level BPE of {len(tokenizer)} tokens trained in {trained:.1f} s, Qwen3 template; "
            f"saved to {path}")


def _family() -> str:
    import transformers

    return "Qwen3" if hasattr(transformers, "Qwen3Config") else "Qwen2"


def free_memory() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# ------------------------------------------------------------------------------------------------------ training


def train_config(args: argparse.Namespace, model: Path, out: Path, preset: str, **extra: Any) -> dict[str, Any]:
    """A short Sokoban run of ``preset``: RAGEN's prompt, whole conversations of 2 turns, the HF backend, bfloat16
    mixed precision and gradient checkpointing (the GPU recipes' settings), sized for minutes."""
    tiny = args.tiny
    groups, group_size = (4, 2) if tiny else (8, 4)
    env = {"tags": ["AgentSokoban-v0"], "env_kwargs": {"prompt": "ragen", "max_turns": 2}, "history_length": None}
    rows = {"starpo": groups * group_size, "starpo_s": 2 * group_size, "gigpo": groups * group_size}[preset]
    config = {
        "preset": preset, "pretrain": str(model), "output_dir": str(out), "seed": 0,
        "device": args.device, "dtype": "bfloat16", "gradient_checkpointing": True, "generation_backend": "hf",
        "max_steps": args.steps, "eval_steps": 1000, "save_steps": 0, "save_total_limit": 1, "progress": False,
        "rollout_batch_size": groups * group_size, "val_batch_size": 4 if tiny else 8,
        "train_env_manager": {"num_env_groups": groups, "group_size": group_size, **env},
        "val_env_manager": {"group_size": 1, **env},
        "max_new_tokens": 8 if tiny else 48,
        "rollout_filter_ratio": 2 / groups if preset == "starpo_s" else 1.0,
        "ppo_mini_batch_size": rows // 2 if preset != "starpo_s" else rows, "micro_batch_size": 2 if tiny else 4,
        "learning_rate": 1e-6, "critic_learning_rate": 1e-5,
        "num_threads": 1 if args.device == "cpu" else None,  # CPU cores shared with other work: 1 is fastest
    }
    return merge(config, extra)


def train(config: dict[str, Any], meter: Meter, name: str) -> None:
    """Run (or resume) the training loop in this process, measured under ``name``."""
    from trainers.rl.config import config_from_dict  # noqa: PLC0415 - brings torch
    from trainers.rl.train import main  # noqa: PLC0415 - brings torch

    meter.current = name
    try:
        main(config_from_dict(config))
    finally:
        free_memory()


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def finite_losses(record: dict[str, Any], config: dict[str, Any]) -> None:
    keys = ["loss/policy", "loss/entropy", "loss/grad_norm"]
    if config["preset"] == "starpo_s":
        keys += ["critic/value_loss", "critic/grad_norm"]
    if config["preset"] in ("starpo", "gigpo"):
        keys += ["loss/kl"]
    for key in keys:
        value = record.get(key)
        expect(value is not None and math.isfinite(value), f"step {record['step']}: {key} = {value}")
    expect(not record.get("warn/skipped_steps"), f"step {record['step']}: an optimiser step was skipped "
           "(non-finite gradient norm)")


def check_checkpoint(folder: Path, config: dict[str, Any]) -> None:
    expect((folder / "trainer_state.pt").is_file(), f"{folder.name} has no trainer_state.pt")
    expect((folder / "actor" / "config.json").is_file(), f"{folder.name}/actor has no config.json")
    if config["preset"] == "starpo_s":
        expect((folder / "critic" / "config.json").is_file(), f"{folder.name}/critic has no config.json")
    if config.get("lora_target"):
        expect((folder / "actor_adapter" / "adapter_config.json").is_file(),
               f"{folder.name}/actor_adapter has no adapter_config.json")


def run_and_resume(args: argparse.Namespace, model: Path, name: str, preset: str, meter: Meter | None,
                   launch: Callable[[dict[str, Any], str], None] | None = None, **extra: Any) -> str:
    """``args.steps`` iterations, checkpoint, then one more resumed from it; checks metrics, losses, checkpoints."""
    out = args.work / name
    shutil.rmtree(out, ignore_errors=True)
    config = train_config(args, model, out, preset, **extra)
    launch = launch or (lambda c, n: train(c, meter, n))
    steps = args.steps
    launch(config, name)
    first = records(out)
    expect([r["step"] for r in first] == list(range(steps + 1)),
           f"metrics steps {[r['step'] for r in first]}, expected 0..{steps}")
    for record in first[1:]:
        finite_losses(record, config)
    check_checkpoint(out / f"checkpoint-{steps}", config)
    resumed = {**config, "max_steps": steps + 1, "resume_from_checkpoint": "auto"}
    launch(resumed, name)
    after = records(out)
    expect([r["step"] for r in after] == list(range(steps + 2)),
           f"resumed metrics steps {[r['step'] for r in after]}, expected 0..{steps + 1}")
    finite_losses(after[-1], config)
    check_checkpoint(out / f"checkpoint-{steps + 1}", config)
    expect(not (out / f"checkpoint-{steps}").exists(), "save_total_limit=1 did not prune the older checkpoint")
    expect((out / "summary.json").is_file(), "no summary.json after the resumed run")
    last = after[-1]
    gap = last.get("rollout/logprob_diff")
    return (f"{steps} iteration{'s' if steps > 1 else ''} + 1 resumed from checkpoint-{steps}; last: "
            f"loss/policy {last['loss/policy']:.4g}, grad_norm {last['loss/grad_norm']:.3g}"
            + (f", value_loss {last['critic/value_loss']:.3g}" if "critic/value_loss" in last else "")
            + (f", sampled-vs-recomputed log-prob gap {gap:.2e}" if gap is not None else "")
            + f", {last['rollout/samples']:.0f} rows of {last['rollout/response_length']:.0f}-token replies")


def check_async(args: argparse.Namespace, model: Path, meter: Meter) -> str:
    """StarPO with ``async_rollout.max_staleness: 1``: the rollout worker process generates on the same device while
    the learner updates (issue 52); two iterations more than the others (so batches are played while the learner
    updates), checkpoint and resume as the others, then every batch's lag within the bound and the behaviour
    importance weights finite."""
    longer = argparse.Namespace(**{**vars(args), "steps": args.steps + 2})  # batches played while the learner updates
    done = run_and_resume(longer, model, "async", "starpo", meter, async_rollout={"max_staleness": 1},
                          use_sampler_logprobs=False)
    steps = records(args.work / "async")[1:]
    lags = [r["async/version_lag"] for r in steps]
    expect(all(0 <= lag <= 1 for lag in lags), f"version lags {lags} exceed max_staleness 1")
    weights = [r["async/is_weight_max"] for r in steps]
    expect(all(math.isfinite(w) for w in weights), f"behaviour weights {weights}")
    generate = sum(r["time/generate"] for r in steps) / len(steps)
    wait = sum(r["time/rollout"] for r in steps) / len(steps)
    return (f"{done}; lags {lags}, max behaviour weight {max(weights):.3g}, worker {generate:.2f} s a batch, "
            f"learner waited {wait:.2f} s a batch")


def prune(out: Path, keep_actor: bool = False) -> None:
    """Free the disk a finished run took (a full checkpoint of the real size is several GB); optionally keep the
    last checkpoint's ``actor/``."""
    for folder in sorted(out.glob("checkpoint-*")):
        for child in folder.iterdir():
            if not (keep_actor and child.name == "actor"):
                shutil.rmtree(child) if child.is_dir() else child.unlink()


def check_tito(meter: Meter, model: Path) -> str:
    """The last StarPO-S training rollout, rebuilt as whole-episode rows token-in-token-out: each row, cut after each
    reply, is exactly a prompt the actor was asked to continue plus the ids it sampled."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    expect("think" in (tokenizer.chat_template or ""), "the tokenizer does not carry Qwen3's template")
    trajectories = meter.trajectories
    expect(bool(trajectories) and bool(meter.sequences), "no recorded training rollout")
    turns = checked = 0
    for trajectory in trajectories:
        view = trajectory_token_view(trajectory, tokenizer, tito=True)
        for _start, end in view.spans:
            expect(tuple(view.input_ids[:end]) in meter.sequences,
                   f"episode seed {trajectory.seed}: the training row up to a reply is not what the model read")
            checked += 1
        turns = max(turns, len(trajectory.turns))
    expect(turns >= 2, "no episode had 2 turns; the check needs a re-rendered history")
    return (f"{checked} replies in {len(trajectories)} whole-episode rows (up to {turns} turns) hold exactly the "
            "prompted and sampled ids")


def check_logprob_gap(out: Path, device: str) -> str:
    gaps = [r["rollout/logprob_diff"] for r in records(out) if "rollout/logprob_diff" in r]
    expect(bool(gaps), "no rollout/logprob_diff recorded")
    limit = 0.1 if device.startswith("cuda") else 1e-3  # bf16 on the GPU; float32 on a CPU
    expect(all(math.isfinite(g) and g < limit for g in gaps), f"sampled-vs-recomputed log-prob gaps {gaps} "
           f"(limit {limit}; inf: a row's generated tokens do not match the sampled ones)")
    return f"mean |recomputed - sampled| log-prob per iteration: {', '.join(f'{g:.2e}' for g in gaps)}"


# ----------------------------------------------------------------------------------------------- FSDP2 (torchrun)


def subprocess_run(command: list[str], what: str, timeout: float) -> None:
    """Run ``command`` with the project on ``PYTHONPATH``, its output kept; on failure its last lines go to stderr
    and the check fails naming ``what``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, env=env, timeout=timeout, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stdout + done.stderr).rstrip().splitlines()
        print("\n".join(lines[-30:]), file=sys.stderr, flush=True)
        raise CheckError(f"{what} exited with {done.returncode}: {lines[-1] if lines else ''}"[:400])


def torchrun_launch(args: argparse.Namespace, report: Path) -> Callable[[dict[str, Any], str], None]:
    """Run a config in a ``torchrun --nproc_per_node 1`` child (:func:`child`), which writes its measurements."""

    def launch(config: dict[str, Any], name: str) -> None:
        spec = args.work / f"{name}-config.json"
        spec.write_text(json.dumps(config))
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1",
                   str(Path(__file__).resolve()), "--child", str(spec), "--report", str(report),
                   "--device", args.device, "--work", str(args.work)]
        subprocess_run(command, "torchrun", args.child_timeout)

    return launch


def child(args: argparse.Namespace) -> int:
    """Inside torchrun: join a process group of one (NCCL on CUDA, gloo on CPU), run the config through the loop
    (FSDP2 shards over the group), and append the measurements to the report."""
    import torch
    import torch.distributed as dist
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    config = json.loads(Path(args.child).read_text())
    if args.device.startswith("cuda"):
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
    else:
        dist.init_process_group("gloo")
    meter = Meter(args.device)
    meter.install()
    try:
        train(config, meter, "fsdp2")
    finally:
        dist.destroy_process_group()
    report = Path(args.report)
    old = json.loads(report.read_text()) if report.exists() else {"phases": {}, "sharded": []}
    for phase, p in meter.runs.get("fsdp2", {}).items():
        merged = old["phases"].setdefault(phase, vars(Phase()))
        for key in ("seconds", "tokens", "flops", "calls"):
            merged[key] += getattr(p, key)
        merged["peak_bytes"] = max(merged["peak_bytes"], p.peak_bytes)
    old["sharded"].append(meter.sharded)
    report.write_text(json.dumps(old))
    return 0


def check_fsdp2(args: argparse.Namespace, model: Path, meter: Meter) -> str:
    report = args.work / "fsdp2-report.json"
    report.unlink(missing_ok=True)
    detail = run_and_resume(args, model, "fsdp2", "starpo_s", None, launch=torchrun_launch(args, report),
                            strategy="fsdp2")
    measured = json.loads(report.read_text())
    expect(measured["sharded"] == [True, True], f"the actor was not FSDP2-sharded (runs: {measured['sharded']})")
    meter.runs["fsdp2"] = {k: Phase(**v) for k, v in measured["phases"].items()}
    import torch

    folder = args.work / "fsdp2" / f"checkpoint-{args.steps + 1}"
    state = torch.load(folder / "trainer_state.pt", weights_only=False, map_location="cpu")
    expect(state["strategy"] == "fsdp2", f"the checkpoint records strategy {state['strategy']!r}, not fsdp2")
    architectures = json.loads((folder / "actor" / "config.json").read_text())["architectures"]
    expect(architectures == [f"{_family()}ForCausalLM"], f"actor/config.json names {architectures}")
    return f"torchrun, 1 process, actor and critic sharded; {detail}"


# ------------------------------------------------------------------------------------------------------- eval


def check_eval(args: argparse.Namespace, actor: Path) -> str:
    """``agentgym-bench eval --policy hf:ACTOR --device DEVICE`` on a small Sokoban suite, twice."""
    episodes = 4 if args.tiny else 16
    suite = args.work / "gpu-check-suite.json"
    suite.write_text(json.dumps({
        "name": "gpu-check-sokoban", "version": 1, "split": "validation", "seed_start": 0,
        "description": "gpu_check.py: validation seeds of AgentSokoban-v0, 2 turns",
        "entries": [{"name": "sokoban-6x6", "env_id": "AgentSokoban-v0", "env_kwargs": {"max_turns": 2},
                     "prompts": ["ragen"], "episodes": episodes, "oracle_success": 0.5}]}))
    replies, rates = [], []
    for i in (1, 2):
        out = args.work / f"eval-{i}.json.gz"
        command = [sys.executable, "-m", "agentgym_bench.cli", "eval", "--policy", f"hf:{actor}", "--suite",
                   str(suite), "--device", args.device, "--max-new-tokens", "8" if args.tiny else "48",
                   "--out", str(out), "--overwrite"]  # a --work folder used before holds the last check's
        subprocess_run(command, f"eval run {i}", args.child_timeout)
        results = json.loads(gzip.open(out).read())
        played = results["entries"][0]["episodes"]
        expect(len(played) == episodes, f"eval run {i} played {len(played)} episodes, not {episodes}")
        replies.append([[t["reply"] for t in e["turns"]] for e in played])
        compute = results["metadata"]["compute"]
        rates.append(compute["generated_tokens"] / compute["wall_time_s"] if compute.get("generated_tokens") else 0)
    same = sum(a == b for a, b in zip(*replies, strict=True))
    return (f"{episodes} episodes played twice (keyed sampling, temperature 1): {same}/{episodes} identical "
            f"({same / episodes:.0%}); generation {rates[0]:,.0f} and {rates[1]:,.0f} tok/s")


# --------------------------------------------------------------------------------------------------- the others


def check_imports() -> str:
    missing = []
    for name in REQUIRED:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append("pyyaml" if name == "yaml" else name)
    expect(not missing, f"missing: {', '.join(missing)} (the GPU image lacks them: bring their wheels in "
           ".gpu-wheels/, scripts/fetch_gpu_wheels.sh)")
    for name in ("agentgym_bench", "trainers.rl.train", "trainers.runtime.fsdp", "trainers.runtime.lora",
                 "agentgym_bench.commands.eval"):
        importlib.import_module(name)
    return (f"python {platform.python_version()}, " + ", ".join(f"{k} {importlib.metadata.version(k)}" for k in
            ("torch", "transformers", "peft", "tokenizers", "gymnasium", "pettingzoo", "jsonschema")))


def check_device(args: argparse.Namespace) -> str:
    import torch

    if not args.device.startswith("cuda"):
        return f"CPU ({os.cpu_count()} cores): no GPU figures"
    expect(torch.cuda.is_available(), "no CUDA GPU visible (torch.cuda.is_available() is False)")
    name = torch.cuda.get_device_name(0)
    memory = torch.cuda.get_device_properties(0).total_memory / 2**30
    peak = bf16_peak(name)
    args.peak = peak
    expect(torch.cuda.is_bf16_supported(), f"{name} has no bfloat16 support")
    return (f"{name}, {memory:.0f} GiB, CUDA {torch.version.cuda}, "
            + (f"dense bf16 peak {peak / 1e12:.0f} TFLOP/s" if peak else "bf16 peak unknown (no MFU)"))


def check_pytest(args: argparse.Namespace) -> str:
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                   if "mark.gpu" in p.read_text())
    expect(bool(files), "no test file has a gpu mark")
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-rs", "-p", "no:cacheprovider", *files]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=args.child_timeout)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    expect(done.returncode == 0, f"pytest -m gpu exited with {done.returncode}: " + " | ".join(lines[-5:]))
    skipped = [line.split(":", 2)[-1].strip() for line in lines if line.startswith("SKIPPED")]
    reasons = sorted(set(skipped))
    return f"{lines[-1] if lines else ''}" + (f" (skipped: {'; '.join(reasons)})" if reasons else "")


# ---------------------------------------------------------------------------------------------------------- main


CHECK_NAMES = ("imports", "device", "model", "starpo_s", "tito-qwen3", "starpo", "gigpo", "fsdp2", "lora", "eval",
               "async", "pytest-gpu")
"""Every check :func:`main` runs, in order (``--only`` takes these)."""


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--tiny", action="store_true", help="a tiny model and 1 iteration + 1 resumed (CPU plumbing)")
    parser.add_argument("--work", type=Path, default=None,
                        help="work folder (default: a new one in /dev/shm on CUDA where it has 48 GiB free, the "
                        "checkpoints of the real size being ~11 GB each; else in the temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds after which no further check starts (default: 420 on CUDA, 1800 on a CPU)")
    parser.add_argument("--only", default=None,
                        help=f"comma-separated check names, of {', '.join(CHECK_NAMES)} (the model is always built)")
    parser.add_argument("--child-timeout", type=float, default=300, help="seconds for each subprocess")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # inside torchrun: the config to run
    parser.add_argument("--report", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = sorted(set((args.only or "").split(",")) - set(CHECK_NAMES) - {""})
    if unknown:  # a typo would otherwise run nothing of what was asked and read as a pass
        parser.error(f"--only: no check named {', '.join(unknown)}; the checks: {', '.join(CHECK_NAMES)}")
    args.steps = 1 if args.tiny else 2
    args.peak = None
    if args.budget is None:
        args.budget = 1800 if args.device == "cpu" else 420
    return args


def memory_folder(args: argparse.Namespace) -> str | None:
    """``/dev/shm`` for the real size on CUDA where it has room (checkpoints are written at memory speed), else
    ``None`` (the temporary folder)."""
    shm = Path("/dev/shm")
    if args.tiny or args.device == "cpu" or not shm.is_dir():
        return None
    return str(shm) if shutil.disk_usage(shm).free >= 48 * 2**30 else None


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.child:
        return child(args)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.device == "cpu":  # one thread a process (the eval and torchrun children too): shared cores spin less
        os.environ["OMP_NUM_THREADS"] = "1"
    made = args.work is None
    args.work = Path(args.work or tempfile.mkdtemp(prefix="gpu_check-", dir=memory_folder(args))).resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    only = None if args.only is None else {"imports", "device", "model", *args.only.split(",")}
    checks = Checks(args.budget, only)
    say(f"{'tiny model on ' if args.tiny else ''}{args.device}; work folder {args.work}")
    if not checks.run("imports", check_imports):
        return summary(checks, args, None)
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    checks.run("device", lambda: check_device(args))
    model = args.work / "model"
    checks.run("model", lambda: check_model(args, model), needs=("device",))
    meter = Meter(args.device)
    meter.install()
    base = ("model",)
    checks.run("starpo_s", lambda: run_and_resume(args, model, "starpo_s", "starpo_s", meter), needs=base)
    checks.run("tito-qwen3", lambda: check_tito(meter, model) + "; " + check_logprob_gap(
        args.work / "starpo_s", args.device), needs=("starpo_s",))
    prune(args.work / "starpo_s", keep_actor=True)
    checks.run("starpo", lambda: run_and_resume(args, model, "starpo", "starpo", meter), needs=base)
    prune(args.work / "starpo")
    checks.run("gigpo", lambda: run_and_resume(args, model, "gigpo", "gigpo", meter), needs=base)
    prune(args.work / "gigpo")
    checks.run("fsdp2", lambda: check_fsdp2(args, model, meter), needs=base)
    prune(args.work / "fsdp2")
    checks.run("lora", lambda: run_and_resume(args, model, "lora", "starpo_s", meter, lora_target="all",
                                              lora_rank=16, learning_rate=1e-5), needs=base)
    prune(args.work / "lora")
    actor = args.work / "starpo_s" / f"checkpoint-{args.steps + 1}" / "actor"
    checks.run("eval", lambda: check_eval(args, actor), needs=("starpo_s",))
    checks.run("async", lambda: check_async(args, model, meter), needs=base)
    prune(args.work / "async")
    checks.run("pytest-gpu", lambda: check_pytest(args))
    for name, phases in meter.runs.items():
        if name:
            say(figures(name, phases, args.peak))
    code = summary(checks, args, meter)
    if made and not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return code


def summary(checks: Checks, args: argparse.Namespace, meter: Meter | None) -> int:
    failed = [r for r in checks.results if not r.ok]
    total = time.perf_counter() - checks.start
    say(f"summary: {len(checks.results) - len(failed)} ok, {len(failed)} FAIL in {total:.0f} s "
        f"(budget {args.budget:.0f} s){' on a tiny model' if args.tiny else ''}")
    for r in checks.results:
        say(f"  {r.name}: {'ok' if r.ok else 'FAIL'} ({r.seconds:.0f} s)" + ("" if r.ok else f" {r.detail}"))
    late = [r.name for r in failed if r.detail.startswith("not run: past the budget")]
    if late:  # on a machine lent for one command of at most 10 minutes, the rest is a second command
        say(f"  the checks past the budget run alone: bash scripts/gpu_check.sh --only {','.join(late)}")
    return 1 if failed else 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main(sys.argv[1:]))
