"""Benchmark suites: versioned lists of (env id, kwargs, seeds) that results are reported on.

A suite is a JSON data file in ``agentgym_bench/benchmark/data/`` (``<name>.json``)::

    {"name": "agentgym-v2", "version": 2, "split": "test", "seed_start": 2000000000,
     "description": "...",
     "entries": [{"name": "sokoban-6x6", "env_id": "AgentSokoban-v0", "env_kwargs": {},
                  "prompts": ["ragen", "compact"], "episodes": 400, "oracle_success": 0.9}, ...]}

Every entry plays seeds ``seed_start .. seed_start + episodes - 1``, one episode each. ``env_kwargs`` fix the game
and its budgets; a policy may not change them. The prompt template is the one choice a submission makes per entry,
from ``prompts`` (the first is the default), and it is recorded in the results: the game, the seeds and the budgets
are identical whichever template renders them, so success rates stay comparable, and the board shows the prompt of
each row. (RAGEN and most LLM benchmarks fix one prompt; we allow the compact rendering so that small models trained
from scratch with a word-level vocabulary can be scored on the same episodes.) ``oracle_success`` is the oracle's
success on exactly these episodes, the ceiling that scores are normalised by (checked by a test).

The action format is the other choice, the same for every single-agent entry of every suite: RAGEN's ``<answer>``
tags (the default, not recorded) or a ``take_actions`` tool call (``eval --action-format tool``, recorded as
``action_format: "tool"`` in the entry's ``env_kwargs``; :mod:`agentgym_bench.agent.tools`). The episodes and budgets
are the same either way, and a reply of bad format costs the same penalty.

Splits: ``agentgym-v2`` holds the **test** seeds, from :data:`~agentgym_bench.seeds.TEST_SEEDS`, which no
training, validation, warm start or tuning may use (trainers refuse configs that meet them), and whose episodes are
held out by content too: a test seed only draws test content (rooms, maps, goals, deals), which no training or
validation seed ever draws (:mod:`agentgym_bench.seeds`). ``agentgym-v2-validation`` holds validation seeds from 0
(validation content) for tuning and model selection. WebShop's goals come in fixed splits: seed ``s`` plays goal
``s % size`` of its seed's split, so the test entry's 500 seeds are the 500 test goals.

``agentgym-v1`` (test seeds from 1,000,000,000, which drew from all content) is superseded (:data:`SUPERSEDED`) but
stays bundled and verifiable, so its archived board still replays: its test episodes overlap training content (54% of
its Sokoban 6x6 rooms and 34.5% of its FrozenLake maps occur among 50,000 training episodes). Its validation twin is
gone (validation seeds now draw validation content only, so its ceilings no longer hold). An archived board takes no
new files (:func:`~agentgym_bench.leaderboard.board.check_open`).

Multi-agent suites (``agentgym-ma-v2`` and its twin ``agentgym-ma-v2-validation``; the archived ``agentgym-ma-v1``)
hold **match entries**: a two-player env id (:func:`~agentgym_bench.multiagent.selfplay.make_multiagent_env`),
fixed kwargs, an ``opponent`` (one of :data:`OPPONENTS`) and ``episodes`` matches, with no ``prompts`` (the game
writes its own text) and no ``oracle_success``::

    {"name": "bargain-vs-scripted", "env_id": "Bargain-v0", "env_kwargs": {"max_rounds": 5},
     "opponent": "scripted", "episodes": 400}

Match ``i`` plays seed ``seed_start + i`` with the evaluated policy on ``player_{i % 2}`` (both seats, balanced). A
suite holds single-agent entries only or match entries only: its kind (:mod:`agentgym_bench.benchmark.kinds`), which
decides how it is played, recorded, replayed and scored. The score of a multi-agent suite is the mean over
entries of the policy's mean payoff (:mod:`agentgym_bench.benchmark.results`), so every match entry's ceiling is 1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import agentgym_bench  # noqa: F401 - registers the ids
from agentgym_bench.agent.tools import ACTION_FORMATS
from agentgym_bench.envs.frozen_lake import FrozenLakeGame
from agentgym_bench.errors import UserError
from agentgym_bench.multiagent.selfplay import BARGAIN_IDS, MULTIAGENT_ENVS
from agentgym_bench.registration import OWN_ENV_HINT, is_graded, registered
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.scripted import OraclePolicy
from agentgym_bench.schema_check import violation

SUITES_PACKAGE = "agentgym_bench.benchmark.data"
DEFAULT_SUITE = "agentgym-v2"
MULTIAGENT_SUITE = "agentgym-ma-v2"
SUPERSEDED = {"agentgym-v1": DEFAULT_SUITE, "agentgym-ma-v1": MULTIAGENT_SUITE}
"""Archived suites and the suite that replaces each: their test episodes were held out by seed, not by content."""
OPPONENTS = ("random", "scripted", "self")
"""Opponents of match entries: uniformly random demands and the scripted bargainer, both fixed by the suite (the
same replies for every submission), and ``self``, the evaluated policy on both seats."""


@dataclass(frozen=True)
class SuiteEntry:
    """One line of a suite: an env id with fixed kwargs, the prompts allowed, and its episodes; for a match entry,
    the opponent (``prompts`` empty, ``oracle_success`` ``None``)."""

    name: str
    env_id: str
    env_kwargs: dict[str, Any]
    prompts: tuple[str, ...]
    episodes: int
    oracle_success: float | None
    seed_start: int
    opponent: str | None = None

    @property
    def ceiling(self) -> float:
        """What the entry's score is normalised by: the oracle's success, or 1 (the most payoff) for matches."""
        return 1.0 if self.oracle_success is None else self.oracle_success

    def learner_seat(self, seed: int) -> str:
        """The evaluated policy's seat in the match of ``seed`` (match entries): ``player_0`` on even offsets."""
        return f"player_{(seed - self.seed_start) % 2}"

    @property
    def graded(self) -> bool:
        """The entry's reward grades an episode (WebShop's purchase score; ``AgentEnvSpec.graded``), so the boards
        show its mean return beside the success rate (the score still counts success)."""
        return is_graded(self.env_id)

    @property
    def seeds(self) -> range:
        return range(self.seed_start, self.seed_start + self.episodes)

    def make_kwargs(self, prompt: str | None = None, action_format: str | None = None) -> dict[str, Any]:
        """``gym.make`` keyword arguments with ``prompt`` (default: the entry's first) and ``action_format`` (one of
        :data:`~agentgym_bench.agent.tools.ACTION_FORMATS`; ``None`` or ``"answer"``, the agent env's default, is
        left out, so those kwargs are what they always were); a match entry's env kwargs."""
        if self.opponent is not None:
            if prompt is not None:
                raise UserError(f"suite entry {self.name!r} is a two-player match: its game writes its own text, "
                                "there is no prompt template to choose")
            if action_format not in (None, "answer"):
                raise UserError(f"suite entry {self.name!r} is a two-player match: its game reads its own replies, "
                                "there is no action format to choose")
            return dict(self.env_kwargs)
        prompt = self.prompts[0] if prompt is None else prompt
        if prompt not in self.prompts:
            raise UserError(f"prompt {prompt!r} is not allowed for suite entry {self.name!r}; "
                            f"choose one of {list(self.prompts)}")
        if action_format is not None and action_format not in ACTION_FORMATS:
            raise UserError(f"action format {action_format!r} is not one of {list(ACTION_FORMATS)}")
        return {**self.env_kwargs, "prompt": prompt, **({"action_format": action_format}
                                                           if action_format not in (None, "answer") else {})}


@dataclass(frozen=True)
class Suite:
    """A versioned benchmark suite (see the module docstring)."""

    name: str
    version: int
    split: str
    description: str
    seed_start: int
    entries: tuple[SuiteEntry, ...] = field(default_factory=tuple)

    def entry(self, name: str) -> SuiteEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise UserError(f"suite {self.name} has no entry {name!r}; it has {[e.name for e in self.entries]}")

    @property
    def episodes(self) -> int:
        return sum(e.episodes for e in self.entries)

    @property
    def superseded_by(self) -> str | None:
        """The suite that replaces this archived one (:data:`SUPERSEDED`), or ``None``."""
        return SUPERSEDED.get(self.name)

    @property
    def ceilings(self) -> dict[str, float]:
        return {e.name: e.ceiling for e in self.entries}

    @property
    def multiagent(self) -> bool:
        """The suite's entries are two-player matches (the page's flag; what follows from it is the suite's kind,
        :func:`~agentgym_bench.benchmark.kinds.kind_of`)."""
        return bool(self.entries) and self.entries[0].opponent is not None


class SuiteError(UserError, ValueError):
    """A suite (a file a user wrote, or a board's copy of one) that is not well formed; the message names the suite,
    the field or entry, and what is wrong."""


_STRING, _INTEGER, _NAME = {"type": "string"}, {"type": "integer"}, {"type": "string", "minLength": 1}
SUITE_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["name", "version", "split", "seed_start", "entries"],
    "properties": {
        "name": _NAME, "version": _INTEGER, "split": _STRING, "seed_start": _INTEGER, "description": _STRING,
        "entries": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name", "env_id", "episodes"],
            "properties": {"name": _NAME, "env_id": _STRING, "env_kwargs": {"type": "object"},
                           "prompts": {"type": "array", "items": _STRING},
                           "episodes": {"type": "integer", "minimum": 1}, "oracle_success": {"type": "number"},
                           "opponent": _STRING},
            # a single-agent entry (no opponent) also names its prompts and its ceiling
            "if": {"not": {"required": ["opponent"]}}, "then": {"required": ["prompts", "oracle_success"]}}}},
}
"""The shape of a suite file (and of a board's copy of its suite): every key the code reads, with its type.
:func:`parse_suite` checks it first, then what a schema does not say (known env ids, the match entries' rules,
unique names)."""


def available_suites() -> list[str]:
    """Names of the bundled suites."""
    return sorted(p.name[:-5] for p in resources.files(SUITES_PACKAGE).iterdir() if p.name.endswith(".json"))


def load_suite(name: str = DEFAULT_SUITE) -> Suite:
    """A bundled suite by name, or a suite file by path."""
    if name.endswith(".json") or "/" in name:
        path = Path(name)
        if not path.is_file():
            raise UserError(f"suite file {name} " + ("is a folder" if Path(name).is_dir() else "does not exist"))
        text = path.read_text()
        try:
            return parse_suite(json.loads(text))
        except json.JSONDecodeError as error:
            raise UserError(f"suite file {name} is not JSON: {error}") from None
    else:
        if name not in available_suites():
            raise UserError(f"unknown suite {name!r}; bundled suites: {', '.join(available_suites())}")
        text = resources.files(SUITES_PACKAGE).joinpath(f"{name}.json").read_text()
    return parse_suite(json.loads(text))


def suite_to_dict(suite: Suite) -> dict[str, Any]:
    """A suite in the JSON form of the suite files (:func:`parse_suite` reads it back)."""
    return {"name": suite.name, "version": suite.version, "split": suite.split, "seed_start": suite.seed_start,
            "description": suite.description,
            "entries": [_entry_dict(e) for e in suite.entries]}


def _entry_dict(e: SuiteEntry) -> dict[str, Any]:
    if e.opponent is not None:
        return {"name": e.name, "env_id": e.env_id, "env_kwargs": e.env_kwargs, "opponent": e.opponent,
                "episodes": e.episodes}
    return {"name": e.name, "env_id": e.env_id, "env_kwargs": e.env_kwargs, "prompts": list(e.prompts),
            "episodes": e.episodes, "oracle_success": e.oracle_success}


def parse_suite(data: Any) -> Suite:
    """Check and build a suite from its JSON form; :class:`SuiteError` names what is wrong."""
    label = f"suite {data['name']}" if isinstance(data, dict) and isinstance(data.get("name"), str) else "suite"
    problem = violation(SUITE_SCHEMA, data, whole="the file")
    if problem is not None:
        hint = (" (the oracle's success on the entry's episodes, which agentgym_bench.benchmark.suites.oracle_success "
                "computes)" if problem.endswith("oracle_success is missing") else "")
        raise SuiteError(f"{label}: {problem}{hint}")
    seed_start = int(data["seed_start"])
    entries = []
    for raw in data["entries"]:
        if "opponent" in raw:
            entries.append(_match_entry(label, raw, seed_start))
            continue
        where = f"{label}: entry {raw['name']}"
        try:
            known = registered(raw["env_id"])
        except UserError as err:
            raise SuiteError(f"{where}: {err}") from None
        if not known:
            raise SuiteError(f"{where} names unknown env id {raw['env_id']}; {OWN_ENV_HINT}")
        if "prompt" in raw.get("env_kwargs", {}):
            raise SuiteError(f"{where} fixes the prompt in env_kwargs; list it in prompts")
        entries.append(SuiteEntry(name=raw["name"], env_id=raw["env_id"], env_kwargs=dict(raw.get("env_kwargs", {})),
                                  prompts=tuple(raw["prompts"]), episodes=int(raw["episodes"]),
                                  oracle_success=float(raw["oracle_success"]), seed_start=seed_start))
    names = [e.name for e in entries]
    if len({e.opponent is None for e in entries}) > 1:
        raise SuiteError(f"{label}: mixes single-agent and match entries; make two suites")
    keys = [(e.env_id, e.opponent) for e in entries]
    if len(set(names)) != len(names) or len(set(keys)) != len(entries):
        raise SuiteError(f"{label}: entry names, and env ids (with their opponent), must be unique")
    return Suite(name=data["name"], version=int(data["version"]), split=data["split"],
                 description=data.get("description", ""), seed_start=seed_start, entries=tuple(entries))


def _match_entry(label: str, raw: dict[str, Any], seed_start: int) -> SuiteEntry:
    """A match entry (see the module docstring), checked beyond :data:`SUITE_SCHEMA`."""
    where = f"{label}: entry {raw['name']}"
    if raw["opponent"] not in OPPONENTS:
        raise SuiteError(f"{where}: opponent {raw['opponent']!r} is not one of {list(OPPONENTS)}")
    if raw.get("prompts") or "oracle_success" in raw:
        raise SuiteError(f"{where}: a match entry has no prompts and no oracle_success")
    if not raw["env_id"].startswith("TextArena/") and raw["env_id"] not in MULTIAGENT_ENVS:
        raise SuiteError(f"{where}: {raw['env_id']!r} is not a two-player env id ({sorted(MULTIAGENT_ENVS)} or "
                         "'TextArena/<id>')")
    if raw["opponent"] != "self" and raw["env_id"] not in BARGAIN_IDS:
        raise SuiteError(f"{where}: the {raw['opponent']} opponent plays Bargain only (Bargain-v0, Bargain-v1)")
    return SuiteEntry(name=raw["name"], env_id=raw["env_id"], env_kwargs=dict(raw.get("env_kwargs", {})),
                      prompts=(), episodes=int(raw["episodes"]), oracle_success=None, seed_start=seed_start,
                      opponent=raw["opponent"])


def oracle_success(entry: SuiteEntry) -> float:
    """The oracle's success on ``entry``'s episodes: its exact success probability averaged over the episodes for
    FrozenLake (slips make a played rate noisy, and a noisy ceiling could be beaten by luck), the played rate for
    the other games, whose oracles are deterministic. How ``oracle_success`` in the suite files is computed."""
    env = gym.make(entry.env_id, **entry.make_kwargs()).unwrapped
    if isinstance(env.game.unwrapped, FrozenLakeGame):
        values = []
        for seed in entry.seeds:
            env.reset(seed=seed)
            values.append(env.game.unwrapped.oracle_value(env.max_turns, env.max_actions_per_episode,
                                                          env.max_actions_per_turn))
        return float(np.mean(values))
    with EnvGroups([entry.env_id], [entry.episodes], 1, tag_kwargs={entry.env_id: entry.make_kwargs()},
                   seed=entry.seed_start, fixed_seeds=True) as groups:
        return float(np.mean([t.success for t in groups.rollout(OraclePolicy())]))



def check_ceilings(suite: Suite, tolerance: float = 5e-7) -> None:
    """Refuse a suite whose stated ``oracle_success`` is not the oracle's success on its episodes
    (:func:`oracle_success`, recomputed; a second or so per hundred episodes): a board normalises every score by
    it, so a ceiling stated low lifts every score (above 1 for the oracle). The bundled suites are checked by the
    tests; this is for a suite file that starts a board."""
    wrong = [f"{e.name}: stated {e.oracle_success}, the oracle's is {actual:.6f}" for e in suite.entries
             if e.oracle_success is not None and abs((actual := oracle_success(e)) - e.oracle_success) > tolerance]
    if wrong:
        raise SuiteError(f"suite {suite.name}: oracle_success is not the oracle's success on the entry's episodes "
                         f"({'; '.join(wrong)}); put the computed values in the suite file")

def match_ceiling(entry: SuiteEntry) -> float | None:
    """For a Bargain entry against the random opponent, the most mean payoff over its matches that a policy seeing
    only its own values can expect (exact: :meth:`~agentgym_bench.multiagent.bargain.BargainEnv.value_against_random`
    of each match's learner, averaged); ``None`` for every other entry, whose ceiling is not known exactly (the
    scripted bargainer's moves follow its private values; in self-play both seats are the policy's)."""
    if entry.env_id not in BARGAIN_IDS or entry.opponent != "random":
        return None
    env = MULTIAGENT_ENVS[entry.env_id](**entry.env_kwargs)
    ceilings = []
    for seed in entry.seeds:
        env.reset(seed=seed)
        ceilings.append(env.value_against_random(entry.learner_seat(seed)))
    return float(np.mean(ceilings))


def quick_check(suite: Suite, episodes: int | None, entries: list[str] | None) -> tuple[Suite, dict | None]:
    """The part of ``suite`` that ``--episodes`` and ``--entries`` choose, and the ``metadata.quick_check`` record
    that marks its results as not submittable (``None``: the whole suite)."""
    if episodes is None and entries is None:
        return suite, None
    if episodes is not None and episodes < 1:
        raise UserError(f"--episodes {episodes}: give at least 1")
    chosen = [suite.entry(name) for name in dict.fromkeys(entries)] if entries else list(suite.entries)
    if episodes is not None:
        chosen = [replace(e, episodes=min(episodes, e.episodes)) for e in chosen]
    return replace(suite, entries=tuple(chosen)), {"episodes": episodes, "entries": entries}


def quick_text(quick: dict[str, Any]) -> str:
    """``--episodes 3 --entries bandit`` of a ``metadata.quick_check`` record (``a part not named`` where it names
    neither)."""
    parts = ([f"--episodes {quick['episodes']}"] if quick.get("episodes") is not None else []) + (
        [f"--entries {' '.join(quick['entries'])}"] if quick.get("entries") else [])
    return " ".join(parts) or "a part not named"
