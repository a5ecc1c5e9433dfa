"""A results file's replies as verification reads them, shared by the checks, replay and re-generation: which turns
the evaluated policy wrote (:func:`policy_wrote`, :func:`policy_turns`), when two replies are the same
(:func:`same_reply`), and the texts replay recovers around them (:class:`EpisodeText`, what re-generation rebuilds
the prompts from and the board's transcripts show)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentgym_bench.benchmark.results import Results, TurnRecord


@dataclass
class EpisodeText:
    """The texts of a replayed episode: the system prompt, each turn's observation, the final observation, and the
    ``tools`` its env offered (``info["tools"]`` of the reset: an agent env in tool format; ``[]`` otherwise)."""

    system_prompt: str
    observations: list[str]
    final_observation: str
    tools: list[dict[str, Any]] = field(default_factory=list)


def same_reply(text: str, token_ids: list[int] | None, other_text: str, other_token_ids: list[int] | None) -> bool:
    """Whether two replies are identical: string-identical, and token for token where both record token ids (the
    text is what replay plays, the tokens what a model wrote; a reply is the same only if both are)."""
    if text != other_text:
        return False
    return token_ids is None or other_token_ids is None or list(token_ids) == list(other_token_ids)


def policy_wrote(opponent: str | None, episode: Any, turn: TurnRecord) -> bool:
    """Whether the evaluated policy wrote ``turn`` of ``episode``: every turn of a single-agent episode (``opponent``
    ``None``); of a match, the moves of its seat (both seats' in self-play)."""
    if opponent is None or opponent == "self":
        return True
    return episode.match is not None and turn.agent == episode.match.learner


def policy_turns(results: Results) -> Iterator[tuple[str, TurnRecord]]:
    """``(where, turn)`` of every turn the evaluated policy wrote: every turn of a single-agent episode; of a match,
    the moves of the policy's seat (both seats' in self-play). ``where`` names the entry, seed and turn or move."""
    for entry in results.entries:
        for episode in entry.episodes:
            unit = "turn" if entry.opponent is None else "move"
            for t, turn in enumerate(episode.turns):
                if policy_wrote(entry.opponent, episode, turn):
                    yield f"entry {entry.name}, seed {episode.seed}, {unit} {t + 1}", turn
