"""Verify a results file before it goes on a board: the checks, replay of every episode, and :func:`verify`.

:func:`verify` runs, in this order, each failing with a :class:`~agentgym_bench.benchmark.results.ResultsError`
that names what is wrong:

1. size limits, JSON Schema, no NaN or infinite numbers (:func:`agentgym_bench.benchmark.results.loads`);
2. the suite: name and version equal to the suite given (by default the bundled suite the file names);
3. the entries: exactly the suite's names, each with the entry's env id, ``env_kwargs`` equal to the entry's fixed
   ones plus a ``prompt`` among the entry's ``prompts`` and, optionally, an ``action_format`` among
   :data:`~agentgym_bench.agent.tools.ACTION_FORMATS` (``"tool"``: ``eval --action-format tool``; absent means
   ``"answer"``). Like the prompt it is the submission's choice on every single-agent entry: the episodes, budgets
   and penalties are the same in either format (a match entry has neither);
4. the seeds: exactly the entry's seeds, no missing, foreign or duplicated seed (a quick check of a part of the
   suite, ``eval --episodes`` / ``--entries``, says so in ``metadata.quick_check`` and is refused first); and what
   the file claims of its replies (:func:`check_reply_claims`): a model-free policy's turns record no
   ``token_ids``, and a reply's ``token_ids`` are at most the file's own ``max_new_tokens``;
5. **replay** (:func:`replay_entry`): every episode's raw replies are fed, in order, to one fresh
   ``gym.make(env_id, **env_kwargs)`` per entry, reset with the episode's seed. Each turn's observation hash, parsed
   and executed actions and reward (within :data:`REWARD_TOLERANCE`), the number of turns, the final observation
   hash, the return and the success must equal the recorded ones. A file written by another package version is
   accepted only if it replays (the envs' behaviour is what counts); if it does not, the message says the versions
   differ;
6. **re-generation of model-free policies** (:data:`MODEL_FREE`: ``oracle``, ``random``, ``scripted``): the policy
   the file names is rebuilt with its recorded seed (:func:`model_free_policy`, the same construction as ``eval``)
   and, during replay, asked for every turn of every episode from the replayed env, under the key evaluation used
   (keyed sampling). Once an episode has replayed (its replay checks come first), each of its replies must be
   string-identical to the re-generated one (these policies record no tokens); the first that is not rejects the
   file, naming the entry, seed and turn. It costs what evaluating the policy costs (the full agentgym-v1 oracle
   file: 7.5-10 s on one core, against about 1 s for replay alone);
7. **re-generation of a local model** (:mod:`agentgym_bench.leaderboard.regenerate`, which has the details), for
   ``hf`` policies where it can run here: the model folder is found (:func:`~agentgym_bench.rollout.specs.
   locate_model`: a relative path under the repository root ``root``; on a published board, inside its ``models/``
   folder) with the recorded weights hash, sampling was keyed, and every reply of the model records its
   ``token_ids`` (:func:`~agentgym_bench.leaderboard.regenerate.regeneration_blocker`). Then every reply must be the
   decoding of its tokens under the model's tokenizer (:func:`check_decoding`; else the file is **rejected**, naming
   the turn), so the text replay plays and the tokens re-generation compares are one reply. Every reply of the file
   is then re-generated from the replayed observations in the evaluation's batches and compared in text and tokens,
   stopping at the first call that differs (:func:`~agentgym_bench.leaderboard.regenerate.regenerate_all`). It is
   capped at ``regeneration_cap`` FLOPs (:data:`~agentgym_bench.leaderboard.regenerate.REGENERATION_CAP`): not
   attempted when the suite's first prompts alone cost more (:func:`~agentgym_bench.leaderboard.regenerate.
   regeneration_cost_blocker`), and stopped when its metered work passes the cap; the file then stays *replayed*,
   the board saying why.

A file that passes 1-5 is *replayed*; one that also passes 6 or 7 is *reproduced*. A failed check 6 rejects the file:
a model-free policy has no hardware-dependent logits, so a difference means the replies are not that policy's. A
re-generation in check 7 that differs does not reject the file (other hardware can change the last bit of a logit, and
with it a sampled token), it keeps the mark *replayed* and the reason is shown on the board; a reply whose text is
not its tokens' decoding is rejected (decoding has no hardware to blame). Re-generation is what catches a file whose
replies came from another policy or model than the one its metadata names.

Match entries (multi-agent suites) are checked the same way, with what a match adds (:func:`replay_matches`): check
3 also requires the entry's opponent and check 4 the suite's seat for each seed (``player_{i % 2}`` in match ``i``,
so both seats are played equally); replay feeds both seats' recorded replies, in the recorded order, through a fresh
env per match, except that a fixed opponent's (``random``, ``scripted``) replies are re-generated by the suite's
opponent and must equal the recorded ones, so a file cannot pair its policy with a weaker opponent than the suite's;
the payoffs, outcome, deal, win and the learner's payoff must equal the recorded ones. Check 6 plays the recorded
model-free policy in the learner's seat (both seats in self-play); check 7 covers a model's moves (both seats' in
self-play).

Submission names (:func:`check_name`) are 1-64 characters of ``[A-Za-z0-9 ._+-]``: no path separators, no markup.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym_bench.agent.tools import ACTION_FORMATS
from agentgym_bench.benchmark.results import EntryResults, Results, ResultsError, loads, sha256_text
from agentgym_bench.benchmark.suites import Suite, available_suites, load_suite, quick_text
from agentgym_bench.leaderboard.regenerate import (
    REGENERATION_CAP,
    published_models,
    regenerate_all,
    regeneration_blocker,
    regeneration_cost_blocker,
)
from agentgym_bench.leaderboard.replies import EpisodeText, policy_turns, policy_wrote, same_reply
from agentgym_bench.progress import progress as progress_bar

REWARD_TOLERANCE = 1e-9
NAME_PATTERN = re.compile(r"[A-Za-z0-9 ._+-]{1,64}")
REPLAYED, REPRODUCED = "replayed", "reproduced"
MODEL_FREE = ("oracle", "random", "scripted")
"""Policy kinds that need no model: cheap to re-run, so every reply of their files is re-generated (check 6)."""


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


class RegenerationMismatch(ReplayMismatch):
    """A recorded reply that the model-free policy the file names does not give (check 6)."""


def check_reply_claims(results: Results) -> None:
    """What a file may claim of its policy's replies (check 4b): a model-free policy writes text, so its turns record
    no ``token_ids``; a reply's ``token_ids`` are at most the file's own ``sampling.max_new_tokens``. A
    :class:`ResultsError` names the first turn that breaks either."""
    policy = results.metadata["policy"]
    kind, budget = policy["kind"], policy["sampling"]["max_new_tokens"]
    for where, turn in policy_turns(results):
        if turn.token_ids is None:
            continue
        if kind in MODEL_FREE:
            raise ResultsError(f"{where}: the {kind} policy writes text, not tokens, and the file records token_ids")
        if len(turn.token_ids) > budget:
            raise ResultsError(f"{where}: the reply has {len(turn.token_ids)} token ids, more than the file's own "
                               f"max_new_tokens={budget} allows")


def check_decoding(results: Results, tokenizer: Any, stop_ids: Sequence[int]) -> None:
    """Every reply of the file's model is the decoding of its ``token_ids`` (ids of the model's vocabulary) under
    the model's tokenizer
    (:func:`~agentgym_bench.rollout.hf.decode_reply`, how evaluation wrote it); else a :class:`ResultsError` naming
    the first turn whose text and tokens disagree. Replay plays the text and re-generation compares the tokens, so
    this is what makes both checks speak of one reply."""
    from agentgym_bench.rollout.hf import decode_reply

    stops, vocabulary = set(stop_ids), len(tokenizer)
    for where, turn in policy_turns(results):
        foreign = next((i for i in turn.token_ids or [] if i >= vocabulary), None)
        if foreign is not None:
            raise ResultsError(f"{where}: token id {foreign} is not in the model's vocabulary of {vocabulary:,}")
        decoded = decode_reply(tokenizer, stops, turn.token_ids or [])
        if decoded != turn.reply:
            raise ResultsError(f"{where}: the reply text is not the decoding of its token_ids under the model's "
                               f"tokenizer (the text {turn.reply[:80]!r}, the tokens {decoded[:80]!r}); a reply's "
                               "text and tokens must agree")


@dataclass(frozen=True)
class ModelFree:
    """A model-free policy rebuilt from a file's ``metadata.policy``, to re-generate every reply during replay.

    Attributes:
        policy: the policy, as ``eval`` builds it.
        keyed: pass the evaluation's sampling keys (the recorded ``sampling.keyed``).
        history: the recorded history window (the conversations it is shown).
        name: how messages call it, e.g. ``"the random policy (seed 0)"``.
    """

    policy: Any
    keyed: bool
    history: int | None
    name: str


def model_free_policy(results: Results, suite: Suite) -> ModelFree | None:
    """The model-free policy ``results`` names (``None`` for a model), built by
    :func:`~agentgym_bench.benchmark.matches.suite_policy` with the recorded sampling settings and seed; a
    :class:`ResultsError` naming ``metadata.policy.kind`` if the suite has no such policy (``oracle`` on a
    two-player suite, ``scripted`` on a single-agent one)."""
    from agentgym_bench.benchmark.matches import suite_policy
    from agentgym_bench.errors import UserError
    from agentgym_bench.rollout.specs import sampling_of

    record = results.metadata["policy"]
    kind, s = record["kind"], record["sampling"]
    if kind not in MODEL_FREE:
        return None
    try:
        policy, _ = suite_policy(kind, suite, sampling_of(record))
    except UserError as e:
        raise ResultsError(f"metadata.policy.kind {kind!r} cannot be re-generated on suite {suite.name}: "
                           f"{e}") from None
    name = f"the {kind} policy" + (f" (seed {s['seed']})" if kind == "random" else "")
    return ModelFree(policy, bool(s["keyed"]), record["history"], name)


def _check_replies(where: str, model_free: ModelFree, regenerated: dict[int, str], turns: list[Any],
                   unit: str = "turn") -> None:
    """Compare the replies a model-free policy re-generated (turn index -> text) with the recorded ones (check 6);
    :class:`RegenerationMismatch` naming the first that differs."""
    for t in sorted(regenerated):
        reply = regenerated[t]
        if not same_reply(reply, None, turns[t].reply, turns[t].token_ids):
            raise RegenerationMismatch(f"{where}, {unit} {t + 1}: {model_free.name} replies {reply[:200]!r}, the file "
                                       f"records {turns[t].reply[:200]!r}")


def read_source(source: str | os.PathLike | bytes) -> bytes:
    """The bytes of a results file given as bytes or a path: a regular file, never a symbolic link (its target
    could be any file, another entry's among them), at most :data:`~agentgym_bench.benchmark.results.
    MAX_FILE_BYTES` (checked before reading, and while reading)."""
    import stat

    from agentgym_bench.benchmark.results import MAX_FILE_BYTES

    if isinstance(source, bytes):
        return source
    path = Path(source)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ResultsError(f"results file {path} does not exist") from None
    except OSError as e:
        if path.is_symlink():
            raise ResultsError(f"results file {path} is a symbolic link; give the file itself") from None
        raise ResultsError(f"results file {path} cannot be read: {e.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ResultsError(f"results file {path} is not a regular file")
    with os.fdopen(fd, "rb") as f:
        if info.st_size > MAX_FILE_BYTES:
            raise ResultsError(f"results file {path} is {info.st_size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
        raw = f.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise ResultsError(f"results file {path} is more than {MAX_FILE_BYTES:,} bytes")
    return raw


def check_submittable(results: Results) -> None:
    """Refuse a quick check (``eval --episodes`` / ``--entries``: ``metadata.quick_check``), a part of the suite."""
    quick = results.metadata.get("quick_check")
    if quick is not None:
        raise ResultsError(f"results file is a quick check ({quick_text(quick)}), not for a board: evaluate the whole "
                           "suite (eval without --episodes and --entries) to submit")


def check_suite(results: Results, suite: Suite | None) -> Suite:
    """The suite ``results`` must match (``suite``, or the bundled one it names); raises if name or version
    differ."""
    if suite is None:
        if results.suite_name not in available_suites():
            raise ResultsError(f"results are for suite {results.suite_name!r}, which is not a bundled suite "
                               f"({', '.join(available_suites())})")
        suite = load_suite(results.suite_name)
    if results.suite_name != suite.name:
        raise ResultsError(f"results are for suite {results.suite_name!r}, not the suite {suite.name!r} they are "
                           "checked against")
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
        if recorded.opponent != entry.opponent:
            raise ResultsError(f"{where}: opponent {recorded.opponent!r}, the suite's is {entry.opponent!r}")
        kwargs = dict(recorded.env_kwargs)
        prompt = kwargs.pop("prompt", None)
        action_format = kwargs.pop("action_format", None)
        if kwargs != entry.env_kwargs:
            raise ResultsError(f"{where}: env_kwargs {kwargs} differ from the suite's fixed {entry.env_kwargs}")
        if entry.opponent is None and prompt not in entry.prompts:
            raise ResultsError(f"{where}: prompt {prompt!r} is not one of the entry's {list(entry.prompts)}")
        if entry.opponent is not None and prompt is not None:
            raise ResultsError(f"{where}: a match entry has no prompt (env_kwargs has {prompt!r})")
        if entry.opponent is None and action_format is not None and action_format not in ACTION_FORMATS:
            raise ResultsError(f"{where}: action_format {action_format!r} is not one of {list(ACTION_FORMATS)}")
        if entry.opponent is not None and action_format is not None:
            raise ResultsError(f"{where}: a match entry has no action format (env_kwargs has {action_format!r})")
        for ep in recorded.episodes if entry.opponent is not None else []:
            if ep.match is None or ep.match.opponent != entry.opponent:
                raise ResultsError(f"{where}, seed {ep.seed}: the match record must name opponent {entry.opponent!r}")
            if ep.seed in entry.seeds and ep.match.learner != entry.learner_seat(ep.seed):
                raise ResultsError(f"{where}, seed {ep.seed}: the policy must play {entry.learner_seat(ep.seed)} "
                                   f"(seats alternate by seed), the file has {ep.match.learner}")
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


def replay_entry(recorded: EntryResults, *, keep: set[int] | frozenset[int] = frozenset(),
                 bar: Any = None, model_free: ModelFree | None = None) -> dict[int, EpisodeText]:
    """Replay every episode of ``recorded`` through one ``gym.make(env_id, **env_kwargs)``, reset per episode.

    Raises :class:`ReplayMismatch` naming the entry, seed, turn and field at the first difference. With
    ``model_free``, that policy also re-generates each turn's reply from the replayed env before the recorded reply
    is stepped, under the key the evaluation used (``(tag hash, seed, member 0, turn)``); once an episode has
    replayed, its re-generated replies must equal the recorded ones (:class:`RegenerationMismatch` at the first that
    does not). Returns the texts of the episodes whose seeds are in ``keep`` (what the board's transcripts and
    re-generation need).
    """
    import gymnasium as gym

    import agentgym_bench  # noqa: F401 - registers the ids
    from agentgym_bench.rollout.engine import tag_hash
    from agentgym_bench.rollout.trajectory import build_messages

    if recorded.opponent is not None:
        return replay_matches(recorded, keep=keep, bar=bar, model_free=model_free)
    env = gym.make(recorded.env_id, **recorded.env_kwargs).unwrapped
    tag = tag_hash(recorded.env_id)
    texts: dict[int, EpisodeText] = {}
    try:
        for episode in recorded.episodes:
            where = f"entry {recorded.name}, seed {episode.seed}"
            observation, info = env.reset(seed=episode.seed)
            system_prompt = str(info.get("system_prompt", ""))
            tools = info.get("tools") or []
            observations: list[str] = []
            regenerated: dict[int, str] = {}
            done, total = False, 0.0
            for t, turn in enumerate(episode.turns):
                here = f"{where}, turn {t + 1}"
                if done:
                    raise ReplayMismatch(f"{where}: the episode ends after {t} turns on replay, the file records "
                                         f"{len(episode.turns)}")
                if sha256_text(observation) != turn.observation_sha256:
                    raise ReplayMismatch(f"{here}: the observation differs from the recorded one (hash)")
                if model_free is not None:
                    conversation = build_messages(system_prompt, observations, [u.reply for u in episode.turns[:t]],
                                                  observation, model_free.history)
                    key = [(tag, episode.seed, 0, t)] if model_free.keyed else None
                    regenerated[t] = model_free.policy.generate([conversation], [env], keys=key)[0].text
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
            if model_free is not None:
                _check_replies(where, model_free, regenerated, episode.turns)
            if episode.seed in keep:
                texts[episode.seed] = EpisodeText(system_prompt, observations, observation, list(tools))
            if bar is not None:
                bar.update(1)
    finally:
        env.close()
    return texts


class _RecordedReplies:
    """A policy that plays a file's recorded replies, looked up by the sampling key ``(tag, seed, seat, seat turn)``
    (a move the file does not record gets :data:`_NOT_RECORDED`). With ``model_free`` it also asks that policy for
    each move it plays, under the same key, and keeps the reply in :attr:`regenerated` (check 6)."""

    def __init__(self, recorded: EntryResults, learner_only: bool, model_free: ModelFree | None = None):
        from agentgym_bench.benchmark.matches import seat_index

        self.model_free = model_free
        self.regenerated: dict[tuple[int, int, int], str] = {}
        self.replies: dict[tuple[int, int, int], str] = {}
        for ep in recorded.episodes:
            moves: Counter[str] = Counter()
            for turn in ep.turns:
                agent = str(turn.agent)
                if not learner_only or ep.match is None or agent == ep.match.learner:
                    self.replies[(ep.seed, seat_index(agent), moves[agent])] = turn.reply
                moves[agent] += 1

    def generate(self, conversations: Any, envs: Any = None, keys: Any = None) -> list[Any]:
        from agentgym_bench.rollout.policy import Generation

        if self.model_free is not None:
            again = self.model_free.policy.generate(conversations, envs, keys=keys if self.model_free.keyed else None)
            self.regenerated.update({(k[1], k[2], k[3]): g.text for k, g in zip(keys, again, strict=True)})
        return [Generation(self.replies.get((k[1], k[2], k[3]), _NOT_RECORDED)) for k in keys]


_NOT_RECORDED = "<answer>(no recorded reply)</answer>"


def replay_matches(recorded: EntryResults, *, keep: set[int] | frozenset[int] = frozenset(),
                   bar: Any = None, model_free: ModelFree | None = None) -> dict[int, EpisodeText]:
    """Replay every match of a match entry (see the module docstring); raises :class:`ReplayMismatch` naming the seed,
    move and field at the first difference. With ``model_free`` that policy also re-generates every move of the
    learner's seat (both seats in self-play) from the replayed game, under the key the evaluation used; once a match
    has replayed, those replies must equal the recorded ones (:class:`RegenerationMismatch` at the first that does
    not). Texts of the matches in ``keep``: the observations in play order and the learner's final observation."""
    from agentgym_bench.benchmark.matches import match_key_tag, turns_in_order
    from agentgym_bench.benchmark.suites import OPPONENTS, SuiteEntry
    from agentgym_bench.multiagent.selfplay import play_matches

    opponent = str(recorded.opponent)
    if opponent not in OPPONENTS:
        raise ReplayMismatch(f"entry {recorded.name}: unknown opponent {opponent!r}")
    learner = _RecordedReplies(recorded, learner_only=opponent != "self", model_free=model_free)
    if opponent == "self":
        other = learner
    else:
        from agentgym_bench.benchmark.matches import opponent_policy

        other = opponent_policy(SuiteEntry(recorded.name, recorded.env_id, {}, (), 1, None, 0, opponent), learner)
    episodes = recorded.episodes
    results = play_matches(recorded.env_id, [ep.seed for ep in episodes], learner, other,
                           env_kwargs=recorded.env_kwargs,
                           learner_seats=[ep.match.learner if ep.match else "player_0" for ep in episodes],
                           history=model_free.history if model_free is not None else None,
                           key_tag=match_key_tag(recorded.env_id, opponent))
    texts = {}
    for episode, result in zip(episodes, results, strict=True):
        where = f"entry {recorded.name}, seed {episode.seed}"
        _compare_match(where, episode, result, opponent)
        if model_free is not None:
            _check_replies(where, model_free, _learner_moves(episode, opponent, learner.regenerated), episode.turns,
                           "move")
        if episode.seed in keep:
            texts[episode.seed] = EpisodeText("", [turn.observation for _, turn in turns_in_order(result)],
                                              result.learner_trajectory.final_observation)
        if bar is not None:
            bar.update(1)
    return texts


def _learner_moves(episode: Any, opponent: str, regenerated: dict[tuple[int, int, int], str]) -> dict[int, str]:
    """Move index -> the re-generated reply of each move the evaluated policy made in a recorded match (both seats'
    in self-play)."""
    from agentgym_bench.benchmark.matches import seat_index

    out, moves = {}, Counter()
    for t, turn in enumerate(episode.turns):
        agent = str(turn.agent)
        if policy_wrote(opponent, episode, turn):
            out[t] = regenerated.get((episode.seed, seat_index(agent), moves[agent]), _NOT_RECORDED)
        moves[agent] += 1
    return out


def _compare_match(where: str, episode: Any, result: Any, opponent: str) -> None:
    """Raise :class:`ReplayMismatch` at the first difference between a recorded match and its replay."""
    from agentgym_bench.benchmark.matches import turns_in_order

    played = list(enumerate(turns_in_order(result)))
    for t, (agent, turn) in played[:len(episode.turns)]:  # moves first, then their number, then rewards
        here, rec = f"{where}, move {t + 1}", episode.turns[t]
        if rec.agent != agent:
            raise ReplayMismatch(f"{here}: {agent} moves on replay, the file records {rec.agent}")
        if sha256_text(turn.observation) != rec.observation_sha256:
            raise ReplayMismatch(f"{here}: the observation of {agent} differs from the recorded one (hash)")
        if turn.reply != rec.reply:
            raise ReplayMismatch(f"{here}: the suite's {opponent} opponent replies {turn.reply!r}, the file records "
                                 f"{rec.reply[:200]!r}")
        if list(turn.actions) != rec.actions or list(turn.executed_actions) != rec.executed_actions:
            raise ReplayMismatch(f"{here}: the reply parses to actions {turn.actions} (executed "
                                 f"{turn.executed_actions}), the file records {rec.actions} ({rec.executed_actions})")
    if len(played) > len(episode.turns):
        raise ReplayMismatch(f"{where}: the match goes on after the {len(episode.turns)} recorded moves on replay")
    if len(played) < len(episode.turns):
        raise ReplayMismatch(f"{where}: the match ends after {len(played)} moves on replay, the file records "
                             f"{len(episode.turns)}")
    for t, (_, turn) in played:
        if abs(float(turn.reward) - episode.turns[t].reward) > REWARD_TOLERANCE:
            raise ReplayMismatch(f"{where}, move {t + 1}: reward {float(turn.reward)!r}, the file records "
                                 f"{episode.turns[t].reward!r}")
    match = episode.match
    payoffs = {a: float(r) for a, r in result.rewards.items()}
    if payoffs.keys() != match.payoffs.keys() or any(abs(payoffs[a] - match.payoffs[a]) > REWARD_TOLERANCE
                                                     for a in payoffs):
        raise ReplayMismatch(f"{where}: payoffs are {payoffs} on replay, the file records {match.payoffs}")
    deal = result.final_infos.get(result.learner, {}).get("deal")
    for name, value, recorded in (("outcome", result.outcome, match.outcome),
                                  ("deal", None if deal is None else bool(deal), match.deal),
                                  ("success", result.outcome == "win", episode.success)):
        if value != recorded:
            raise ReplayMismatch(f"{where}: {name} is {value!r} on replay, the file records {recorded!r}")
    if abs(payoffs[result.learner] - episode.return_) > REWARD_TOLERANCE:
        raise ReplayMismatch(f"{where}: return {payoffs[result.learner]!r} (the policy's payoff) on replay, the file "
                             f"records {episode.return_!r}")
    if sha256_text(result.learner_trajectory.final_observation) != episode.final_observation_sha256:
        raise ReplayMismatch(f"{where}: the final observation differs from the recorded one (hash)")



def verify(source: str | os.PathLike | bytes, suite: Suite | None = None, *,
           regenerate: bool = True, progress: bool = False, root: str | os.PathLike | None = None,
           board: str | os.PathLike | Callable[[Suite], Path] | None = None,
           regeneration_cap: float = REGENERATION_CAP) -> Verified:
    """Check a results file (a path or its bytes) against ``suite`` (default: the bundled suite it names); see the
    module docstring for the checks. Raises :class:`ResultsError` (a ``UserError``) with the reason.

    Args:
        regenerate: re-generate every reply of a local hf model (check 7; ``False``: it stays *replayed*).
            Model-free policies are always re-generated in full (check 6).
        root: the repository root a relative model path resolves against (default: the current directory).
        board: the board the file is for (or a function of the suite giving it): on a published board
            (:func:`~agentgym_bench.paths.published_board`) models are looked for in its ``models/`` folder
            only (:func:`~agentgym_bench.leaderboard.regenerate.model_folder`); ``None``: no board, as a private one.
        regeneration_cap: most estimated FLOPs check 7 may take (:data:`~agentgym_bench.leaderboard.regenerate.
            REGENERATION_CAP`, :func:`~agentgym_bench.leaderboard.regenerate.regeneration_cost_blocker`); a file
            above it stays *replayed*, saying so.
    """
    from agentgym_bench.benchmark.evaluate import package_version
    from agentgym_bench.rollout.hf import load_tokenizer

    raw = read_source(source)
    digest = hashlib.sha256(raw).hexdigest()
    results = loads(raw)
    check_submittable(results)
    suite = check_suite(results, suite)
    check_entries(results, suite)
    check_reply_claims(results)
    model_free = model_free_policy(results, suite)
    models = published_models(board(suite) if callable(board) else board)
    folder, blocker = None, None
    if model_free is None:
        folder, blocker = (regeneration_blocker(results, root, models) if regenerate
                           else (None, "re-generation was not asked for"))
    keep_texts = blocker is None and model_free is None
    recorded_version, ours = results.metadata["package_version"], package_version()
    total = sum(len(e.episodes) for e in results.entries)
    texts: dict[str, dict[int, EpisodeText]] = {}
    what = "replay" if model_free is None else "replay and re-generation"
    with progress_bar(total, what, "episode", enabled=progress) as bar:
        for entry in results.entries:
            try:
                keep = {ep.seed for ep in entry.episodes} if keep_texts else set()
                texts[entry.name] = replay_entry(entry, keep=keep, bar=bar, model_free=model_free)
            except ReplayMismatch as e:
                if recorded_version != ours:
                    raise type(e)(f"the file was written by agentgym-bench {recorded_version}, this is {ours}, and "
                                  f"the versions differ in behaviour: {e}") from None
                raise
    notes = [] if recorded_version == ours else [
        f"written by agentgym-bench {recorded_version}; replays identically under {ours}"]
    if model_free is not None:
        return Verified(results, suite, raw, digest, REPRODUCED,
                        f"all {total} episodes re-generated by {model_free.name}: every reply identical", total, notes)
    if blocker is not None:
        return Verified(results, suite, raw, digest, REPLAYED, blocker, total, notes)
    assert folder is not None
    tokenizer, stop_ids = load_tokenizer(folder)
    check_decoding(results, tokenizer, stop_ids)
    too_costly = regeneration_cost_blocker(results, suite, texts, folder, tokenizer, regeneration_cap)
    if too_costly is not None:
        return Verified(results, suite, raw, digest, REPLAYED, too_costly, total, notes)
    difference = regenerate_all(results, suite, texts, folder, progress, regeneration_cap)
    if difference is None:
        return Verified(results, suite, raw, digest, REPRODUCED,
                        f"all {total} episodes re-generated token for token in the evaluation's batches", total, notes)
    return Verified(results, suite, raw, digest, REPLAYED, difference, total, notes)
