"""Verify a results file before it goes on a board: checks, replay of every episode, and re-generation of a sample.

:func:`verify` runs, in this order, each failing with a :class:`~agentgym_bench.benchmark.results.ResultsError`
that names what is wrong:

1. size limits, JSON Schema, no NaN or infinite numbers (:func:`agentgym_bench.benchmark.results.loads`);
2. the suite: name and version equal to the suite given (by default the bundled suite the file names);
3. the entries: exactly the suite's names, each with the entry's env id, ``env_kwargs`` equal to the entry's fixed
   ones plus a ``prompt`` among the entry's ``prompts``;
4. the seeds: exactly the entry's seeds, no missing, foreign or duplicated seed;
5. **replay** (:func:`replay_entry`): every episode's raw replies are fed, in order, to one fresh
   ``gym.make(env_id, **env_kwargs)`` per entry, reset with the episode's seed. Each turn's observation hash, parsed
   and executed actions and reward (within :data:`REWARD_TOLERANCE`), the number of turns, the final observation
   hash, the return and the success must equal the recorded ones. A file written by another package version is
   accepted only if it replays (the envs' behaviour is what counts); if it does not, the message says the versions
   differ;
6. **re-generation** (:func:`regenerate`), only where it can run here: the policy is ``hf``, its model folder exists
   on this machine with the recorded weights hash, and sampling was keyed. A seeded sample of episodes (default
   :data:`REGENERATION_SAMPLE`, drawn with a seed taken from the file's SHA-256) is re-generated turn by turn from
   the replayed observations with the recorded sampling settings and history window, and the replies are compared
   token for token (``token_ids`` where recorded, else the text).

A file that passes 1-5 is *replayed*; one that also passes 6 is *reproduced*. A failed re-generation does not reject
the file (hardware can change the last bit of a logit, and with it a sampled token), it keeps the mark *replayed*
and the reason is shown on the board. Re-generation is what catches a file whose replies came from another model
than the one its metadata names.

Submission names (:func:`check_name`) are 1-64 characters of ``[A-Za-z0-9 ._+-]``: no path separators, no markup.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym_bench.benchmark.results import EntryResults, Results, ResultsError, loads, sha256_text
from agentgym_bench.benchmark.suites import Suite, available_suites, load_suite
from agentgym_bench.progress import progress as progress_bar

REWARD_TOLERANCE = 1e-9
REGENERATION_SAMPLE = 32
NAME_PATTERN = re.compile(r"[A-Za-z0-9 ._+-]{1,64}")
REPLAYED, REPRODUCED = "replayed", "reproduced"


def check_name(name: str) -> str:
    """``name`` stripped, if it is a valid submission name; else a :class:`ResultsError` saying why."""
    stripped = name.strip()
    if not NAME_PATTERN.fullmatch(stripped) or not any(c.isalnum() for c in stripped):
        raise ResultsError(f"submission name {name!r} is not allowed: use 1-64 characters of letters, digits, "
                           "space and . _ + - (no path separators, no markup), with at least one letter or digit")
    return stripped


@dataclass
class Verified:
    """A results file that passed :func:`verify`.

    Attributes:
        results: the parsed file.
        suite: the suite it was checked against.
        raw: the file's bytes, exactly as given (what a board stores).
        sha256: hex SHA-256 of ``raw``.
        mark: :data:`REPLAYED` or :data:`REPRODUCED`.
        regeneration: one line: why the file was not re-generated, or what re-generation found.
        episodes: episodes replayed.
        notes: what else the board should show (a file from another package version that replays).
    """

    results: Results
    suite: Suite
    raw: bytes
    sha256: str
    mark: str
    regeneration: str
    episodes: int
    notes: list[str] = field(default_factory=list)


class ReplayMismatch(ResultsError):
    """A recorded episode that replay does not reproduce."""


def read_source(source: str | os.PathLike | bytes) -> bytes:
    """The bytes of a results file given as bytes or a path (the size limit is checked before reading)."""
    from agentgym_bench.benchmark.results import MAX_FILE_BYTES

    if isinstance(source, bytes):
        return source
    path = Path(source)
    if not path.is_file():
        raise ResultsError(f"results file {path} does not exist")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ResultsError(f"results file {path} is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
    return path.read_bytes()


def check_suite(results: Results, suite: Suite | None) -> Suite:
    """The suite ``results`` must match (``suite``, or the bundled one it names); raises if name or version
    differ."""
    if suite is None:
        if results.suite_name not in available_suites():
            raise ResultsError(f"results are for suite {results.suite_name!r}, which is not a bundled suite "
                               f"({', '.join(available_suites())})")
        suite = load_suite(results.suite_name)
    if results.suite_name != suite.name:
        raise ResultsError(f"results are for suite {results.suite_name!r}, this board's suite is {suite.name!r}")
    if results.suite_version != suite.version:
        raise ResultsError(f"results are for {suite.name} version {results.suite_version}; "
                           f"the suite is version {suite.version}")
    return suite


def check_entries(results: Results, suite: Suite) -> None:
    """The entries and seeds are exactly the suite's (see the module docstring, checks 3 and 4)."""
    names = [e.name for e in results.entries]
    repeated = sorted(n for n, k in Counter(names).items() if k > 1)
    if repeated:
        raise ResultsError(f"results repeat entries {repeated}")
    wanted = [e.name for e in suite.entries]
    missing, foreign = sorted(set(wanted) - set(names)), sorted(set(names) - set(wanted))
    if missing or foreign:
        raise ResultsError(f"results entries differ from suite {suite.name}'s: missing {missing}, not in the suite "
                           f"{foreign}")
    for recorded in results.entries:
        entry = suite.entry(recorded.name)
        where = f"entry {entry.name}"
        if recorded.env_id != entry.env_id:
            raise ResultsError(f"{where}: env id {recorded.env_id!r}, the suite's is {entry.env_id!r}")
        kwargs = dict(recorded.env_kwargs)
        prompt = kwargs.pop("prompt", None)
        if kwargs != entry.env_kwargs:
            raise ResultsError(f"{where}: env_kwargs {kwargs} differ from the suite's fixed {entry.env_kwargs}")
        if prompt not in entry.prompts:
            raise ResultsError(f"{where}: prompt {prompt!r} is not one of the entry's {list(entry.prompts)}")
        seeds = [ep.seed for ep in recorded.episodes]
        counts = Counter(seeds)
        duplicated = sorted(s for s, k in counts.items() if k > 1)
        missing_seeds = sorted(set(entry.seeds) - set(counts))
        foreign_seeds = sorted(set(counts) - set(entry.seeds))
        if duplicated or missing_seeds or foreign_seeds:
            raise ResultsError(f"{where}: the seeds must be exactly {entry.seeds.start}..{entry.seeds.stop - 1}, "
                               f"one episode each; duplicated {_some(duplicated)}, missing {_some(missing_seeds)}, "
                               f"foreign {_some(foreign_seeds)}")


def _some(values: list[int], k: int = 5) -> str:
    return "[]" if not values else f"{values[:k]}{' ...' if len(values) > k else ''} ({len(values)})"


@dataclass
class EpisodeText:
    """The texts of a replayed episode: the system prompt, each turn's observation, the final observation."""

    system_prompt: str
    observations: list[str]
    final_observation: str


def replay_entry(recorded: EntryResults, *, keep: set[int] | frozenset[int] = frozenset(),
                 bar: Any = None) -> dict[int, EpisodeText]:
    """Replay every episode of ``recorded`` through one ``gym.make(env_id, **env_kwargs)``, reset per episode.

    Raises :class:`ReplayMismatch` naming the entry, seed, turn and field at the first difference. Returns the texts
    of the episodes whose seeds are in ``keep`` (what the board's transcripts and re-generation need).
    """
    import gymnasium as gym

    import agentgym_bench  # noqa: F401 - registers the ids

    env = gym.make(recorded.env_id, **recorded.env_kwargs).unwrapped
    texts: dict[int, EpisodeText] = {}
    try:
        for episode in recorded.episodes:
            where = f"entry {recorded.name}, seed {episode.seed}"
            observation, info = env.reset(seed=episode.seed)
            system_prompt = str(info.get("system_prompt", ""))
            observations = [] if episode.seed in keep else None
            done, total = False, 0.0
            for t, turn in enumerate(episode.turns):
                here = f"{where}, turn {t + 1}"
                if done:
                    raise ReplayMismatch(f"{where}: the episode ends after {t} turns on replay, the file records "
                                         f"{len(episode.turns)}")
                if sha256_text(observation) != turn.observation_sha256:
                    raise ReplayMismatch(f"{here}: the observation differs from the recorded one (hash)")
                if observations is not None:
                    observations.append(observation)
                new_observation, reward, terminated, truncated, step_info = env.step(turn.reply)
                if list(step_info["actions"]) != turn.actions:
                    raise ReplayMismatch(f"{here}: the reply parses to actions {step_info['actions']}, the file "
                                         f"records {turn.actions}")
                if list(step_info["executed_actions"]) != turn.executed_actions:
                    raise ReplayMismatch(f"{here}: executed actions {step_info['executed_actions']}, the file "
                                         f"records {turn.executed_actions}")
                if abs(float(reward) - turn.reward) > REWARD_TOLERANCE:
                    raise ReplayMismatch(f"{here}: reward {float(reward)!r}, the file records {turn.reward!r}")
                total += float(reward)
                observation, info, done = new_observation, step_info, bool(terminated or truncated)
            if not done:
                raise ReplayMismatch(f"{where}: the episode is not over after the {len(episode.turns)} recorded "
                                     "turns")
            if sha256_text(observation) != episode.final_observation_sha256:
                raise ReplayMismatch(f"{where}: the final observation differs from the recorded one (hash)")
            if abs(total - episode.return_) > REWARD_TOLERANCE:
                raise ReplayMismatch(f"{where}: return {total!r}, the file records {episode.return_!r}")
            if bool(info.get("success", False)) != episode.success:
                raise ReplayMismatch(f"{where}: success is {bool(info.get('success', False))} on replay, the file "
                                     f"records {episode.success}")
            if observations is not None:
                texts[episode.seed] = EpisodeText(system_prompt, observations, observation)
            if bar is not None:
                bar.update(1)
    finally:
        env.close()
    return texts


def sample_episodes(results: Results, file_sha256: str, k: int) -> dict[str, list[int]]:
    """Entry name -> the seeds of ``k`` episodes drawn without replacement over the whole file, with
    ``numpy.random.default_rng(first 64 bits of the file's SHA-256)``."""
    import numpy as np

    pairs = [(e.name, ep.seed) for e in results.entries for ep in e.episodes]
    rng = np.random.default_rng(int(file_sha256[:16], 16))
    chosen = sorted(rng.choice(len(pairs), size=min(k, len(pairs)), replace=False).tolist())
    out: dict[str, list[int]] = {e.name: [] for e in results.entries}
    for i in chosen:
        out[pairs[i][0]].append(pairs[i][1])
    return out


def regeneration_blocker(results: Results) -> str | None:
    """Why the file's replies cannot be re-generated here, or ``None`` if they can."""
    from agentgym_bench.rollout.specs import local_model_path, model_sha256

    policy = results.metadata["policy"]
    kind, model = policy["kind"], policy["model"]
    if kind != "hf":
        return f"policy kind {kind}: replies are not re-generated here (only local hf model folders are)"
    if not policy["sampling"]["keyed"]:
        return "sampling was not keyed, so single episodes cannot be re-generated"
    path = local_model_path(model)
    if path is None:
        return f"model {model} is not on this machine"
    recorded = policy["model_sha256"]
    if recorded is None or model_sha256(path) != recorded:
        return f"the weights in {path} do not match the recorded model_sha256"
    return None


def regenerate(results: Results, texts: dict[str, dict[int, EpisodeText]], sample: dict[str, list[int]]) -> str | None:
    """Re-generate every turn of the sampled episodes and compare; ``None`` if all match, else the first difference.

    Each turn is generated from the replayed observations and the recorded earlier replies (the prompt the model
    read, with the recorded history window) under the key the evaluation used, ``(tag hash, seed, member 0,
    turn)``, so all sampled turns go in one batch: a reply depends on its key alone. A prompt longer than the
    model reads gets an empty reply, as in evaluation (``overlong="empty"``).
    """
    from agentgym_bench.rollout.engine import tag_hash
    from agentgym_bench.rollout.hf import HFPolicy
    from agentgym_bench.rollout.specs import local_model_path
    from agentgym_bench.rollout.trajectory import build_messages

    policy_record = results.metadata["policy"]
    sampling = policy_record["sampling"]
    policy = HFPolicy.from_pretrained(local_model_path(policy_record["model"]), temperature=sampling["temperature"],
                                      top_p=sampling["top_p"], max_new_tokens=sampling["max_new_tokens"],
                                      seed=sampling["seed"], max_batch_size=64,
                                      overlong="empty")
    conversations, keys, recorded = [], [], []
    for entry in results.entries:
        by_seed = {ep.seed: ep for ep in entry.episodes}
        for seed in sample.get(entry.name, []):
            episode, text = by_seed[seed], texts[entry.name][seed]
            replies = [t.reply for t in episode.turns]
            for t, turn in enumerate(episode.turns):
                conversations.append(build_messages(text.system_prompt, text.observations[:t], replies[:t],
                                                    text.observations[t], policy_record["history"]))
                keys.append((tag_hash(entry.env_id), seed, 0, t))
                recorded.append((f"entry {entry.name}, seed {seed}, turn {t + 1}", turn))
    generations = policy.generate(conversations, keys=keys)
    for (where, turn), generation in zip(recorded, generations, strict=True):
        if turn.token_ids is not None:
            if generation.token_ids != turn.token_ids:
                return f"{where}: re-generated tokens differ from the recorded token_ids"
        elif generation.text != turn.reply:
            return f"{where}: the re-generated reply differs from the recorded one"
    return None


def verify(source: str | os.PathLike | bytes, suite: Suite | None = None, *,
           sample: int = REGENERATION_SAMPLE, progress: bool = False) -> Verified:
    """Check a results file (a path or its bytes) against ``suite`` (default: the bundled suite it names); see the
    module docstring for the checks. Raises :class:`ResultsError` (a ``UserError``) with the reason."""
    from agentgym_bench.benchmark.evaluate import package_version

    raw = read_source(source)
    digest = hashlib.sha256(raw).hexdigest()
    results = loads(raw)
    suite = check_suite(results, suite)
    check_entries(results, suite)
    blocker = regeneration_blocker(results) if sample > 0 else "re-generation was not asked for"
    chosen = sample_episodes(results, digest, sample) if blocker is None else {}
    recorded_version, ours = results.metadata["package_version"], package_version()
    total = sum(len(e.episodes) for e in results.entries)
    texts: dict[str, dict[int, EpisodeText]] = {}
    with progress_bar(total, "replay", "episode", enabled=progress) as bar:
        for entry in results.entries:
            try:
                texts[entry.name] = replay_entry(entry, keep=set(chosen.get(entry.name, [])), bar=bar)
            except ReplayMismatch as e:
                if recorded_version != ours:
                    raise ReplayMismatch(f"the file was written by agentgym-bench {recorded_version}, this is "
                                         f"{ours}, and the versions differ in behaviour: {e}") from None
                raise
    notes = [] if recorded_version == ours else [
        f"written by agentgym-bench {recorded_version}; replays identically under {ours}"]
    if blocker is not None:
        return Verified(results, suite, raw, digest, REPLAYED, blocker, total, notes)
    difference = regenerate(results, texts, chosen)
    n = sum(len(v) for v in chosen.values())
    if difference is None:
        return Verified(results, suite, raw, digest, REPRODUCED,
                        f"{n} sampled episodes re-generated token for token", total, notes)
    return Verified(results, suite, raw, digest, REPLAYED, f"re-generation of {n} sampled episodes failed: "
                    f"{difference}", total, notes)
