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
exclusive ``fcntl`` lock on ``.lock`` (so concurrent submits queue, each waiting at most
:data:`~agentgym_bench.leaderboard.folder.LOCK_TIMEOUT` seconds), the index is re-read, the name checked, everything
rendered into a staging folder inside the board, and the files renamed into place one by one, ``board.json`` last
(:func:`~agentgym_bench.leaderboard.folder.rename_into_place`: a write stopped part way is put back as it was). A
rejected submission leaves the folder byte for byte as it was. A name is taken if its slug is: submitting it again is
refused unless ``replace``.

A board in a repository's ``leaderboards/`` folder (a published board) also refuses a file whose
``metadata.policy.model`` is a path on the machine that evaluated it (:func:`check_model_name`): absolute, or with
``~``, ``$`` or ``..``. Its files name a model folder by its path relative to the repository root (what ``eval``
records for a folder inside a repository), so every clone finds the same weights. Files already on the board are
exempt (the archived agentgym-v1 board holds build-machine paths): the rule is about what comes in, so a stored
file re-submitted byte for byte (``--replace``, to refresh its mark) is accepted, and :func:`rebuild` never checks
it. It also takes one sampling seed, :data:`SAMPLING_SEED`, from a policy that samples (:func:`check_sampling_seed`),
so that a model has one read. A board anywhere else (``runs/board``, the main job's work folder) is private to the
machine that made it and takes such paths and seeds.

:func:`rebuild` re-renders a board from its stored submissions (checking each file's SHA-256 against the index),
keeping the marks found at submission; with ``remove`` it takes a submission off, with its files and weights.

A board's files are data, never code paths. :func:`read_index`, the one place a board is read from, checks the index
against :data:`INDEX_SCHEMA` (every field the code uses, with its type; slugs that are their names' file-name
form), so a damaged ``board.json`` (truncated, empty, of another shape) is one line naming it and how to restore it,
never a traceback half-way through. It also refuses a symbolic link among the board's folders and files
(:func:`check_no_links`), and every path the board writes, renames onto or deletes goes through :func:`board_path`,
which refuses a link on the way: nothing is written or deleted outside the board. Re-rendering deletes only the
files it wrote for an entry no longer on the board (``submissions/<slug>.json.gz``, ``transcripts/<slug>.js``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentgym_bench.benchmark.results import Results, json_text
from agentgym_bench.benchmark.scores import Summary, summarize
from agentgym_bench.benchmark.suites import SUITE_SCHEMA, Suite, parse_suite, suite_to_dict
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard import render
from agentgym_bench.leaderboard.folder import (
    INDEX,
    MODELS,
    SLUG,
    STAGING,
    board_path,
    check_no_links,
    interrupted_writes,
    locked,
    rename_into_place,
    roll_back,
    slugify,
)
from agentgym_bench.leaderboard.verify import REPLAYED, REPRODUCED, Verified, check_name
from agentgym_bench.paths import is_machine_path, published_board, repository_root
from agentgym_bench.schema_check import violation

BOARD_FORMAT = "agentgym-bench-board"
SAMPLING_SEED = 0
"""The one sampling seed a published board takes (:func:`check_sampling_seed`)."""


_STRING, _INTEGER, _NUMBER = {"type": "string"}, {"type": "integer"}, {"type": "number"}
_OBJECT, _STRINGS = {"type": "object"}, {"type": "array", "items": {"type": "string"}}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "type": ["null", schema["type"]]}


def _numbers(*keys: str, integers: tuple[str, ...] = ()) -> dict[str, Any]:
    """An object requiring ``keys`` as numbers and ``integers`` as integers."""
    return {"type": "object", "required": [*integers, *keys],
            "properties": {**{k: _INTEGER for k in integers}, **{k: _NUMBER for k in keys}}}


_RATE = _numbers("rate", "low", "high", integers=("count",))
_ENTRY_SUMMARY = {**_numbers("rate", "low", "high", "mean_return", "mean_return_low", "mean_return_high", "normalised",
                             integers=("successes", "n")),
                  "dependentRequired": {"opponent": ["draw", "loss", "deal"]}}
_ENTRY_SUMMARY["properties"].update(opponent=_STRING, draw=_RATE, loss=_RATE, deal=_nullable(_RATE))
_RECORD = {
    "type": "object",
    "required": ["name", "slug", "mark", "regeneration", "notes", "kind", "model", "model_sha256", "sampling",
                 "history", "trainer", "prompts", "submitted", "evaluated", "package_version", "git_commit",
                 "hardware", "sha256", "compute", "summary"],
    "properties": {
        "name": _STRING, "slug": {"type": "string", "pattern": f"^{SLUG.pattern}$"},
        "mark": {"enum": [REPLAYED, REPRODUCED]}, "regeneration": _STRING, "notes": _STRINGS, "kind": _STRING,
        "model": _nullable(_STRING), "model_sha256": _nullable(_STRING), "sampling": _OBJECT,
        "history": _nullable(_INTEGER), "trainer": _nullable(_STRING), "prompts": _OBJECT, "submitted": _STRING,
        "evaluated": _STRING, "package_version": _STRING, "git_commit": _nullable(_STRING), "hardware": _OBJECT,
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "compute": {"type": "object", "required": ["env_steps", "generated_tokens", "wall_time_s"],
                    "properties": {"env_steps": _nullable(_INTEGER), "generated_tokens": _nullable(_INTEGER),
                                   "wall_time_s": _NUMBER}},
        "summary": {"type": "object", "required": ["entries", "score"],
                    "properties": {"entries": {"type": "object", "additionalProperties": _ENTRY_SUMMARY},
                                   "score": {"type": "array", "items": _NUMBER, "minItems": 3, "maxItems": 3}}},
        # written by training_json; a board made before they existed lacks them (submit and rebuild fill them in)
        "trainer_config": _nullable(_OBJECT), "curves": _OBJECT, "selection": _nullable(_STRING),
    },
}
INDEX_SCHEMA = {
    "type": "object", "required": ["format", "format_version", "suite", "submissions"],
    "properties": {
        "format": _STRING, "format_version": {"const": 1},
        "suite": SUITE_SCHEMA,
        "submissions": {"type": "array", "items": _RECORD},
    },
}
"""The shape of ``board.json`` (:func:`read_index` checks it): every field the board's code reads, with its type."""


def read_index(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The board's index, checked, or ``None`` if the folder holds no board yet.

    This is the one place a board is read from: it refuses a symbolic link among the board's folders and files
    (:func:`check_no_links`), and an index that is not what :func:`write_board` writes (not JSON, empty, truncated, or
    of another shape than :data:`INDEX_SCHEMA`, a slug that is not its name's, a suite that does not parse), with one
    line naming the file and how to repair it, so no command meets a damaged board in the middle of its work.
    """
    folder = Path(folder)
    check_no_links(folder)
    path = folder / INDEX
    if not path.exists():
        return None
    if not path.is_file():
        raise _damaged(path, "it is not a file")
    raw = path.read_bytes()
    if not raw.strip():
        raise _damaged(path, "it is empty")
    try:
        text = raw.decode("utf-8")
        index = json.loads(text)
    except json.JSONDecodeError as e:
        cut = e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string")
        why = "it ends early (cut short?)" if cut else f"it is not JSON ({e})"
        raise _damaged(path, why) from None
    except (UnicodeDecodeError, RecursionError) as e:
        raise _damaged(path, f"it is not JSON ({' '.join(str(e).split())[:200]})") from None
    if isinstance(index, dict) and index.get("format") != BOARD_FORMAT:
        raise UserError(f"{path} is not an agentgym-bench board index (its format is not {BOARD_FORMAT!r})")
    _check_index(path, index)
    return index


def _check_index(path: Path, index: Any) -> None:
    """Raise the :func:`_damaged` error of the first way ``index`` is not a board's index."""
    problem = violation(INDEX_SCHEMA, index, whole="the whole file")
    if problem is not None:
        raise _damaged(path, problem)
    slugs = set()
    for i, r in enumerate(index["submissions"]):
        if r["slug"] != slugify(r["name"]) or r["slug"] in slugs:
            raise _damaged(path, f"submission {i} ({r['name']!r}) has slug {r['slug']!r}, which is not its name's or "
                           "is another submission's")
        slugs.add(r["slug"])
        missing = [e["name"] for e in index["suite"]["entries"] if e["name"] not in r["summary"]["entries"]]
        if missing:
            raise _damaged(path, f"submission {r['name']!r} has no summary of entries {missing}")
    try:
        parse_suite(index["suite"])
    except (ValueError, KeyError, TypeError) as e:
        raise _damaged(path, f"its suite does not parse ({' '.join(str(e).split())[:200]})") from None


def _damaged(path: Path, why: str) -> UserError:
    """The one-line error of a damaged index: what is wrong, and how to get the board back."""
    folder = path.parent
    if published_board(folder):
        repair = f"restore it from git: git checkout -- {path}"
    else:
        repair = (f"restore it from a copy, or move {folder} away and submit the files of its submissions/ folder "
                  "again to make a new board")
    return UserError(f"board index {path} is damaged: {why}; {repair}")


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
    """A :class:`~agentgym_bench.benchmark.scores.Summary` (per-entry success with its Wilson interval, mean
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


def check_free(index: dict[str, Any] | None, name: str, suite: Suite, replace: bool) -> None:
    """Refuse a taken name (unless ``replace``) and a suite other than the board's."""
    if index is None:
        return
    if index["suite"] != (mine := suite_to_dict(suite)):  # the fields named: an edited description reads alike
        raise UserError(f"this board is for suite {index['suite']['name']} v{index['suite']['version']}; the results' "
                        f"suite differs in {', '.join(k for k in sorted(mine) if index['suite'].get(k) != mine[k])}")
    taken = next((r for r in index["submissions"] if r["slug"] == slugify(name)), None)
    if taken is not None and not replace:
        raise UserError(f"the name {name!r} is taken on this board (by {taken['name']!r}); choose another name or "
                        "pass --replace to replace that submission")


def check_open(index: dict[str, Any] | None, name: str, suite: Suite, sha256: str | None = None) -> None:
    """Refuse a new file on the board of an archived suite (``suite.superseded_by``, see
    :data:`~agentgym_bench.benchmark.suites.SUPERSEDED`): the board stays readable and verifiable, so a submission's
    own file may come again under its own name (byte for byte, ``sha256``; ``None`` checks the name only, before the
    file is read), to refresh its mark; nothing else."""
    successor = suite.superseded_by
    if successor is None:
        return
    own = next((r for r in (index or {}).get("submissions", []) if r["slug"] == slugify(name)), None)
    if own is not None and sha256 in (None, own["sha256"]):
        return
    why = (f"there is no submission {name!r} on it" if own is None else
           f"this file is not byte for byte the file of its submission {own['name']!r}")
    raise UserError(f"this board holds the archived suite {suite.name} (superseded by {successor}: its test episodes "
                    f"were held out by seed, not by content) and takes no new files ({why}; a submission's own file "
                    f"may be submitted again under its name to re-verify it); evaluate on {successor} and submit "
                    f"to its board, leaderboards/{successor}/")


def episodes_sha256(results: Results) -> str:
    """SHA-256 of what a file's policy played: per entry (by name) and episode (by seed), every turn's observation
    hash and reply (what replay binds; not the token ids, which a copy could drop or change where it is only
    replayed). Two files with the same value hold the same games, whatever their metadata says (not the actions
    alone: two weak models that never move play alike with other replies, and each has its row)."""
    digest = hashlib.sha256()
    for entry in sorted(results.entries, key=lambda e: e.name):
        for ep in sorted(entry.episodes, key=lambda ep: ep.seed):
            turns = [[t.observation_sha256, t.reply] for t in ep.turns]
            digest.update(json.dumps([entry.name, ep.seed, turns]).encode() + b"\n")
    return digest.hexdigest()


def check_not_a_copy(folder: Path, index: dict[str, Any] | None, name: str, results: Results, sha256: str,
                     stored: dict[str, Results] | None = None) -> None:
    """Refuse a file (its ``results`` and the SHA-256 of its bytes) that is another submission of the board under a
    new name: the same bytes (its SHA-256 is in the index), or the same episodes (:func:`episodes_sha256`) with other
    metadata. Replacing a submission by itself (``--replace`` under its own name) is allowed. It needs no
    verification, so ``submit`` runs it before replaying anything. ``stored``: slug -> results already loaded."""
    slug = slugify(name)
    others = [r for r in (index or {}).get("submissions", []) if r["slug"] != slug]
    same = next((r for r in others if r["sha256"] == sha256), None)
    if same is not None:
        raise UserError(f"this file is byte for byte the file of submission {same['name']!r} on board {folder}; a "
                        "copy cannot go on the board under another name")
    mine = episodes_sha256(results)
    for r in others:
        results = (stored or {}).get(r["slug"]) or load_stored(folder, r)
        if episodes_sha256(results) == mine:
            raise UserError(f"this file holds the episodes of submission {r['name']!r} on board {folder} (every "
                            "observation and reply of every seed) under other metadata: a copy of that entry, or a "
                            "run of the same model again (through serve or hf:, the same weights and seed reply "
                            "alike), and either way its result is that entry's")


def check_same_training(folder: Path, index: dict[str, Any] | None, name: str, verified: Verified,
                        stored: dict[str, Results] | None = None) -> None:
    """Refuse a file whose weights (``model_sha256``) are already on the board, re-generated (*reproduced*), under
    another name with another report of their training (``metadata.trainer`` or ``metadata.compute.training``, where
    both files report it): one set of weights has one training, so a second file cannot relabel it. A file that
    reports none is accepted (the board shows it as not reported). ``stored``: slug -> results already loaded."""
    meta = verified.results.metadata
    weights = meta["policy"]["model_sha256"]
    if weights is None:
        return
    mine = {"trainer": meta["trainer"], "training": meta["compute"].get("training")}
    slug = slugify(name)
    for r in (index or {}).get("submissions", []):
        if r["slug"] == slug or r["model_sha256"] != weights or r["mark"] != REPRODUCED:
            continue  # only weights re-generated here are known to be these; a replayed file's hash is a claim
        theirs = ((stored or {}).get(r["slug"]) or load_stored(folder, r)).metadata
        reported = {"trainer": theirs["trainer"], "training": theirs["compute"].get("training")}
        differs = [k for k in mine if mine[k] is not None and reported[k] is not None and mine[k] != reported[k]]
        if differs:
            field = "metadata.trainer" if differs[0] == "trainer" else "metadata.compute.training"
            raise UserError(f"the file's weights (model_sha256 {weights[:12]}...) are on this board as submission "
                            f"{r['name']!r}, whose {field} differs from this file's: one set of weights has one "
                            "training record")


def holds_file(index: dict[str, Any] | None, sha256: str) -> bool:
    """Whether the board's index holds a submission whose file has this SHA-256 (a file already on the board)."""
    return any(r["sha256"] == sha256 for r in (index or {}).get("submissions", []))


def check_model_name(index: dict[str, Any] | None, folder: str | os.PathLike, results: Results, sha256: str
                     ) -> None:
    """Refuse, on a published board, a file whose ``metadata.policy.model`` is a machine path (:func:`~agentgym_bench.
    paths.is_machine_path`), unless the file is already on the board (its SHA-256 is in the index; see above)."""
    model = results.metadata["policy"]["model"]
    if not model or not is_machine_path(model) or not published_board(folder):
        return
    if holds_file(index, sha256):
        return
    raise UserError(f"metadata.policy.model {model!r} is a path on the machine that evaluated it; board {folder} "
                    "takes models named by their path relative to the repository root: put the model folder in the "
                    f"repository (e.g. {Path(folder).as_posix()}/models/<name>/) and evaluate it there")


def check_sampling_seed(index: dict[str, Any] | None, folder: str | os.PathLike, results: Results, sha256: str
                        ) -> None:
    """Refuse, on a published board, a file of a policy that samples (``sampling.keyed``) under another sampling seed
    than :data:`SAMPLING_SEED` (``eval``'s default), unless it is already on the board: one seed for every
    submission, so that a model has one read and nobody evaluates under many seeds to submit the best (entries of one
    model differ by a few thousandths between seeds, about the gap between neighbouring rows). A policy that draws
    nothing (the oracle, the scripted bargainer) replies the same under any seed."""
    sampling = results.metadata["policy"]["sampling"]
    if sampling["seed"] == SAMPLING_SEED or not sampling["keyed"] or not published_board(folder):
        return
    if holds_file(index, sha256):
        return
    raise UserError(f"metadata.policy.sampling.seed is {sampling['seed']}; board {folder} takes files evaluated "
                    f"with its sampling seed, {SAMPLING_SEED} (eval's default), so that every model has one read: "
                    f"evaluate again with --seed {SAMPLING_SEED}")


def check_admissible(index: dict[str, Any] | None, folder: str | os.PathLike, name: str, verified: Verified,
                     replace: bool = False) -> None:
    """The refusals that read only the index: :func:`check_free`, :func:`check_open`, :func:`check_model_name`,
    :func:`check_sampling_seed` (``submit`` runs them before its lock and again under it; ``submit --check`` too)."""
    check_free(index, name, verified.suite, replace)
    check_open(index, name, verified.suite, verified.sha256)
    check_model_name(index, folder, verified.results, verified.sha256)
    check_sampling_seed(index, folder, verified.results, verified.sha256)


def screen(folder: str | os.PathLike, index: dict[str, Any] | None, name: str, results: Results, sha256: str
           ) -> None:
    """The refusals of a replayed file that need no re-generation, in :func:`check_admissible`'s order, then
    :func:`check_not_a_copy`: ``submit`` runs them before re-generating or printing anything (refused in seconds)."""
    check_model_name(index, folder, results, sha256)
    check_sampling_seed(index, folder, results, sha256)
    check_not_a_copy(Path(folder), index, name, results, sha256)


def submit(verified: Verified, name: str, folder: str | os.PathLike, *, replace: bool = False,
           summary: Summary | None = None, progress: bool = False) -> dict[str, Any]:
    """Put a verified results file on the board in ``folder`` and re-render it; returns its index record.
    ``summary``: the file's :func:`~agentgym_bench.benchmark.scores.summarize`, if already computed.

    Raises :class:`UserError` (the board untouched) for a bad or taken name, a board of another suite, a new file on
    an archived suite's board (:func:`check_open`), another sampling seed than the published board's
    (:func:`check_sampling_seed`), a model
    named by a machine path on a published board (:func:`check_model_name`), a copy of another submission
    (:func:`check_not_a_copy`), or weights on the board with another training record (:func:`check_same_training`).
    """
    folder = Path(folder)
    name = check_name(name)
    if not slugify(name):
        raise UserError(f"submission name {name!r} has no letters or digits")
    check_admissible(read_index(folder), folder, name, verified, replace)  # before the lock: a refusal creates nothing
    with locked(folder):
        index = read_index(folder)
        check_admissible(index, folder, name, verified, replace)
        records = [r for r in (index or {}).get("submissions", []) if r["slug"] != slugify(name)]
        stored = {r["slug"]: load_stored(folder, r) for r in records}
        for r in records:  # what a board made before these fields existed lacks
            r.update(training_json(stored[r["slug"]].metadata))
        check_not_a_copy(folder, index, name, verified.results, verified.sha256, stored)
        check_same_training(folder, index, name, verified, stored)
        record = record_of(verified, name, datetime.now(timezone.utc).isoformat(timespec="seconds"), summary)
        records.append(record)
        stored[record["slug"]] = verified.results
        write_board(folder, verified.suite, records, stored, new={record["slug"]: verified.raw},
                    transcripts_for={record["slug"]}, progress=progress)
    return record


def rebuild(folder: str | os.PathLike, *, progress: bool = False, remove: str | None = None) -> dict[str, Any]:
    """Re-render a board from its stored submissions (all transcripts included); returns the index. ``remove``: the
    name (or slug) of a submission to take off the board first, with its results file, transcripts and published
    weights (``models/<slug>``, kept while another entry names them). A :class:`UserError` (nothing written) for no
    board in ``folder``, no submission ``remove``, or one whose weights another entry's trainer record names as its
    start (remove that entry first)."""
    folder = Path(folder)
    index = read_index(folder)
    if index is None:
        raise UserError(f"{folder} holds no board ({INDEX} is missing); submit a results file first")
    if remove is not None:
        without(folder, index["submissions"], remove)  # before the lock: a refusal creates nothing
    with locked(folder):
        index = read_index(folder)
        assert index is not None
        suite = parse_suite(index["suite"])
        records = index["submissions"] if remove is None else without(folder, index["submissions"], remove)
        stored = {r["slug"]: load_stored(folder, r) for r in records}
        for r in records:
            r["summary"] = summary_json(summarize(stored[r["slug"]], suite))
            r.update(training_json(stored[r["slug"]].metadata))
        write_board(folder, suite, records, stored, new={}, transcripts_for={r["slug"] for r in records},
                    progress=progress)
        if remove is not None and not weights_in_use(folder, slugify(remove), records):
            shutil.rmtree(board_path(folder, MODELS, slugify(remove)), ignore_errors=True)
    return read_index(folder) or {}


def weights_in_use(folder: Path, slug: str, records: list[dict[str, Any]]) -> bool:
    """Whether ``models/<slug>`` of board ``folder`` is the model of one of ``records`` or of a sibling board's."""
    boards = [read_index(b) for b in folder.parent.iterdir() if (b / INDEX).is_file() and not b.samefile(folder)]
    models = [r["model"] for r in records + [r for i in boards if i for r in i["submissions"]] if r["model"]]
    return any(Path(repository_root(folder) or folder, m).resolve() == (folder / MODELS / slug).resolve()
               for m in models)


def without(folder: Path, records: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """``records`` less the submission named ``name`` (or of that slug), for :func:`rebuild`."""
    gone = next((r for r in records if r["slug"] == slugify(name)), None)
    if gone is None:
        raise UserError(f"board {folder} has no submission {name!r}; it has "
                        + ", ".join(repr(r["name"]) for r in records))
    rest = [r for r in records if r is not gone]
    started = [r["name"] for r in rest if render.start_on_board(r, [gone]) is not None]
    if started:
        raise UserError(f"board {folder}: {', '.join(map(repr, started))} started from the weights of "
                        f"{gone['name']!r}, whose training record the board shows as theirs; remove them first")
    return rest


def load_stored(folder: Path, record: dict[str, Any]) -> Results:
    """The results file of the board's submission ``record`` (an entry of its index), checked against the SHA-256
    the index records: a :class:`UserError` if the file is missing or was changed after it was verified."""
    path = board_path(folder, "submissions", f"{record['slug']}.json.gz")
    if not path.is_file():
        raise UserError(f"board {folder}: the file of submission {record['name']!r} ({path}) is missing")
    raw = path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != record["sha256"]:
        if stopped := interrupted_writes(folder):
            raise UserError(f"board {folder}: a write to it was stopped part way ({stopped[0]}); "
                            f"`agentgym-bench board --board {folder}` puts it back as it was")
        raise UserError(f"board {folder}: {path} does not match the SHA-256 in {INDEX}; it was changed after it "
                        "was verified")
    # the same bytes passed the schema when submitted: parse without validating again (10x faster), within the caps
    return Results.from_dict(json.loads(json_text(raw)))


def write_board(folder: Path, suite: Suite, records: list[dict[str, Any]], stored: dict[str, Results], *,
                new: dict[str, bytes], transcripts_for: set[str], progress: bool = False) -> None:
    """Render everything into a staging folder in ``folder`` and rename it into place, ``board.json`` last.

    Args:
        records: the index records (ranked here: :func:`~agentgym_bench.leaderboard.render.rank_order`).
        stored: slug -> the results of every record.
        new: slug -> bytes of results files to store.
        transcripts_for: slugs whose transcripts are (re-)written.
    """
    records = sorted(records, key=render.rank_order)
    staging = board_path(folder, f"{STAGING}{os.getpid()}")
    try:
        staging.mkdir()
        (staging / "submissions").mkdir()
        (staging / "transcripts").mkdir()
        for slug, raw in new.items():
            (staging / "submissions" / f"{slug}.json.gz").write_bytes(raw)
        for slug in sorted(transcripts_for):
            record = next(r for r in records if r["slug"] == slug)
            (staging / "transcripts" / f"{slug}.js").write_text(
                render.transcripts_js(record, stored[slug], render.transcripts_of(stored[slug])), encoding="utf-8")
        comparisons = render.comparisons(suite, records, stored, progress=progress)
        (staging / "README.md").write_text(render.markdown(suite, records), encoding="utf-8")
        render.png(suite, records, staging / "scores.png")
        (staging / "index.html").write_text(render.html(suite, records, comparisons), encoding="utf-8")
        index = {"format": BOARD_FORMAT, "format_version": 1, "suite": suite_to_dict(suite), "submissions": records}
        (staging / INDEX).write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        names = [(sub, p.name) for sub in ("submissions", "transcripts") for p in sorted((staging / sub).iterdir())]
        for sub in ("submissions", "transcripts"):
            board_path(folder, sub).mkdir(exist_ok=True)
        rename_into_place(folder, staging, names + [(n,) for n in ("README.md", "scores.png", "index.html", INDEX)])
        keep = {r["slug"] for r in records}
        for sub, suffix in (("submissions", ".json.gz"), ("transcripts", ".js")):
            for p in sorted(board_path(folder, sub).iterdir()):
                slug = p.name[: -len(suffix)] if p.name.endswith(suffix) else ""
                if SLUG.fullmatch(slug) and slug not in keep:  # only a file the board wrote, of a removed entry
                    board_path(folder, sub, p.name).unlink()
    except BaseException:
        roll_back(folder, staging)  # if this fails too, the staging folder stays for the next lock holder's recover
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(staging, ignore_errors=True)
