"""Config loading shared by both trainers: a YAML file, ``key=value`` overrides, unknown keys and types checked.

One loader for every config dataclass (:class:`trainers.rl.config.TrainConfig` for RL,
:class:`trainers.sft.sft_config.SFTConfig` for the warm start): :func:`read_yaml` reads a file into a mapping,
:func:`config_from_dict` merges it with the overrides (:func:`parse_overrides`: ``a.b=value``, values read as YAML),
lets the config type adjust the merged keys (RL: ROLL's key names and its presets), refuses an unknown key naming the
closest known one, and builds the dataclass, whose ``__post_init__`` checks the rest (:func:`check_types`: each
field's value against its annotation). Every error is a :class:`ConfigError` (a
:class:`~agentgym_bench.errors.UserError`: the command line prints it as one line). A config is named by its file
or by the name of a bundled one (:func:`resolve_config`; ``trainers/configs/``, :data:`CONFIG_DIR`).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from agentgym_bench.errors import UserError

C = TypeVar("C")


class ConfigError(UserError, ValueError):
    """A configuration that cannot run; the message says how to fix it."""


def notice(message: str) -> None:
    """One line on stderr about a config key that was read differently or ignored."""
    print(f"notice: {message}", file=sys.stderr)


def choice(name: str, value: Any, allowed: Sequence[Any]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r} is not one of {', '.join(map(str, allowed))}")


def positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name}={value!r} must be a positive integer")


def _matches(value: Any, annotation: Any) -> bool:
    """``value`` against a field annotation: int, float (an int is a float), bool, str, ``Any``, ``list[X]``,
    ``dict[str, X]``, ``tuple[X, ...]`` (of fixed length, or of any length with ``...``), ``X | None``.

    Raises:
        ConfigError: an annotation this function does not know (a field added without a check).
    """
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any:
        return True
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    if annotation is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and all(_matches(x, args[0]) for x in value)
    if origin is dict:
        return isinstance(value, dict) and all(_matches(k, args[0]) and _matches(v, args[1])
                                               for k, v in value.items())
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return isinstance(value, tuple) and all(_matches(x, args[0]) for x in value)
    if origin is tuple:
        return isinstance(value, tuple) and len(value) == len(args) and all(map(_matches, value, args))
    raise ConfigError(f"no type check for the annotation {annotation!r}")


def _annotation_text(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if typing.get_origin(annotation) is None else None
    return (text or str(annotation).replace("typing.", "")).replace("NoneType", "null").replace("None", "null")


def check_types(obj: Any, prefix: str = "") -> None:
    """Each field's value against its annotation, nested dataclasses included."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value, annotation = getattr(obj, f.name), hints[f.name]
        if dataclasses.is_dataclass(annotation):
            check_types(value, f"{prefix}{f.name}.")
        elif not _matches(value, annotation):
            raise ConfigError(f"{prefix}{f.name}={value!r} must be {_annotation_text(annotation)}")


def nest(obj: Any) -> None:
    """Build every dataclass-typed field of the config ``obj`` given as a mapping (RL's ``reward_normalization``,
    ``*_env_manager``); an unknown key in one is named by its dotted path."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        cls, value = hints[f.name], getattr(obj, f.name)
        if dataclasses.is_dataclass(cls) and isinstance(value, Mapping):
            for key in value:
                if key not in {g.name for g in dataclasses.fields(cls)}:
                    raise unknown_key(type(obj), f"{f.name}.{key}")
            setattr(obj, f.name, cls(**value))
        elif dataclasses.is_dataclass(cls) and not isinstance(value, cls):
            keys = [g.name for g in dataclasses.fields(cls)]
            raise ConfigError(f"{f.name}={value!r} must be a section of keys ({', '.join(keys)}): set one of them, "
                              f"e.g. {f.name}.{keys[0]}=..., or give a mapping in the YAML file")


class _Loader(yaml.SafeLoader):
    """YAML 1.1 reads ``1e-4`` as a string; this loader reads it as a float, as a user means it."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+|\.[0-9_]+"
               r"(?:[eE][-+]?[0-9]+)?|\.inf|\.Inf|\.INF|\.nan|\.NaN|\.NAN)$"),
    list("-+0123456789."),
)


def yaml_load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def _known_keys(cls: type, prefix: str = "") -> list[str]:
    keys = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        keys.append(prefix + f.name)
        if dataclasses.is_dataclass(hints[f.name]):
            keys += _known_keys(hints[f.name], f"{prefix}{f.name}.")
    return keys


SYNONYMS = {"lr": "learning_rate", "learning_rate": "lr", "steps": "max_steps", "iterations": "max_steps",
            "output": "output_dir", "output_dir": "output", "model": "pretrain", "pretrain": "model",
            "batch_size": "rollout_batch_size", "epochs": "ppo_epochs", "threads": "num_threads"}
"""Names users bring from other trainers (or from the other of our two configs), and the key each means here where the
config has it: the RL trainer's ``learning_rate`` is the warm start's ``lr``."""


def unknown_key(config_type: type, key: str) -> ConfigError:
    """The error for ``key``, which ``config_type`` does not have, naming its closest key."""
    # a ROLL user writing group_size at top level means train_env_manager.group_size
    known = _known_keys(config_type)
    close = [SYNONYMS[key]] if SYNONYMS.get(key) in known else []
    close = close or [k for k in known if k.endswith("." + key)][:1]
    close = close or difflib.get_close_matches(key, known, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]}?" if close else "; see docs/trainers.md for the keys"
    return ConfigError(f"unknown config key {key!r}{hint}")


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"unknown config key {key!r}: {part} is not a group of keys")
        node = child
    node[parts[-1]] = value


def merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``update``, nested mappings merged key by key."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def parse_overrides(overrides: Sequence[str]) -> dict[str, Any]:
    """``["key=value", "a.b=value"]`` to a nested dict; values are parsed as YAML (``1e-4``, ``true``, ``[a, b]``).

    Raises:
        ConfigError: an item without ``=``.
    """
    data: dict[str, Any] = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {item!r} must look like key=value (e.g. learning_rate=1e-4 or "
                              "train_env_manager.group_size=8)")
        _set_dotted(data, key.strip(), yaml_load(raw) if raw.strip() else None)
    return data


def config_from_dict(config_type: type[C], data: Mapping[str, Any],
                     overrides: Sequence[str] | Mapping[str, Any] = (),
                     prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> C:
    """``config_type`` built from its defaults < ``data`` < ``overrides`` (``key=value`` strings or a nested dict);
    ``prepare`` adjusts the merged keys first (RL: ROLL's names and presets,
    :func:`trainers.rl.config.config_from_dict`).

    Raises:
        ConfigError: ``data`` is not a mapping, a key ``config_type`` does not have, or the config's own checks.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"a config must be a mapping of keys, not {type(data).__name__}")
    extra = parse_overrides(overrides) if not isinstance(overrides, Mapping) else dict(overrides)
    merged = merge(dict(data), extra)
    if prepare is not None:
        merged = prepare(merged)
    names = {f.name for f in dataclasses.fields(config_type)}
    for key in merged:
        if key not in names:
            raise unknown_key(config_type, key)
    return config_type(**merged)


BASE_KEY = "base"
"""A config file's key naming another file (relative to its own folder, else a bundled config by its name) whose keys
it starts from: a variant of a recipe holds only what it changes (``base: baseline-gigpo.yaml`` and
``learning_rate: 5.0e-5``), in ``trainers/configs/`` or in a folder of the user's own."""


def read_yaml(path: str | os.PathLike, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The mapping of keys in the YAML file ``path``; with :data:`BASE_KEY`, the base file's keys updated by this
    file's (:func:`merge`; the base may have a base of its own).

    Raises:
        ConfigError: the file is missing, empty, not YAML or not a mapping, or its bases form a loop (the message
            names the file).
    """
    data = _read_mapping(path)
    if BASE_KEY not in data:
        return data
    here = Path(path).resolve()
    name = str(data.pop(BASE_KEY))
    base = here.parent / name
    if not base.is_file() and (CONFIG_DIR / f"{name.removesuffix('.yaml')}.yaml").is_file():
        base = CONFIG_DIR / f"{name.removesuffix('.yaml')}.yaml"  # a bundled recipe, named from the user's folder
    if base.resolve() in (*_seen, here):
        raise ConfigError(f"{path}: its {BASE_KEY} {base.name} leads back to itself")
    return merge(read_yaml(base, (*_seen, here)), data)


def _read_mapping(path: str | os.PathLike) -> dict[str, Any]:
    """The mapping of keys in the YAML file ``path``, as written (:func:`read_yaml`'s errors)."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror or error}") from None
    try:
        data = yaml_load(text)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(f"{path} is not valid YAML{line}: {problem}") from None
    if data is None:
        raise ConfigError(f"{path} is empty; start from a bundled config (the command's --list and "
                          "--print-config) and set the keys you change")
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of config keys, not {type(data).__name__}")
    return data


def save_yaml(data: Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write ``data`` (plain data: a config's ``to_dict()``) as YAML, keys in their order."""
    Path(path).write_text(yaml.safe_dump(dict(data), sort_keys=False))


CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
"""The bundled configs (``agentgym-bench train --list``, ``agentgym-bench warmstart --list``)."""
WARMSTART_PREFIX = "warmstart-"
"""The bundled configs whose name starts so are the warm start's (:class:`~trainers.sft.sft_config.SFTConfig`)."""


def bundled_configs(warmstart: bool = False) -> list[str]:
    """The names of the bundled RL configs, or with ``warmstart`` the warm start's."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.yaml") if p.stem.startswith(WARMSTART_PREFIX) == warmstart)


def resolve_config(name: str, warmstart: bool = False) -> Path:
    """A path to an existing file, or the bundled config of that name."""
    path = Path(name).expanduser()
    if path.is_file():
        return path
    bundled = CONFIG_DIR / f"{name.removesuffix('.yaml')}.yaml"
    if bundled.is_file() and bundled.stem.startswith(WARMSTART_PREFIX) == warmstart:
        return bundled
    if path.is_dir():
        raise UserError(f"{name} is a folder: give a config file (YAML) or a bundled config's name")
    close = difflib.get_close_matches(name.removesuffix(".yaml"), bundled_configs(warmstart), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise UserError(f"no config file {name!r} and no bundled config of that name; {hint}bundled: "
                    f"{', '.join(bundled_configs(warmstart))}")
