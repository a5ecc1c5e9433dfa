"""The trainers' command line, both trainers in one place: ``agentgym-bench train`` and ``agentgym-bench warmstart``.

``agentgym-bench train CONFIG [key=value ...]`` runs StarPO, StarPO-S or GiGPO (:mod:`trainers.rl.train`);
``agentgym-bench warmstart [CONFIG] [key=value ...]`` runs the warm start, supervised fine-tuning on oracle
demonstrations (:mod:`trainers.sft.warmstart`). ``CONFIG`` is a YAML file or the name of a bundled config in
``trainers/configs/`` (see ``--list``: ``warmstart-*`` are the warm start's, the rest RL's); the warm start without
one takes its defaults (the reference recipe's first stage). Each ``key=value`` overrides one key, dotted for nested
ones (``train_env_manager.group_size=8``); values are YAML (``1e-4``, ``true``, ``[a, b]``). Both configs are read by
one loader (:mod:`trainers.runtime.config_loading`) and documented in ``docs/trainers.md`` and their dataclasses
(``trainers/rl/config.py``, ``trainers/sft/sft_config.py``). Both write a run folder (``config.yaml``,
``metrics.jsonl``, ``checkpoint-N/``) and launch processes by one rule (:mod:`trainers.runtime.launch`): one process,
or ``torchrun --nproc_per_node N -m trainers.cli [warmstart] CONFIG ...``, and the warm start's ``processes=N`` starts
N processes itself.

Reached from ``agentgym-bench``'s lazy command table (:data:`TRAIN`, :data:`WARMSTART`); ``--list`` and ``--help``
import neither torch nor the loops. Config mistakes are :class:`~trainers.runtime.config_loading.ConfigError` (a
:class:`~agentgym_bench.errors.UserError`): one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agentgym_bench import run_folder
from agentgym_bench.errors import UserError
from agentgym_bench.paths import expand, resolve_model
from agentgym_bench.rollout.scripted import DEMONSTRATORS, has_demonstrator
from trainers.runtime.config_loading import bundled_configs, merge, parse_overrides, read_yaml, resolve_config
from trainers.runtime.metrics import success_gain
from trainers.sft.sft_config import DEFAULT_ENVS, SFTConfig, sft_config_from_dict

# -- train -------------------------------------------------------------------------------------------------------


TRAIN_EPILOG = """examples:
  agentgym-bench train --list                  # bundled configs: baseline-* (the main job's recipes),
                                               # {starpo,starpo_s,gigpo}-{frozenlake,sokoban}, pilot-* (the studies')
  agentgym-bench train gigpo-frozenlake max_steps=2 output_dir=runs/try \\
      pretrain=leaderboards/agentgym-v2/models/default-model-sft   # a first run: two iterations, about 30 s
  agentgym-bench train baseline-gigpo --print-config                # every key, resolved
  agentgym-bench train baseline-gigpo seed=1 output_dir=runs/gigpo-s1
  torchrun --nproc_per_node 2 -m trainers.cli gigpo-sokoban         # data-parallel (gloo on CPU, NCCL on GPU)

The keys follow ROLL's agentic configs (docs/trainers.md has them, the algorithms and the metrics); an unknown key is
an error that names the nearest. The run folder (output_dir) holds config.yaml, metrics.jsonl, curves.png and
checkpoint-N/. A stopped run continues from its last checkpoint when its command is run again with
resume_from_checkpoint=auto added; settings that would train otherwise are refused (max_steps may grow)."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = TRAIN_EPILOG
    parser.add_argument("config", nargs="?", help="YAML config file or bundled config name (see --list)")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. max_steps=20")
    parser.add_argument("--list", action="store_true", help="list the bundled configs and exit")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")


def run(args: argparse.Namespace) -> int:
    if args.list:
        print("\n".join(bundled_configs()))
        return 0
    try:
        if not args.config:
            raise UserError(f"give a CONFIG (a YAML file or one of: {', '.join(bundled_configs())})")
        return _train(args)
    except UserError as error:
        print(f"agentgym-bench train: error: {error}", file=sys.stderr)
        return 2


def _train(args: argparse.Namespace) -> int:
    from trainers.rl.config import load_config  # noqa: PLC0415 - brings torch

    config = load_config(resolve_config(args.config), args.overrides)
    if args.print_config:
        print(yaml.safe_dump(config.to_dict(), sort_keys=False), end="")
        return 0
    import transformers

    from trainers.rl.train import main as train_main  # noqa: PLC0415 - brings torch

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    result = train_main(config)
    if os.environ.get("RANK", "0") != "0":  # under torchrun, one report
        return 0
    print(f"run folder: {result.output_dir}  (metrics.jsonl, curves.png, summary.json, checkpoint-*/)")
    gain = success_gain(result.first_eval, result.last_eval) if result.first_eval and result.last_eval else None
    if gain is None and (summary := run_folder.read_summary(result.output_dir)) and summary.get("val"):
        done = max((r["step"] for r in result.records), default=config.max_steps)
        print(f"nothing to train: the run had already trained {done} iterations (max_steps={config.max_steps}); what "
              f"it recorded (summary.json):")
        gain = summary["val"]
    if gain:
        print(f"validation success {gain['before']:.3f} -> {gain['after']:.3f} over {gain['n_after']} episodes: "
              f"gain {gain['gain']:+.3f} (paired 95% CI {gain['ci_low']:+.3f} .. {gain['ci_high']:+.3f}, "
              f"McNemar p {gain['p_value']:.2g})")
    return 0


# -- warmstart ---------------------------------------------------------------------------------------------------

WARMSTART_EPILOG = """examples:
  agentgym-bench warmstart                                   # the defaults: the reference recipe's first stage
  agentgym-bench warmstart warmstart-2 model=R/stage1 output=R/stage2     # a bundled stage, other folders
  agentgym-bench warmstart envs=[AgentFrozenLake-v0] episodes=3000 epochs=4 output=R/lake
  agentgym-bench warmstart my-stage.yaml --print-config      # every key, resolved

keys (trainers/sft/sft_config.py, docs/trainers.md): model, output, envs, prompt, history, epsilon, oracle_actions,
demonstrators, copy_augment, episodes, epochs, batch_size, group_by_length, lr, warmup, eval_episodes, temperature,
max_new_tokens, seed, env_kwargs, processes, num_threads, save_steps, dtype.

The run folder (output, default $AGENTGYM_BENCH_HOME/models/warmstart) holds config.yaml, metrics.jsonl and
checkpoint-N/ while it trains (a stopped run started again continues from its last checkpoint), then the model and
warmstart.json.

The old flags (--model M --episodes ENV=N ... --processes P --threads T) still work for this release, each setting
the key of its name (--threads: num_threads; --history -1: history=null; --oracle-actions 0: oracle_actions=null);
the command prints the key=value form to use instead."""

LEGACY_FLAGS: dict[str, tuple[str, dict[str, Any]]] = {
    "--model": ("model", {}), "--output": ("output", {}), "--envs": ("envs", {"nargs": "+"}),
    "--prompt": ("prompt", {}), "--history": ("history", {"type": int}), "--epsilon": ("epsilon", {"type": float}),
    "--oracle-actions": ("oracle_actions", {"type": int}),
    "--demonstrator": ("demonstrators", {"action": "append", "metavar": "ENV=NAME"}),
    "--copy-augment": ("copy_augment", {"type": int, "metavar": "K"}),
    "--episodes": ("episodes", {"nargs": "+", "metavar": "N|ENV=N"}), "--epochs": ("epochs", {"type": int}),
    "--batch-size": ("batch_size", {"type": int}), "--group-by-length": ("group_by_length", {"action": "store_true"}),
    "--lr": ("lr", {"type": float}), "--eval-episodes": ("eval_episodes", {"type": int}),
    "--temperature": ("temperature", {"type": float}), "--max-new-tokens": ("max_new_tokens", {"type": int}),
    "--seed": ("seed", {"type": int}), "--processes": ("processes", {"type": int}),
    "--threads": ("num_threads", {"type": int}),
}
"""``agentgym-bench warmstart``'s flags before the config (kept for one release) -> the key each sets, and its
argparse settings."""


def configure_warmstart_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.usage = "%(prog)s [-h] [--list] [--print-config] [config] [key=value ...]   (old flags: below)"
    parser.description = ("supervised warm start on oracle demonstrations, configured like train: a YAML config\n"
                          "(a file or a bundled warmstart-* name; none: the defaults) and key=value overrides")
    parser.epilog = WARMSTART_EPILOG
    parser.add_argument("config", nargs="?", help="YAML config file or bundled config name (see --list); a "
                        "key=value here is an override")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. epochs=4")
    parser.add_argument("--list", action="store_true", help="list the bundled warm-start configs and exit")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    old = parser.add_argument_group("old flags, kept for one release (each sets the key of its name)")
    for flag, (key, settings) in LEGACY_FLAGS.items():
        metavar = {} if settings.get("action") == "store_true" else {"metavar": settings.get("metavar", key.upper())}
        old.add_argument(flag, dest=f"legacy_{key}", default=argparse.SUPPRESS, help=f"sets {key}",
                         **{**settings, **metavar})


def run_warmstart(args: argparse.Namespace) -> int:
    if args.list:
        print("\n".join(bundled_configs(warmstart=True)))
        return 0
    config, legacy = warmstart_config(args)
    if args.print_config:
        print(_yaml_text(config.to_dict()), end="")
        return 0
    instead = new_form(args.config, args.overrides, legacy) if legacy else None
    return _warm_start(config, instead)


def new_form(config: str | None, overrides: list[str], legacy: dict[str, Any]) -> str:
    """The command that does what old flags (``legacy``: the keys they set) did, in ``key=value`` form."""
    keys = [f"{key}={shlex.quote(_yaml_text(value, flow=True))}" for key, value in legacy.items()]
    return " ".join(["agentgym-bench warmstart", *([config] if config else []), *overrides, *keys])


def warmstart_config(args: argparse.Namespace) -> tuple[SFTConfig, dict[str, Any]]:
    """The warm start's config from ``args``: defaults < CONFIG < ``key=value`` < old flags; and the keys the old
    flags set, with their values."""
    overrides = list(args.overrides)
    if args.config is not None and "=" in args.config and not Path(args.config).expanduser().is_file():
        args.config, overrides = None, [args.config, *overrides]  # no CONFIG, only overrides
    data = read_yaml(resolve_config(args.config, warmstart=True)) if args.config is not None else {}
    given = merge(data, parse_overrides(overrides))
    flags = {key.removeprefix("legacy_"): value for key, value in vars(args).items() if key.startswith("legacy_")}
    legacy = legacy_overrides(flags, flags.get("envs") or given.get("envs") or list(DEFAULT_ENVS))
    return sft_config_from_dict(merge(given, legacy)), legacy


def legacy_overrides(flags: dict[str, Any], envs: list[str]) -> dict[str, Any]:
    """The keys the old flags given (``flags``: key -> the flag's parsed value) set, for a run of ``envs``.

    Raises:
        UserError: a value the old flag refused (``--threads 0``, a bad ``--episodes`` or ``--demonstrator``).
    """
    for key, flag in (("num_threads", "--threads"), ("processes", "--processes")):
        if key in flags and flags[key] < 1:
            raise UserError(f"{flag} {flags[key]} must be >= 1")
    out = dict(flags)
    if "history" in out and out["history"] < 0:
        out["history"] = None
    if "oracle_actions" in out and out["oracle_actions"] == 0:
        out["oracle_actions"] = None
    if "episodes" in out:
        out["episodes"] = parse_episodes(out["episodes"], envs)
    if "demonstrators" in out:
        out["demonstrators"] = parse_demonstrators(out["demonstrators"], envs)
    return out


def parse_episodes(values: list[str], envs: list[str]) -> int | dict[str, int]:
    """``["3000"]`` -> ``3000``; ``["AgentSokoban-v0=30000", ...]`` -> ``{"AgentSokoban-v0": 30000, ...}``.

    Raises:
        UserError: anything else (not a number, an env of ``envs`` missing, an env named twice).
    """
    try:
        if len(values) == 1 and "=" not in values[0]:
            return int(values[0])
        pairs = [v.split("=", 1) for v in values]
        out = {env_id: int(n) for env_id, n in pairs}
    except ValueError:
        raise UserError(f"--episodes {' '.join(values)}: give one number, or ENV=N for each env") from None
    if len(out) != len(pairs) or not set(envs) <= set(out):
        raise UserError(f"--episodes {' '.join(values)}: name each env of --envs ({' '.join(envs)}) once")
    return out


def parse_demonstrators(values: list[str], envs: list[str]) -> dict[str, str]:
    """``["AgentWebShop-v0=first-hit"]`` -> ``{"AgentWebShop-v0": "first-hit"}``.

    Raises:
        UserError: not ``ENV=NAME``, an env not in ``envs`` or named twice, or an unknown demonstrator.
    """
    out: dict[str, str] = {}
    for value in values:
        env_id, _, name = value.partition("=")
        if not name or env_id in out or env_id not in envs or not has_demonstrator(env_id, name):
            raise UserError(f"--demonstrator {value}: give ENV=NAME once per env, ENV one of --envs "
                            f"({' '.join(envs)}), NAME a demonstrator of its game ({', '.join(DEMONSTRATORS)}; "
                            "first-hit: WebShop only)")
        out[env_id] = name
    return out


def _warm_start(config: SFTConfig, instead: str | None) -> int:
    """Run ``config``; ``instead``: the ``key=value`` form of the old flags given, said once every check passed (a
    refused command prints one line)."""
    from trainers.runtime.launch import launch, under_torchrun  # noqa: PLC0415 - brings torch
    from trainers.sft import warmstart  # noqa: PLC0415 - brings torch

    if under_torchrun():  # torchrun's processes; launch refuses another number
        processes = config.processes or int(os.environ["WORLD_SIZE"])
    else:
        processes = config.resolved_processes(os.cpu_count())
    if not under_torchrun():
        warmstart.default_model_ready(config)  # before the processes start, which would race to build it
    start = resolve_model(config.model)  # a bad name: one line here, not a traceback from each process
    output = warmstart.output_folder(config)
    if output.exists() and not output.is_dir():
        raise UserError(f"output {output} is a file: a warm start writes a model folder (e.g. output=runs/mine)")
    if (output / "warmstart.json").is_file() and output.resolve() != expand(start).resolve():
        raise UserError(f"output {output} already holds a finished warm start (its warmstart.json): give another "
                        "output, or remove the folder to train it again (a later stage that starts from it writes "
                        "over it with model= that folder)")
    if instead is not None:
        print(f"notice: the old flags of agentgym-bench warmstart are kept for this release only; instead write "
              f"{instead}", file=sys.stderr)
    from trainers.runtime.checkpoint import LOCK, hold  # noqa: PLC0415 - brings torch

    lock = hold(output) if os.environ.get("RANK", "0") == "0" else None  # one warm start in a folder at a time
    try:
        report = launch(warmstart.main, config, processes, config.num_threads, "warmstart")
    finally:
        if lock is not None:
            lock.close()
            (output / LOCK).unlink(missing_ok=True)  # the folder is a model now: no lock file left in it
    if not report:  # a torchrun process other than the first
        return 0
    print(warmstart.format_report(report))
    print(f"wrote {warmstart.output_folder(config)} in {report['seconds']:.0f} s (loss "
          f"{report['train']['first_loss']:.3f} -> {report['train']['final_loss']:.3f})")
    return 0


def _yaml_text(value: Any, flow: bool = False) -> str:
    text = yaml.safe_dump(value, sort_keys=False, default_flow_style=True if flow else None, width=10**6)
    return text.strip().removesuffix("...").strip() if flow else text


# -- the command table's entries and torchrun ------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """One ``agentgym-bench`` command of this module (``agentgym_bench.cli.COMMANDS``: ``trainers.cli:NAME``)."""

    configure_parser: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


TRAIN = Command(configure_parser, run)
WARMSTART = Command(configure_warmstart_parser, run_warmstart)


def main(argv: list[str]) -> int:
    """Parse ``argv`` (without the program name) and run: ``warmstart ...`` the warm start, anything else ``train``
    (so ``torchrun ... -m trainers.cli CONFIG`` stays RL's)."""
    warm = bool(argv) and argv[0] == "warmstart"
    command = WARMSTART if warm else TRAIN
    parser = argparse.ArgumentParser(prog=f"agentgym-bench {'warmstart' if warm else 'train'}",
                                     description=__doc__.splitlines()[0])
    command.configure_parser(parser)
    try:
        return command.run(parser.parse_intermixed_args(argv[1:] if warm else argv))
    except UserError as error:
        print(f"agentgym-bench {'warmstart' if warm else 'train'}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # what ``torchrun -m trainers.cli [warmstart] ...`` runs
    sys.exit(main(sys.argv[1:]))
