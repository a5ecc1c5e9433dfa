"""A leaderboard folder: the accepted results files, an index, and what is rendered from them.

Layout of a board folder (``leaderboards/<suite>/`` in the repository, or any folder such as ``runs/board``)::

    submissions/<slug>.json.gz   each accepted results file, byte for byte as submitted
    board.json                   the index: the suite, and per submission its name, slug, verification mark,
                                 policy, prompts, dates, the file's SHA-256 and summary numbers recomputed from
                                 the episodes
    README.md                    the Markdown table              (agentgym_bench.leaderboard.render)
    scores.png                   per-entry success with 95% intervals
    index.html                   the static page (no server needed; opens from file://)
    transcripts/<slug>.js        replayed transcripts of a sample of each submission's episodes, loaded on demand
    .lock, .gitignore            the submit lock (never committed) and the ignore file that says so

:func:`submit` is all-or-nothing. The results file is verified first (nothing is written if it fails); then, under an
exclusive ``fcntl`` lock on ``.lock`` (so concurrent submits queue, each waiting at most :data:`LOCK_TIMEOUT`
seconds), the index is re-read, the name checked, everything rendered into a staging folder inside the board, and
the files renamed into place one by one, ``board.json`` last. A rejected submission leaves the folder byte for byte
as it was. A name is taken if its slug is: submitting it again is refused unless ``replace``.

A board in a repository's ``leaderboards/`` folder (a published board) also refuses a file whose
``metadata.policy.model`` is a path on the machine that evaluated it (:func:`check_model_name`): absolute, or with
``~``, ``$`` or ``..``. Its files name a model folder by its path relative to the repository root (what ``eval``
records for a folder inside a repository), so every clone finds the same weights. Files already on the board are
exempt (the archived agentgym-v1 board holds build-machine paths): the rule is about what comes in, so a stored
file re-submitted byte for byte (``--replace``, to refresh its mark) is accepted, and :func:`rebuild` never checks
it. A board anywhere else (``runs/board``, the main job's work folder) is private to the machine that made it and
takes such paths.

:func:`rebuild` re-renders a board from its stored submissions (checking each file's SHA-256 against the index);
the verification marks stay those found when each file was submitted.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace as dc_replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentgym_bench.benchmark.results import Results, Summary, summarize
from agentgym_bench.benchmark.suites import Suite, SuiteEntry, parse_suite
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.verify import EpisodeText, Verified, check_name, replay_entry
from agentgym_bench.paths import BOARD_INDEX, is_machine_path, published_board, write_atomic

BOARD_FORMAT = "agentgym-bench-board"
INDEX, LOCK = BOARD_INDEX, ".lock"
LOCK_TIMEOUT = 600.0
TRANSCRIPT_EPISODES = 12
"""Transcripts kept per entry on the page: the entry's first seeds, the same games for every submission."""


def slugify(name: str) -> str:
    """The file-name form of a submission name: lower case, runs of other characters as one ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def suite_to_dict(suite: Suite) -> dict[str, Any]:
    """A suite in the JSON form of the suite files (``parse_suite`` reads it back)."""
    return {"name": suite.name, "version": suite.version, "split": suite.split, "seed_start": suite.seed_start,
            "description": suite.description,
            "entries": [_entry_dict(e) for e in suite.entries]}


def _entry_dict(e: SuiteEntry) -> dict[str, Any]:
    if e.opponent is not None:
        return {"name": e.name, "env_id": e.env_id, "env_kwargs": e.env_kwargs, "opponent": e.opponent,
                "episodes": e.episodes}
    return {"name": e.name, "env_id": e.env_id, "env_kwargs": e.env_kwargs, "prompts": list(e.prompts),
            "episodes": e.episodes, "oracle_success": e.oracle_success}


def read_index(folder: Path) -> dict[str, Any] | None:
    """The board's index, or ``None`` if the folder holds no board yet."""
    path = Path(folder) / INDEX
    if not path.is_file():
        return None
    index = json.loads(path.read_text())
    if index.get("format") != BOARD_FORMAT:
        raise UserError(f"{path} is not an agentgym-bench board index")
    return index


def record_of(verified: Verified, name: str, submitted: str, summary: Summary | None = None) -> dict[str, Any]:
    """The index record of an accepted submission (summary numbers recomputed from its episodes, unless given)."""
    results, meta = verified.results, verified.results.metadata
    policy = meta["policy"]
    return {
        "name": name, "slug": slugify(name), "mark": verified.mark, "regeneration": verified.regeneration,
        "notes": verified.notes, "kind": policy["kind"], "model": policy["model"],
        "model_sha256": policy["model_sha256"], "sampling": policy["sampling"], "history": policy["history"],
        "trainer": (meta["trainer"] or {}).get("algorithm"),
        **training_json(meta),
        "prompts": {e.name: e.prompt for e in results.entries},
        "submitted": submitted, "evaluated": meta["date"], "package_version": meta["package_version"],
        "git_commit": meta["git_commit"], "hardware": meta["hardware"], "sha256": verified.sha256,
        "compute": meta["compute"],
        "summary": summary_json(summary if summary is not None else summarize(results, verified.suite)),
    }


def training_json(metadata: dict[str, Any]) -> dict[str, Any]:
    """What the board shows of how a model was trained, as its results file reports it: the trainer's config
    (``trainer_config``, ``None`` if not reported), training curves (``curves``: metric -> [[step, value]]) and how
    the evaluated checkpoint was chosen (``selection``, ``None`` if not reported)."""
    trainer = metadata["trainer"] or {}
    return {"trainer_config": trainer.get("config"), "curves": trainer.get("curves", {}),
            "selection": trainer.get("selection")}


def summary_json(s: Summary) -> dict[str, Any]:
    """A :class:`~agentgym_bench.benchmark.results.Summary` (per-entry success with its Wilson interval, mean
    return with its interval, normalised outcome; for a match entry also the opponent and the draw, loss and deal
    rates; the suite score with its interval) as plain JSON."""
    entries = {}
    for e in s.entries:
        entries[e.name] = {"successes": e.success.successes, "n": e.success.n, "rate": e.success.rate,
                           "low": e.success.low, "high": e.success.high, "mean_return": e.mean_return[0],
                           "mean_return_low": e.mean_return[1], "mean_return_high": e.mean_return[2],
                           "normalised": e.normalised}
        if e.match is not None:
            rates = {"draw": e.match.draw, "loss": e.match.loss, "deal": e.match.deal}
            entries[e.name]["opponent"] = e.match.opponent
            entries[e.name].update({k: None if r is None else {"count": r.successes, "rate": r.rate, "low": r.low,
                                                               "high": r.high} for k, r in rates.items()})
    return {"entries": entries, "score": list(s.score)}


@contextmanager
def locked(folder: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the board's exclusive lock (``folder/.lock``), waiting at most ``timeout`` seconds for it."""
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        write_atomic(ignore, b".lock\n.staging-*/\n")
    with open(folder / LOCK, "a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise UserError(f"board {folder} stayed locked by another submit for {timeout:.0f}s") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def check_free(index: dict[str, Any] | None, name: str, suite: Suite, replace: bool) -> None:
    """Refuse a taken name (unless ``replace``) and a suite other than the board's."""
    if index is None:
        return
    if index["suite"] != suite_to_dict(suite):
        raise UserError(f"this board is for suite {index['suite']['name']} v{index['suite']['version']}; "
                        f"the results are for {suite.name} v{suite.version}")
    taken = next((r for r in index["submissions"] if r["slug"] == slugify(name)), None)
    if taken is not None and not replace:
        raise UserError(f"the name {name!r} is taken on this board (by {taken['name']!r}); choose another name or "
                        "pass --replace to replace that submission")


def episodes_sha256(results: Results) -> str:
    """SHA-256 of what a file's policy played: per entry (by name) and episode (by seed), every turn's observation
    hash, reply and token ids. Two files with the same value hold the same games, whatever their metadata says."""
    digest = hashlib.sha256()
    for entry in sorted(results.entries, key=lambda e: e.name):
        for ep in sorted(entry.episodes, key=lambda ep: ep.seed):
            turns = [[t.observation_sha256, t.reply, t.token_ids] for t in ep.turns]
            digest.update(json.dumps([entry.name, ep.seed, turns]).encode() + b"\n")
    return digest.hexdigest()


def check_not_a_copy(folder: Path, index: dict[str, Any] | None, name: str, verified: Verified,
                     stored: dict[str, Results] | None = None) -> None:
    """Refuse a file that is another submission of the board under a new name: the same bytes (its SHA-256 is in the
    index), or the same episodes (:func:`episodes_sha256`) with other metadata. Replacing a submission by itself
    (``--replace`` under its own name) is allowed. ``stored``: slug -> results already loaded."""
    slug = slugify(name)
    others = [r for r in (index or {}).get("submissions", []) if r["slug"] != slug]
    same = next((r for r in others if r["sha256"] == verified.sha256), None)
    if same is not None:
        raise UserError(f"this file is byte for byte the file of submission {same['name']!r} on board {folder}; a "
                        "copy cannot go on the board under another name")
    mine = episodes_sha256(verified.results)
    for r in others:
        results = (stored or {}).get(r["slug"]) or _load_stored(folder, r)
        if episodes_sha256(results) == mine:
            raise UserError(f"this file holds the episodes of submission {r['name']!r} on board {folder} (every "
                            "observation and reply of every seed), under other metadata; a copy cannot go on the "
                            "board under another name")


def check_model_name(index: dict[str, Any] | None, folder: str | os.PathLike, verified: Verified) -> None:
    """Refuse, on a published board, a file whose ``metadata.policy.model`` is a machine path
    (:func:`~agentgym_bench.paths.is_machine_path`), unless the file is already on the board (its SHA-256 is in the
    index). See the module docstring."""
    model = verified.results.metadata["policy"]["model"]
    if not model or not is_machine_path(model) or not published_board(folder):
        return
    if verified.sha256 in {r["sha256"] for r in (index or {}).get("submissions", [])}:
        return
    raise UserError(f"metadata.policy.model {model!r} is a path on the machine that evaluated it; board {folder} "
                    "takes models named by their path relative to the repository root: put the model folder in the "
                    f"repository (e.g. {Path(folder).as_posix()}/models/<name>/) and evaluate it there")


def submit(verified: Verified, name: str, folder: str | os.PathLike, *, replace: bool = False,
           summary: Summary | None = None, progress: bool = False) -> dict[str, Any]:
    """Put a verified results file on the board in ``folder`` and re-render it; returns its index record.
    ``summary``: the file's :func:`~agentgym_bench.benchmark.results.summarize`, if already computed.

    Raises :class:`UserError` (the board untouched) for a bad or taken name, a board of another suite, a model
    named by a machine path on a published board (:func:`check_model_name`), or a copy of another submission
    (:func:`check_not_a_copy`).
    """
    folder = Path(folder)
    name = check_name(name)
    if not slugify(name):
        raise UserError(f"submission name {name!r} has no letters or digits")
    index = read_index(folder)  # before the lock: a refusal creates nothing
    check_free(index, name, verified.suite, replace)
    check_model_name(index, folder, verified)
    with locked(folder):
        index = read_index(folder)
        check_free(index, name, verified.suite, replace)
        check_model_name(index, folder, verified)
        records = [r for r in (index or {}).get("submissions", []) if r["slug"] != slugify(name)]
        stored = {r["slug"]: _load_stored(folder, r) for r in records}
        check_not_a_copy(folder, index, name, verified, stored)
        record = record_of(verified, name, datetime.now(timezone.utc).isoformat(timespec="seconds"), summary)
        records.append(record)
        stored[record["slug"]] = verified.results
        write_board(folder, verified.suite, records, stored, new={record["slug"]: verified.raw},
                    transcripts_for={record["slug"]}, progress=progress)
    return record


def rebuild(folder: str | os.PathLike, *, progress: bool = False) -> dict[str, Any]:
    """Re-render a board from its stored submissions (all transcripts included); returns the index."""
    folder = Path(folder)
    index = read_index(folder)
    if index is None:
        raise UserError(f"{folder} holds no board ({INDEX} is missing); submit a results file first")
    with locked(folder):
        index = read_index(folder)
        assert index is not None
        suite = parse_suite(index["suite"])
        records = index["submissions"]
        stored = {r["slug"]: _load_stored(folder, r) for r in records}
        for r in records:
            r["summary"] = summary_json(summarize(stored[r["slug"]], suite))
            r.update(training_json(stored[r["slug"]].metadata))
        write_board(folder, suite, records, stored, new={}, transcripts_for={r["slug"] for r in records},
                    progress=progress)
    return read_index(folder) or {}


def _load_stored(folder: Path, record: dict[str, Any]) -> Results:
    path = folder / "submissions" / f"{record['slug']}.json.gz"
    if not path.is_file():
        raise UserError(f"board {folder}: the file of submission {record['name']!r} ({path}) is missing")
    raw = path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != record["sha256"]:
        raise UserError(f"board {folder}: {path} does not match the SHA-256 in {INDEX}; it was changed after it "
                        "was verified")
    # the same bytes passed the schema when submitted: parse without validating again (10x faster)
    return Results.from_dict(json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw))


def transcripts_of(results: Results, episodes: int = TRANSCRIPT_EPISODES) -> dict[str, dict[int, EpisodeText]]:
    """Entry name -> seed -> replayed texts of the entry's first ``episodes`` episodes (by seed)."""
    out = {}
    for entry in results.entries:
        first = sorted(entry.episodes, key=lambda ep: ep.seed)[:episodes]
        out[entry.name] = replay_entry(dc_replace(entry, episodes=first), keep={ep.seed for ep in first})
    return out


def write_board(folder: Path, suite: Suite, records: list[dict[str, Any]], stored: dict[str, Results], *,
                new: dict[str, bytes], transcripts_for: set[str], progress: bool = False) -> None:
    """Render everything into a staging folder in ``folder`` and rename it into place, ``board.json`` last.

    Args:
        records: the index records (ranked here by score).
        stored: slug -> the results of every record.
        new: slug -> bytes of results files to store.
        transcripts_for: slugs whose transcripts are (re-)written.
    """
    from agentgym_bench.leaderboard import render

    records = sorted(records, key=lambda r: (-r["summary"]["score"][0], r["submitted"]))
    staging = folder / f".staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        (staging / "submissions").mkdir(parents=True)
        (staging / "transcripts").mkdir()
        for slug, raw in new.items():
            (staging / "submissions" / f"{slug}.json.gz").write_bytes(raw)
        for slug in sorted(transcripts_for):
            record = next(r for r in records if r["slug"] == slug)
            (staging / "transcripts" / f"{slug}.js").write_text(
                render.transcripts_js(record, stored[slug], transcripts_of(stored[slug])), encoding="utf-8")
        comparisons = render.comparisons(suite, records, stored, progress=progress)
        (staging / "README.md").write_text(render.markdown(suite, records), encoding="utf-8")
        render.png(suite, records, staging / "scores.png")
        (staging / "index.html").write_text(render.html(suite, records, comparisons), encoding="utf-8")
        index = {"format": BOARD_FORMAT, "format_version": 1, "suite": suite_to_dict(suite), "submissions": records}
        (staging / INDEX).write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        for sub in ("submissions", "transcripts"):
            (folder / sub).mkdir(exist_ok=True)
            for p in sorted((staging / sub).iterdir()):
                os.replace(p, folder / sub / p.name)
        for name in ("README.md", "scores.png", "index.html", INDEX):
            os.replace(staging / name, folder / name)
        keep = {r["slug"] for r in records}
        for sub, suffix in (("submissions", ".json.gz"), ("transcripts", ".js")):
            for p in (folder / sub).iterdir():
                if p.name.endswith(suffix) and p.name[: -len(suffix)] not in keep:
                    p.unlink()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
