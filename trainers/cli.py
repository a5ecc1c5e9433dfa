"""``agentgym-bench train CONFIG [key=value ...]``: run StarPO, StarPO-S or GiGPO from a YAML config.

``CONFIG`` is a YAML file or the name of a bundled config in ``trainers/configs/`` (``starpo_s-frozenlake``; see
``--list``). Each ``key=value`` overrides one key, dotted for nested ones (``train_env_manager.group_size=8``);
values are YAML (``1e-4``, ``true``, ``[a, b]``). Under ``torchrun``: ``torchrun --nproc_per_node N -m trainers.cli
CONFIG ...``. The keys are documented in ``docs/trainers.md`` and in ``trainers/config.py``.

Reached from ``agentgym-bench``'s lazy command table; ``--list`` and ``--help`` import neither torch nor the loop.
Config mistakes are :class:`~trainers.config.ConfigError` (a :class:`~agentgym_bench.errors.UserError`): one line
on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from agentgym_bench.errors import UserError

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
"""The bundled configs (``agentgym-bench train --list``)."""


def bundled_configs() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))


def resolve_config(name: str) -> Path:
    """A path to an existing file, or the bundled config of that name."""
    path = Path(name).expanduser()
    if path.is_file():
        return path
    bundled = CONFIG_DIR / f"{name.removesuffix('.yaml')}.yaml"
    if bundled.is_file():
        return bundled
    raise UserError(f"no config file {name!r} and no bundled config of that name; bundled: "
                    f"{', '.join(bundled_configs())}")


def configure_parser(parser: argparse.ArgumentParser) -> None:
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
    from trainers.config import load_config

    config = load_config(resolve_config(args.config), args.overrides)
    if args.print_config:
        import yaml

        print(yaml.safe_dump(config.to_dict(), sort_keys=False), end="")
        return 0
    import transformers

    from trainers.train import main as train_main

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    result = train_main(config)
    if os.environ.get("RANK", "0") != "0":  # under torchrun, one report
        return 0
    print(f"run folder: {result.output_dir}  (metrics.jsonl, curves.png, summary.json, checkpoint-*/)")
    if result.first_eval and result.last_eval:
        from trainers.metrics import success_gain

        gain = success_gain(result.first_eval, result.last_eval)
        print(f"validation success {gain['before']:.3f} -> {gain['after']:.3f} over {gain['n_after']} episodes: "
              f"gain {gain['gain']:+.3f} (paired 95% CI {gain['ci_low']:+.3f} .. {gain['ci_high']:+.3f}, "
              f"McNemar p {gain['p_value']:.2g})")
    return 0


def main(argv: list[str]) -> int:
    """Parse ``argv`` (without the program name) and run."""
    parser = argparse.ArgumentParser(prog="agentgym-bench train", description=__doc__.splitlines()[0])
    configure_parser(parser)
    return run(parser.parse_intermixed_args(argv))


if __name__ == "__main__":  # what ``torchrun -m trainers.cli`` runs
    sys.exit(main(sys.argv[1:]))
