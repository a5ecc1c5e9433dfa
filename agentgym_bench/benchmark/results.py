"""The results file: every episode of one policy on one suite, and how it was produced.

The format is published as a JSON Schema (``results.schema.json`` beside this module, format version 1) and checked
with ``jsonschema``. On disk it is gzip-compressed JSON (``results.json.gz``; a plain ``.json`` is read too). A
file is refused, with the field named, if it does not match the schema, holds NaN or infinite numbers, or is larger
than :data:`MAX_FILE_BYTES` compressed, :data:`MAX_JSON_BYTES` uncompressed or :data:`MAX_JSON_VALUES` values.

What is recorded per episode is what verification needs (``agentgym_bench.leaderboard.verify``): the seed, each
turn's raw reply, parsed and executed actions, reward and a SHA-256 of the observation the model read, the final
observation's hash, the return and success. Replaying the replies through a fresh env must reproduce all of them.
Summaries (success rates, intervals, scores) are never stored: they are recomputed from the episodes
(:mod:`agentgym_bench.benchmark.scores`).

Match entries (multi-agent suites, an entry with an ``opponent``): each episode is a match record — the seed, the
evaluated policy's seat (``learner``), the ``opponent``, every move of both seats in play order (each turn names its
``agent``), every seat's payoff, the learner's ``outcome`` (win/draw/loss) and whether a deal was made; ``success``
is a win and ``return`` the learner's payoff, so the per-episode arrays below mean the same for both kinds.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from agentgym_bench.errors import UserError
from agentgym_bench.files import write_atomic
from agentgym_bench.schema_check import violation

FORMAT = "agentgym-bench-results"
FORMAT_VERSION = 1
MAX_FILE_BYTES = 32 * 2**20
"""Largest results file accepted, as stored (32 MiB)."""
MAX_JSON_BYTES = 256 * 2**20
"""Largest uncompressed JSON accepted (256 MiB): about 50,000 episodes of 5 turns with 1,000-character replies."""
MAX_JSON_VALUES = 8 * 2**20
"""Most JSON values accepted (8,388,608), counted before parsing as the file's ``{ [ , :`` bytes (an upper bound: a
comma inside a string counts too). Parsed, a value costs up to about 70 bytes of memory where its text may take 3
(``{},``), so the byte limit alone let a 261 KB gzip file ask for 13 GB. The committed board's files hold 8-14
bytes of JSON a value (about 290,000 values for agentgym-v2's 2,900 episodes), so the limit leaves room for suites
some thirty times that."""
MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted (a results file needs about 10)."""
MAX_INTEGER_DIGITS = 20
"""Longest integer accepted, in digits (64-bit integers have at most 20)."""
MAX_FREE_FORM_BYTES = 64 * 2**10
"""Largest free-form metadata object accepted (``trainer.config``, ``compute.training``), as compact JSON (64 KiB;
the reference trainers' resolved configs are 0.4-4.5 KB). The board copies these into its index and page."""
FREE_FORM = (("trainer", "config"), ("compute", "training"))


class ResultsError(UserError):
    """A results file that cannot be accepted; the message names the field or the reason."""


def sha256_text(text: str) -> str:
    """Hex SHA-256 of ``text`` encoded as UTF-8 (how observations are recorded)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class TurnRecord:
    observation_sha256: str
    reply: str
    actions: list[str]
    executed_actions: list[str]
    reward: float
    token_ids: list[int] | None = None
    agent: str | None = None
    """Match entries: the seat that moved."""


@dataclass
class MatchRecord:
    """What a match record adds to an episode: the evaluated policy's seat, its opponent, the outcome for the
    learner, every seat's payoff, and whether the game ended in a deal (``None``: the game has no deals)."""

    learner: str
    opponent: str
    outcome: str
    payoffs: dict[str, float]
    deal: bool | None = None


@dataclass
class EpisodeRecord:
    seed: int
    success: bool
    return_: float
    final_observation_sha256: str
    turns: list[TurnRecord] = field(default_factory=list)
    match: MatchRecord | None = None


@dataclass
class EntryResults:
    name: str
    env_id: str
    env_kwargs: dict[str, Any]
    episodes: list[EpisodeRecord] = field(default_factory=list)
    opponent: str | None = None
    """Match entries: who the evaluated policy played."""

    @property
    def prompt(self) -> str:
        """The prompt template (``""`` for match entries: the game writes its own text)."""
        return str(self.env_kwargs.get("prompt", ""))

    def successes(self) -> np.ndarray:
        """``(n,)`` 0/1 per episode, in seed order (:meth:`Results.from_dict`)."""
        return np.array([e.success for e in self.episodes], dtype=float)

    def returns(self) -> np.ndarray:
        return np.array([e.return_ for e in self.episodes], dtype=float)


@dataclass
class Results:
    """One policy on one suite (see the module docstring)."""

    suite_name: str
    suite_version: int
    metadata: dict[str, Any]
    entries: list[EntryResults] = field(default_factory=list)

    def entry(self, name: str) -> EntryResults:
        for e in self.entries:
            if e.name == name:
                return e
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "suite": {"name": self.suite_name, "version": self.suite_version},
            "metadata": self.metadata,
            "entries": [{
                "name": e.name, "env_id": e.env_id, "env_kwargs": e.env_kwargs,
                **({"opponent": e.opponent} if e.opponent is not None else {}),
                "episodes": [{
                    "seed": ep.seed, "success": ep.success, "return": ep.return_,
                    "final_observation_sha256": ep.final_observation_sha256,
                    **(_match_dict(ep.match) if ep.match is not None else {}),
                    "turns": [{**({"agent": t.agent} if t.agent is not None else {}),
                               "observation_sha256": t.observation_sha256, "reply": t.reply, "actions": t.actions,
                               "executed_actions": t.executed_actions, "reward": t.reward,
                               **({"token_ids": t.token_ids} if t.token_ids is not None else {})}
                              for t in ep.turns],
                } for ep in e.episodes],
            } for e in self.entries],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Results:
        """Build from a dict that passed :func:`validate`, each entry's episodes in seed order whatever the file's
        order (as ``eval`` writes them), so that every interval and pairing over them is the same for any order."""
        return cls(
            suite_name=data["suite"]["name"], suite_version=data["suite"]["version"], metadata=data["metadata"],
            entries=[EntryResults(
                name=e["name"], env_id=e["env_id"], env_kwargs=e["env_kwargs"],
                episodes=[EpisodeRecord(
                    seed=ep["seed"], success=ep["success"], return_=float(ep["return"]),
                    final_observation_sha256=ep["final_observation_sha256"],
                    turns=[TurnRecord(t["observation_sha256"], t["reply"], list(t["actions"]),
                                      list(t["executed_actions"]), float(t["reward"]), t.get("token_ids"),
                                      t.get("agent"))
                           for t in ep["turns"]],
                    match=MatchRecord(ep["learner"], ep["opponent"], ep["outcome"],
                                      {k: float(v) for k, v in ep["payoffs"].items()}, ep.get("deal"))
                    if "learner" in ep else None)
                    for ep in sorted(e["episodes"], key=lambda ep: ep["seed"])],
                opponent=e.get("opponent"))
                for e in data["entries"]])


def _match_dict(m: MatchRecord) -> dict[str, Any]:
    return {"learner": m.learner, "opponent": m.opponent, "outcome": m.outcome, "payoffs": m.payoffs,
            "deal": m.deal}


@cache
def schema() -> dict[str, Any]:
    """The results JSON Schema."""
    return json.loads(resources.files("agentgym_bench.benchmark").joinpath("results.schema.json").read_text())


ONE_LINE = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*$"
"""The schema's pattern of one-line text fields (the model, the trainer's algorithm, versions, dates, hardware): no
line breaks or control characters, so no field can add a line to a board's table."""


def validate(data: Any) -> None:
    """Raise :class:`ResultsError` naming the first offending field (as a JSON path) if ``data`` breaks the schema."""
    problem = violation(schema(), data, whole="the whole file", patterns={
        ONE_LINE: "holds a line break or a control character (one line of text only)"})
    if problem is not None:
        raise ResultsError(f"results file: {problem}")


def _no_constants(name: str) -> Any:
    raise ResultsError(f"results file holds {name}: NaN and infinite numbers are not allowed")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ResultsError(f"results file holds the number {text[:40]}, which is out of range: NaN and infinite "
                           "numbers are not allowed")
    return value


def _integer(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        raise ResultsError(f"results file holds an integer of {digits:,} digits; at most {MAX_INTEGER_DIGITS} are "
                           "allowed")
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        repeated = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ResultsError(f"results file repeats the key {repeated[:100]!r} in one object: duplicate keys are not "
                           "allowed")
    return data


def parse_json(text: str) -> Any:
    """Parse the JSON of a results file strictly, or raise :class:`ResultsError` with one line: no duplicate keys,
    NaN, infinities or numbers out of a double's range, integers over :data:`MAX_INTEGER_DIGITS` digits, nesting
    deeper than :data:`MAX_DEPTH`, or strings (keys included) holding a lone surrogate (which no UTF-8 file can
    store, so the board could not write them back)."""
    try:
        data = json.loads(text, parse_constant=_no_constants, parse_float=_finite, parse_int=_integer,
                          object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise ResultsError(f"results file is not valid JSON: {e}") from None
    except RecursionError:
        raise ResultsError(f"results file nests arrays and objects deeper than {MAX_DEPTH} levels") from None
    _check_strings_and_depth(data)
    return data


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_strings_and_depth(data: Any) -> None:
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                raise ResultsError(f"results file holds a string with a lone surrogate ({value[:60]!r}): text must "
                                   "be valid Unicode")
        elif isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                raise ResultsError(f"results file nests arrays and objects deeper than {MAX_DEPTH} levels")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                stack.append((item, depth + 1))
                if isinstance(key, str):
                    stack.append((key, depth + 1))


def check_free_form(data: dict[str, Any]) -> None:
    """Refuse a free-form metadata object (:data:`FREE_FORM`) larger than :data:`MAX_FREE_FORM_BYTES`."""
    for section, key in FREE_FORM:
        value = (data["metadata"].get(section) or {}).get(key)
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        if size > MAX_FREE_FORM_BYTES:
            raise ResultsError(f"results file: field metadata.{section}.{key} is {size:,} bytes of JSON; the limit is "
                               f"{MAX_FREE_FORM_BYTES:,}")


def loads(raw: bytes) -> Results:
    """Parse, check and build results from the bytes of a file (gzip or plain JSON); see :func:`parse_json`."""
    data = parse_json(json_text(raw))
    validate(data)
    check_free_form(data)
    return Results.from_dict(data)


def json_text(raw: bytes) -> str:
    """The JSON text of a results file's bytes (gzip or plain), within the size caps every reader of a file keeps:
    :data:`MAX_FILE_BYTES` compressed, :data:`MAX_JSON_BYTES` (a gzip bomb stops there) and about
    :data:`MAX_JSON_VALUES` values. A :class:`ResultsError` names the cap."""
    if len(raw) > MAX_FILE_BYTES:
        raise ResultsError(f"results file is {len(raw):,} bytes; the limit is {MAX_FILE_BYTES:,}")
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
                raw = f.read(MAX_JSON_BYTES + 1)
        except (OSError, EOFError) as e:
            raise ResultsError(f"results file is not valid gzip: {e}") from None
    if len(raw) > MAX_JSON_BYTES:
        raise ResultsError(f"results file holds more than {MAX_JSON_BYTES:,} bytes of JSON")
    values = sum(raw.count(c) for c in (b"{", b"[", b",", b":"))
    if values > MAX_JSON_VALUES:
        raise ResultsError(f"results file holds about {values:,} JSON values; the limit is {MAX_JSON_VALUES:,}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ResultsError(f"results file is not UTF-8: {e}") from None


def read_results(path: str | os.PathLike) -> Results:
    """Read and check a results file."""
    p = Path(path)
    if not p.is_file():
        raise ResultsError(f"results file {p} " + ("is a folder" if p.is_dir() else "does not exist"))
    if p.stat().st_size > MAX_FILE_BYTES:
        raise ResultsError(f"results file {p} is {p.stat().st_size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
    try:
        return loads(p.read_bytes())
    except ResultsError as error:  # which file, where a command reads several
        raise ResultsError(f"{p}: {error}") from None


def dumps(results: Results) -> bytes:
    """Gzip-compressed JSON (no timestamp in the gzip header, so equal results give equal bytes)."""
    data = results.to_dict()
    validate(data)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def write_results(results: Results, path: str | os.PathLike) -> Path:
    """Write ``results`` (gzip unless the name ends in ``.json``) atomically; returns the path."""
    p = Path(path)
    payload = dumps(results)
    if p.suffix == ".json":
        payload = gzip.decompress(payload)
    return write_atomic(p, payload)
