"""Resuming an evaluation from its kept entries: where ``eval`` keeps each finished entry (``OUT.partial``,
:func:`partial_path`) and the checks a kept file passes before a run goes on from it (:func:`resumed`).

A kept file is what anyone could have edited, so it is bound before it is used: the run that wrote it had this run's
settings (:func:`setting_differences` names each that differs, with both values), its entries are this run's suite
entries with exactly their env ids, env_kwargs and seeds (:func:`~.kinds.check_entries`), and every kept episode
replays through a fresh env (:func:`~.kinds.replay_entry`: env steps only, no model call). Anything else is a
:class:`~agentgym_bench.errors.UserError` of one line naming the file and how to start again.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentgym_bench.benchmark.kinds import check_entries, kind_of, replay_entry
from agentgym_bench.benchmark.results import Results, ResultsError, loads
from agentgym_bench.benchmark.suites import Suite, quick_text
from agentgym_bench.errors import UserError


def partial_path(out: Path) -> Path:
    """Where the finished entries of a run to ``out`` are kept until it completes: ``OUT.partial``."""
    return out.with_name(out.name + ".partial")


def start_again(partial: Path) -> str:
    """How to discard a ``.partial`` file, as a shell command."""
    return f"delete it to start again: rm {shlex.quote(str(partial))}"


def resumed(partial: Path, suite: Suite, metadata: dict[str, Any], prompts: dict[str, str],
            action_format: str | None = None) -> Results | None:
    """The finished entries kept in ``partial`` by an earlier run of the same settings, or ``None`` if there is no
    such file. It is checked before it is kept: its settings must be this run's (:func:`setting_differences`), and
    each of its entries must be one of this run's suite entries with exactly the entry's env id, env_kwargs and seeds
    (:func:`~.kinds.check_entries`) and must replay (:func:`~.kinds.replay_entry`: every recorded reply through a
    fresh env, env steps only, no model call). Anything else is a :class:`UserError` of one line naming the file and
    how to start again: a file that cannot be read, damaged JSON, other settings (each named, with both values),
    missing or foreign seeds, an episode that does not replay."""
    if not partial.is_file():
        return None
    try:
        done = loads(partial.read_bytes())  # the message names the file once
    except (ResultsError, OSError) as err:
        raise UserError(f"{partial} cannot be resumed, it is damaged ({one_line(err)}): "
                        f"{start_again(partial)}") from None
    differs = setting_differences(done, suite, metadata, prompts, action_format)
    if differs:
        raise UserError(f"{partial} holds finished entries of a run with other settings ({'; '.join(differs)}): run "
                        f"with the same settings to resume it, or {start_again(partial)} (or give another --out)")
    try:
        check_kept(done, suite)
    except ResultsError as err:
        raise UserError(f"{partial} cannot be resumed, it is damaged or was edited ({one_line(err)}): "
                        f"{start_again(partial)}") from None
    return done


def check_kept(done: Results, suite: Suite) -> None:
    """Raise a :class:`ResultsError` unless every entry of ``done`` is one of ``suite``'s, once, with the entry's env
    id, fixed env_kwargs (and opponent and seats) and exactly its seeds, and replays."""
    names = [e.name for e in done.entries]
    foreign = [n for n in dict.fromkeys(names) if n not in {e.name for e in suite.entries}]
    if foreign:
        raise ResultsError(f"entries {foreign} are not in this run's suite {suite.name}")
    check_entries(done, replace(suite, entries=tuple(suite.entry(n) for n in dict.fromkeys(names))))
    for entry in done.entries:
        replay_entry(entry)


def one_line(err: BaseException) -> str:
    """An error's message on one line."""
    return " ".join(str(err).split())


POLICY_SETTINGS = {"kind": "--policy", "model": "the model", "model_sha256": "the model's weights (sha256)",
                   "sampling.temperature": "--temperature", "sampling.top_p": "--top-p",
                   "sampling.max_new_tokens": "--max-new-tokens", "sampling.seed": "--seed",
                   "sampling.keyed": "keyed sampling", "history": "--history"}
"""What a user changed when a key of ``metadata.policy`` differs (by its dotted path)."""


def setting_differences(done: Results, suite: Suite, metadata: dict[str, Any], prompts: dict[str, str],
                        action_format: str | None = None) -> list[str]:
    """Each setting in which the run that wrote ``done`` differs from this one, with both values, e.g.
    ``"--history: the file has full, this run 1"``; ``[]`` if none (the same suite, policy, sampling, history, trainer
    record, quick check, prompts and action format)."""
    def both(what: str, theirs: Any, ours: Any) -> str:
        return f"{what}: the file has {theirs}, this run {ours}"

    differs = []
    if (done.suite_name, done.suite_version) != (suite.name, suite.version):
        differs.append(both("suite", f"{done.suite_name} v{done.suite_version}", f"{suite.name} v{suite.version}"))
    theirs, ours = flat(done.metadata["policy"]), flat(metadata["policy"])
    for key in [*POLICY_SETTINGS, *sorted((theirs.keys() | ours.keys()) - POLICY_SETTINGS.keys())]:
        a, b = theirs.get(key), ours.get(key)
        if a == b or (key == "sampling.keyed" and theirs.get("kind") != ours.get("kind")):
            continue  # keyed sampling follows the policy kind, named already
        show = history_text if key == "history" else shown
        differs.append(both(POLICY_SETTINGS.get(key, f"metadata.policy.{key}"), show(a), show(b)))
    trainer_a, trainer_b = done.metadata["trainer"], metadata["trainer"]
    if (trainer_a is None) != (trainer_b is None):
        differs.append(both("--trained-by", "none" if trainer_a is None else "a trainer record",
                            "none" if trainer_b is None else "a trainer record"))
    elif trainer_a is not None:
        theirs, ours = flat(trainer_a), flat(trainer_b)
        keys = sorted(k for k in theirs.keys() | ours.keys() if theirs.get(k) != ours.get(k))
        differs += [both("--selection" if k == "selection" else f"--trained-by (the trainer record's {k})",
                         shown(theirs.get(k)), shown(ours.get(k))) for k in keys[:3]]
        if len(keys) > 3:
            differs.append(f"{len(keys) - 3} more keys of the trainer record")
    quick_a, quick_b = done.metadata.get("quick_check"), metadata.get("quick_check")
    if normal(quick_a) != normal(quick_b):
        differs.append(both("--episodes/--entries", quick_text(quick_a) if quick_a else "none (the whole suite)",
                            quick_text(quick_b) if quick_b else "none (the whole suite)"))
    for e in done.entries:
        if e.name in prompts and e.prompt != prompts[e.name]:
            differs.append(both(f"--prompt of entry {e.name}", shown(e.prompt), shown(prompts[e.name])))
        recorded, wanted = e.env_kwargs.get("action_format", "answer"), action_format or "answer"
        if "action_format" in kind_of(e).options and recorded != wanted:
            differs.append(both(f"--action-format of entry {e.name}", recorded, wanted))
    return differs


def normal(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples as lists), so a record in memory compares equal to its file's."""
    return json.loads(json.dumps(value))


def flat(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested record's leaves by dotted path, as JSON reads them back."""
    out: dict[str, Any] = {}
    for key, value in normal(record).items():
        if isinstance(value, dict) and value:
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def history_text(history: int | None) -> str:
    """``--history`` as typed: ``full`` or the number of turns."""
    return "full" if history is None else str(history)


def shown(value: Any, limit: int = 60) -> str:
    """A setting's value for a message: ``none``, or its repr cut to ``limit`` characters."""
    if value is None:
        return "none"
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
