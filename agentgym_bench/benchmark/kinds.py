"""An entry's kind, in one home: what a suite entry plays and everything that follows from it.

A suite holds entries of one kind (:mod:`.suites`): single-agent **episodes** (:data:`~.episodes.EPISODES`, in
:mod:`.episodes`) or two-player **matches** (:data:`~.matches.MATCHES`, in :mod:`.matches`). As PettingZoo puts its
AEC and parallel APIs behind one set of calls, both kinds answer the one protocol :class:`Kind`; :func:`kind_of`
gives the kind of a suite, a suite entry or a recorded entry, and callers (evaluation, the commands, verification,
re-generation, the board) ask it instead of testing which kind they hold. The leaderboard keeps what it decides:
its checks, the mark a file earns, and the page (:mod:`agentgym_bench.leaderboard`).

:func:`suite_policy` builds the policy a spec names for a suite (each kind has its reference policy: ``oracle``,
``scripted``); :func:`policy_turns` lists the turns a results file's policy wrote. Two checks every recorded file
passes, whoever reads it (a kept partial run resuming, a submission, a comparison) are here too: its entries and seeds
are exactly the suite's (:func:`check_entries`) and it replays (:func:`replay_entry`); what passing them earns on a
board is the leaderboard's to say.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from agentgym_bench.benchmark.episodes import EPISODES
from agentgym_bench.benchmark.matches import MATCHES
from agentgym_bench.benchmark.replay import EpisodeText, ModelFree, Move
from agentgym_bench.benchmark.results import EntryResults, EpisodeRecord, Results, ResultsError, TurnRecord
from agentgym_bench.benchmark.suites import Suite, SuiteEntry
from agentgym_bench.rollout.policy import Policy
from agentgym_bench.rollout.trajectory import Turn


class Kind(Protocol):
    """What a kind of suite entry decides: how it is played and recorded, how a recorded entry replays, which
    replies a re-generation reproduces, what the score averages, and what a submission may choose.

    Attributes:
        name: what an entry plays, in messages: ``"episodes"`` or ``"matches"``.
        unit: one reply of the policy, in messages: ``"turn"`` or ``"move"``.
        outcome: what the score averages per episode: ``"success"`` (0/1) or ``"payoff"`` (the policy's).
        outcome_is_return: the outcome is the episode's return (a match's payoff), so no table shows the return
            beside it.
        paired_test: outcomes are binary, so two files on the same seeds are also compared by McNemar's exact test.
        score_text: what the suite score is, in words.
        options: what a submission chooses per entry: each is recorded in the entry's ``env_kwargs`` under its
            name and is an argument of :func:`~.evaluate.evaluate_suite` (``prompt``, ``action_format``; none for
            matches).
    """

    name: str
    unit: str
    outcome: str
    outcome_is_return: bool
    paired_test: bool
    score_text: str
    options: tuple[str, ...]

    def policy(self, spec: str, suite: Suite, sampling: Any, **kwargs: Any) -> tuple[Policy, dict[str, Any]]:
        """The policy ``spec`` names on a suite of this kind and its ``metadata.policy`` record
        (:func:`~agentgym_bench.rollout.specs.policy_from_spec`); a ``UserError`` for one the kind has not."""

    def prompts(self, suite: Suite, prompt: str | Mapping[str, str] | None) -> dict[str, str]:
        """The prompt template of every entry (``prompt``: one for all, per entry name, or ``None``: each entry's
        default); ``{}`` where the game writes its own text."""

    def check_options(self, suite: Suite, prompt: str | Mapping[str, str] | None,
                      action_format: str | Mapping[str, str] | None, action_format_name: str = "action format"
                      ) -> None:
        """Refuse, with a ``UserError``, a prompt or action format the kind does not offer (``action_format_name``:
        how the message calls the action format, e.g. the command's flag)."""

    def play(self, policy: Policy, suite: Suite, *, prompt: str | Mapping[str, str] | None = None,
             history: int | None = 0, progress: bool = False, max_workers: int = 0,
             action_format: str | Mapping[str, str] | None = None) -> tuple[list[EntryResults], list[Turn]]:
        """Play every entry of ``suite`` with ``policy``: the entries' records (in the suite's order) and every turn
        played (what the evaluation's compute counts)."""

    def check_recorded(self, where: str, recorded: EntryResults, entry: SuiteEntry, prompt: str | None,
                       action_format: str | None) -> None:
        """The kind's part of checks 3 and 4 of :func:`~agentgym_bench.leaderboard.verify.verify`: the recorded
        entry's choices (its ``env_kwargs``' ``prompt`` and ``action_format``) and records fit ``entry``; else a
        ``ResultsError`` naming ``where``."""

    def replay(self, recorded: EntryResults, *, keep: set[int] | frozenset[int] = frozenset(), bar: Any = None,
               model_free: ModelFree | None = None) -> dict[int, EpisodeText]:
        """Replay every episode of ``recorded`` through fresh envs (with ``model_free``, re-generating the policy's
        replies too); a :class:`~.replay.ReplayMismatch` at the first difference; the texts of the seeds in
        ``keep``. ``bar``: a progress bar, advanced by one per episode."""

    def wrote(self, entry: EntryResults, episode: EpisodeRecord, turn: TurnRecord) -> bool:
        """Whether the evaluated policy wrote ``turn`` of a recorded episode (not the opponent)."""

    def calls(self, entries: Sequence[EntryResults], texts: Mapping[str, Mapping[int, EpisodeText]],
              history: int | None) -> list[list[Move]]:
        """The model's ``generate`` calls that :meth:`play` made on ``entries`` (each call's replies of the
        evaluated policy, in order), rebuilt from the recorded replies and the replayed ``texts`` (entry name ->
        seed -> texts) with the ``history`` window: what a re-generation must reproduce."""

    def outcomes(self, entry: EntryResults) -> np.ndarray:
        """``(n,)`` what the score averages per episode of a recorded entry, in the recorded order."""

    def interval(self, outcomes: np.ndarray) -> tuple[float, float, float]:
        """The mean of ``outcomes`` with its 95% interval: Wilson for success, normal for payoffs."""

    def details(self, entry: EntryResults) -> Any:
        """What the tables add for a recorded entry of this kind (a match's draw, loss and deal rates:
        :class:`~.matches.MatchSummary`), or ``None``."""

    def summary_lines(self, entries: Sequence[Any]) -> list[str]:
        """The ``eval`` table of the entry summaries (:class:`~.scores.EntrySummary`): a header and a row each."""


def kind_of(x: Suite | SuiteEntry | EntryResults) -> Kind:
    """The kind of a suite, of one of its entries, or of a recorded entry: matches where the entry names an
    opponent, else episodes."""
    matches = x.multiagent if isinstance(x, Suite) else x.opponent is not None
    return MATCHES if matches else EPISODES


def suite_policy(spec: str, suite: Suite, sampling: Any, **kwargs: Any) -> tuple[Policy, dict[str, Any]]:
    """The policy named by ``spec`` for ``suite`` and its ``metadata.policy`` record (:meth:`Kind.policy`): on a
    multi-agent suite ``random`` and ``scripted`` are Bargain's policies (``scripted`` exists only there, ``oracle``
    only on single-agent suites)."""
    return kind_of(suite).policy(spec, suite, sampling, **kwargs)


def policy_turns(results: Results) -> Iterator[tuple[str, TurnRecord]]:
    """``(where, turn)`` of every turn the evaluated policy wrote (:meth:`Kind.wrote`): every turn of a single-agent
    episode; of a match, the moves of the policy's seat (both seats' in self-play). ``where`` names the entry, seed
    and turn or move."""
    for entry in results.entries:
        kind = kind_of(entry)
        for episode in entry.episodes:
            for t, turn in enumerate(episode.turns):
                if kind.wrote(entry, episode, turn):
                    yield f"entry {entry.name}, seed {episode.seed}, {kind.unit} {t + 1}", turn


def check_entries(results: Results, suite: Suite) -> None:
    """Raise a :class:`~.results.ResultsError` naming the first difference unless the entries and seeds of
    ``results`` are exactly the suite's (checks 3 and 4 of :func:`agentgym_bench.leaderboard.verify.verify`): each
    entry once, with the entry's env id, opponent, fixed ``env_kwargs`` and what its kind checks of a recording
    (:meth:`Kind.check_recorded`), and exactly the entry's seeds, one episode each."""
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
        if _as_written(kwargs) != _as_written(entry.env_kwargs):  # 5.0 is not 5, nor 1 true: the env takes types
            raise ResultsError(f"{where}: env_kwargs {_as_written(kwargs)} differ from the suite's fixed "
                               f"{_as_written(entry.env_kwargs)}")
        kind_of(entry).check_recorded(where, recorded, entry, prompt, action_format)
        seeds = [ep.seed for ep in recorded.episodes]
        counts = Counter(seeds)
        duplicated = sorted(s for s, k in counts.items() if k > 1)
        missing_seeds = sorted(set(entry.seeds) - set(counts))
        foreign_seeds = sorted(set(counts) - set(entry.seeds))
        if duplicated or missing_seeds or foreign_seeds:
            raise ResultsError(f"{where}: the seeds must be exactly {entry.seeds.start}..{entry.seeds.stop - 1}, "
                               f"one episode each; duplicated {_some(duplicated)}, missing {_some(missing_seeds)}, "
                               f"foreign {_some(foreign_seeds)}")


def _as_written(kwargs: Mapping[str, Any]) -> str:
    """``kwargs`` as JSON writes them, keys sorted: equal only if equal in value and in type."""
    return json.dumps(kwargs, sort_keys=True, ensure_ascii=False)


def _some(values: list[int], k: int = 5) -> str:
    return "[]" if not values else f"{values[:k]}{' ...' if len(values) > k else ''} ({len(values)})"


def replay_entry(recorded: EntryResults, *, keep: set[int] | frozenset[int] = frozenset(),
                 bar: Any = None, model_free: ModelFree | None = None) -> dict[int, EpisodeText]:
    """Replay every episode of ``recorded`` (check 5 of :func:`agentgym_bench.leaderboard.verify.verify`; with
    ``model_free``, check 6 too) as its kind replays it (:meth:`Kind.replay`: an episode entry through one fresh
    ``gym.make(env_id, **env_kwargs)`` reset per episode, :func:`~agentgym_bench.benchmark.episodes.replay_episodes`;
    a match entry through a fresh env per match, :func:`~agentgym_bench.benchmark.matches.replay_matches`).

    Raises :class:`~agentgym_bench.benchmark.replay.ReplayMismatch` naming the entry, seed, turn (or move) and field
    at the first difference, :class:`~agentgym_bench.benchmark.replay.RegenerationMismatch` at the first reply the
    model-free policy does not give. Returns the texts of the episodes whose seeds are in ``keep`` (what the board's
    transcripts and re-generation need).
    """
    return kind_of(recorded).replay(recorded, keep=keep, bar=bar, model_free=model_free)
