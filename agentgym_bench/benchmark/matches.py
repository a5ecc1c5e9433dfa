"""Match entries of multi-agent suites: who plays, how a match is keyed, and match records from played matches.

A match entry (:mod:`agentgym_bench.benchmark.suites`) plays ``episodes`` matches of a two-player env with
:func:`~agentgym_bench.multiagent.selfplay.play_matches`: match ``i`` on seed ``seed_start + i``, the evaluated
policy (the *learner*) on ``player_{i % 2}``, the entry's opponent on the other seat. The opponents ``random``
(uniformly random demands drawn with :data:`OPPONENT_SEED`) and ``scripted`` (the scripted bargainer) are fixed by
the suite: whoever is evaluated, the same game state and key give the same opponent reply, so verification can
re-generate every opponent move; ``self`` is the evaluated policy on both seats.

Keyed sampling: every move's randomness comes from ``(match_key_tag(entry), seed, seat index, the seat's turn)``
(the ``key_tag`` of ``play_matches``), so a match re-generates by itself, as single-agent episodes do.

Policies (:func:`suite_policy`): ``hf:``, ``openai:`` and ``vllm:`` models as on the single-agent suites;
``random`` and ``scripted`` are Bargain's model-free policies; there is no ``oracle`` for a general-sum game (the
best reply depends on the opponent), so ``scripted``, the strong scripted bargainer, is its reference instead.
"""

from __future__ import annotations

from typing import Any

from agentgym_bench.benchmark.results import EntryResults, EpisodeRecord, MatchRecord, TurnRecord, sha256_text
from agentgym_bench.benchmark.suites import Suite, SuiteEntry
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.policy import Policy
from agentgym_bench.rollout.specs import Sampling, policy_from_spec

OPPONENT_SEED = 0
"""Seed of the ``random`` opponent's keyed draws (part of the suite: every submission meets the same draws)."""


def match_key_tag(env_id: str, opponent: str) -> int:
    """The first element of a match entry's sampling keys: a stable hash of ``"<env id>:<opponent>"``."""
    from agentgym_bench.rollout.engine import tag_hash

    return tag_hash(f"{env_id}:{opponent}")


def opponent_policy(entry: SuiteEntry, learner: Policy) -> Policy:
    """The entry's opponent: the suite's fixed random or scripted policy (random drawing with
    :data:`OPPONENT_SEED`), or ``learner`` itself."""
    from agentgym_bench.multiagent.selfplay import SCRIPTED

    if entry.opponent == "self":
        return learner
    if entry.opponent in SCRIPTED:
        return SCRIPTED[entry.opponent].build(Sampling(seed=OPPONENT_SEED))
    raise ValueError(f"entry {entry.name} has no opponent")


def suite_policy(spec: str, suite: Suite, sampling: Any, **kwargs: Any) -> tuple[Policy, dict[str, Any]]:
    """The policy named by ``spec`` for ``suite`` and its ``metadata.policy`` record
    (:func:`~agentgym_bench.rollout.specs.policy_from_spec`): on a multi-agent suite ``random`` and ``scripted`` are
    Bargain's policies (``scripted`` exists only there, ``oracle`` only on single-agent suites)."""
    if not suite.multiagent:
        if spec == "scripted":
            raise UserError(f"policy 'scripted' plays the two-player suites; {suite.name} is single-agent: use oracle")
        return policy_from_spec(spec, sampling, **kwargs)
    if spec == "oracle":
        raise UserError(f"{suite.name} is a two-player suite, where no oracle exists (the best reply depends on the "
                        "opponent); use 'scripted', the scripted bargainer, as the reference")
    from agentgym_bench.multiagent.selfplay import SCRIPTED

    return policy_from_spec(spec, sampling, scripted=SCRIPTED, **kwargs)


def play_entry(policy: Policy, entry: SuiteEntry, *, history: int | None = None, progress: bool = False,
               opponent: Policy | None = None) -> list[Any]:
    """Play the entry's matches with ``policy`` as the learner; :class:`~agentgym_bench.multiagent.selfplay.
    MatchResult` objects in seed order. ``opponent``: play this policy instead of the entry's (what verification
    does to replay recorded replies)."""
    from agentgym_bench.multiagent.selfplay import play_matches

    seeds = list(entry.seeds)
    return play_matches(entry.env_id, seeds, policy, opponent or opponent_policy(entry, policy),
                        env_kwargs=entry.env_kwargs, learner_seats=[entry.learner_seat(s) for s in seeds],
                        history=history, key_tag=match_key_tag(entry.env_id, str(entry.opponent)), progress=progress)


def turns_in_order(result: Any) -> list[tuple[str, Any]]:
    """``(agent, Turn)`` of every move of a match, in play order."""
    cursor = dict.fromkeys(result.trajectories, 0)
    out = []
    for agent in result.order:
        out.append((agent, result.trajectories[agent].turns[cursor[agent]]))
        cursor[agent] += 1
    return out


def match_record(entry: SuiteEntry, result: Any) -> EpisodeRecord:
    """The match record of a played match (see :mod:`agentgym_bench.benchmark.results`)."""
    learner = result.learner_trajectory
    deal = result.final_infos.get(result.learner, {}).get("deal")
    return EpisodeRecord(
        seed=result.seed, success=result.outcome == "win", return_=float(result.rewards[result.learner]),
        final_observation_sha256=sha256_text(learner.final_observation),
        turns=[TurnRecord(sha256_text(turn.observation), turn.reply, list(turn.actions), list(turn.executed_actions),
                          turn.reward, turn.token_ids, agent) for agent, turn in turns_in_order(result)],
        match=MatchRecord(result.learner, str(entry.opponent), result.outcome,
                          {a: float(r) for a, r in result.rewards.items()}, None if deal is None else bool(deal)))


def play_suite(policy: Policy, suite: Suite, *, history: int | None = None, progress: bool = False
               ) -> list[tuple[EntryResults, list[Any]]]:
    """Every match entry of ``suite`` played with ``policy``: ``(entry results, match results)`` per entry."""
    out = []
    for entry in suite.entries:
        results = play_entry(policy, entry, history=history, progress=progress)
        out.append((EntryResults(entry.name, entry.env_id, dict(entry.env_kwargs),
                                  [match_record(entry, r) for r in results], opponent=entry.opponent), results))
    return out


def seat_index(agent: str) -> int:
    """The index of a seat in the envs' ``possible_agents`` (``player_k`` -> ``k``), as in the sampling keys."""
    return int(agent.rsplit("_", 1)[1])
