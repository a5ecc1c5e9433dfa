"""What replay and re-generation of a recorded entry share, whatever its kind (:mod:`.kinds`): the texts replay
recovers (:class:`EpisodeText`), a reply to re-generate (:class:`Move`), a model-free policy rebuilt to re-generate
replies during replay (:class:`ModelFree`), when two replies are the same (:func:`same_reply`), and the errors of a
recorded episode that does not replay (:class:`ReplayMismatch`) or whose replies are not the named policy's
(:class:`RegenerationMismatch`).

Each kind replays its own entries (:meth:`.kinds.Kind.replay`) and lists the replies a re-generation must reproduce
(:meth:`.kinds.Kind.calls`); the leaderboard decides what a file that replays, or not, is worth
(:mod:`agentgym_bench.leaderboard.verify`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentgym_bench.benchmark.results import ResultsError

REWARD_TOLERANCE = 1e-9
"""Most a replayed reward may differ from the recorded one."""


class ReplayMismatch(ResultsError):
    """A recorded episode that replay does not reproduce."""


class RegenerationMismatch(ReplayMismatch):
    """A recorded reply that the model-free policy the file names does not give (check 6 of
    :func:`~agentgym_bench.leaderboard.verify.verify`)."""


@dataclass
class EpisodeText:
    """The texts of a replayed episode: the system prompt, each turn's observation, the final observation, and the
    ``tools`` its env offered (``info["tools"]`` of the reset: an agent env in tool format; ``[]`` otherwise)."""

    system_prompt: str
    observations: list[str]
    final_observation: str
    tools: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Move:
    """One reply of the evaluated model to re-generate: the prompt it read (its messages and the ``tools`` its env
    offered, ``[]`` for none), its sampling key, where it is (for messages) and the recorded turn."""

    messages: list[dict[str, str]]
    key: tuple[int, ...]
    where: str
    turn: Any
    episode: tuple[str, int]
    tools: list[dict[str, Any]] = field(default_factory=list)


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


def same_reply(text: str, token_ids: list[int] | None, other_text: str, other_token_ids: list[int] | None) -> bool:
    """Whether two replies are identical: string-identical, and token for token where both record token ids (the
    text is what replay plays, the tokens what a model wrote; a reply is the same only if both are)."""
    if text != other_text:
        return False
    return token_ids is None or other_token_ids is None or list(token_ids) == list(other_token_ids)


def check_regenerated(where: str, model_free: ModelFree, regenerated: dict[int, str], turns: list[Any],
                      unit: str = "turn") -> None:
    """Compare the replies a model-free policy re-generated (turn index -> text) with the recorded ones (check 6);
    :class:`RegenerationMismatch` naming the first that differs."""
    for t in sorted(regenerated):
        reply = regenerated[t]
        if not same_reply(reply, None, turns[t].reply, turns[t].token_ids):
            raise RegenerationMismatch(f"{where}, {unit} {t + 1}: {model_free.name} replies {reply[:200]!r}, the file "
                                       f"records {turns[t].reply[:200]!r}")
