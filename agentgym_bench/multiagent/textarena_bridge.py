"""The one place that talks to TextArena (https://github.com/LeonGuertler/TextArena, pip ``textarena``).

TextArena (Guertler et al., 2025, arXiv 2504.11442) is an optional dependency (extra ``multiagent``): nothing here
imports it before :func:`import_textarena` is called, so ``import agentgym_bench`` works without it.

Global RNGs. TextArena draws from Python's global ``random`` (``ta.State.__init__`` calls ``random.seed(seed)``; games
such as 2048 draw new tiles from it in ``step``), and importing it moves ``random``'s state. A :class:`TextArenaMatch`
therefore owns a private copy of the ``random`` and ``numpy.random`` global states: every call into TextArena runs
inside :meth:`PrivateGlobalRNG.active`, which swaps the match's states in, runs the call, saves them back and restores
the caller's states exactly. So ``(game, seed)`` fixes the match even when several matches are interleaved in one
process, and ``random.getstate()`` / ``np.random.get_state()`` of the caller are left as they were.

Messages. A TextArena observation is a list of ``(from_id, text, ObservationType)``. :func:`split_messages` turns the
messages a player received into the game's instructions (``PROMPT``) and the text of what happened since (game
messages as they are, other players' actions as ``[Player k] text``, the player's own echoed action dropped).
"""

from __future__ import annotations

import importlib.util
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentgym_bench.errors import MissingExtra
from agentgym_bench.spaces import sanitize

# Characters TextArena games print that are outside agentgym_bench.spaces.CHARSET, spelled in ASCII.
ASCII_SPELLING = str.maketrans({
    "♠": "s", "♥": "h", "♦": "d", "♣": "c", "→": "->", "➜": "->", "➔": "->", "⇒": "=>", "←": "<-", "↑": "^",
    "↓": "v", "×": "x", "–": "-", "—": "-",
    "‘": "'", "’": "'", "“": '"', "”": '"', "…": "...", "·": ".", "•": "*", "█": "#", "░": ".", "■": "#", "□": ".",
    "●": "O", "○": "o", "⚫": "X", "⚪": "O", "✓": "v", "✗": "x", "≤": "<=", "≥": ">=", "≠": "!=",
})


_SWAP_LOCK = threading.Lock()
"""Held by every swap of the global RNG states (importing textarena, :meth:`PrivateGlobalRNG.active`)."""


def textarena_available() -> bool:
    """True if ``textarena`` can be found (without importing it)."""
    return importlib.util.find_spec("textarena") is not None


def import_textarena() -> Any:
    """Import and return the ``textarena`` module, leaving the global RNG states as they were.

    Raises:
        MissingExtra: textarena is not installed (an ImportError; the message names the install command).
    """
    if not textarena_available():
        raise MissingExtra("TextArena games need the optional dependency textarena", "multiagent")
    with _SWAP_LOCK:  # another thread may be inside PrivateGlobalRNG.active(): never save/restore its states
        py_state, np_state = random.getstate(), np.random.get_state()
        try:
            import textarena
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)
    return textarena


def registered_ids() -> list[str]:
    """TextArena's ids without the ``-raw`` / ``-train`` wrapper variants (238 in textarena 0.7.4)."""
    import_textarena()
    from textarena.envs.registration import ENV_REGISTRY

    return [k for k in ENV_REGISTRY if not k.endswith("-raw") and "-train" not in k]


class PrivateGlobalRNG:
    """A private copy of the ``random`` and ``numpy.random`` global states, swapped in around third-party calls.

    Swaps are serialised by one process-wide lock, so matches stepped from several threads (the rollout engine's
    ``max_workers``) do not see each other's states; code of the caller's that uses the global RNGs from another
    thread *during* a swap is not protected (it cannot be, short of not using global RNGs).
    """

    def __init__(self, seed: int = 0):
        self.seed(seed)

    def seed(self, seed: int) -> None:
        """Reset the private states from ``seed`` (a non-negative int)."""
        self._py_state = random.Random(seed).getstate()
        self._np_state = np.random.RandomState(seed % 2**32).get_state()

    @contextmanager
    def active(self) -> Iterator[None]:
        """Run the block with the private states as the global ones; restore the caller's states afterwards."""
        with _SWAP_LOCK:
            caller_py, caller_np = random.getstate(), np.random.get_state()
            random.setstate(self._py_state)
            np.random.set_state(self._np_state)
            try:
                yield
            finally:
                self._py_state, self._np_state = random.getstate(), np.random.get_state()
                random.setstate(caller_py)
                np.random.set_state(caller_np)


@dataclass(frozen=True)
class Received:
    """What one player was told, in ``CHARSET``.

    Attributes:
        instructions: the game's prompt messages (rules, move format), ``""`` after the first turn.
        news: everything else since the player last looked: game messages as they are, other players' actions as
            ``[Player k] text`` (the player's own echoed action is dropped), one per line.
        board: the last board the game drew (``""`` if none came), the best state identity TextArena offers.
    """

    instructions: str
    news: str
    board: str


def split_messages(messages: list[tuple[int, str, Any]], player_id: int) -> Received:
    """Sort the messages ``player_id`` received (see :class:`Received`)."""
    prompts, news, board = [], [], ""
    for from_id, text, kind in messages:
        if not hasattr(kind, "name"):  # textarena 0.7.4's Countdown, Cryptarithm and Slitherlink pass a move's echo
            from_id, text, kind = text, kind, from_id  # to add_observation as (player, move, type), in that order
        text = str(text).strip()
        if kind.name == "PROMPT":
            prompts.append(text)
        elif kind.name == "PLAYER_ACTION":
            if from_id not in (player_id, -1):
                news.append(f"[Player {from_id}] {text}")
        elif text:
            news.append(text)
            if kind.name == "GAME_BOARD":
                board = text
    return Received(to_charset("\n\n".join(prompts)), to_charset("\n".join(news)), to_charset(board))


def to_charset(text: str) -> str:
    """``text`` inside ``CHARSET``: known symbols spelled in ASCII (``♠`` -> ``s``), anything else ``?``."""
    return sanitize(text.translate(ASCII_SPELLING))


class _InvalidMoveInEitherOrder:
    """A ``SinglePlayerState``'s ``set_invalid_move(reason, reward)`` that also takes its arguments the other way
    round, as textarena 0.7.4's Countdown, Cryptarithm, Slitherlink and ThreeCardMonte pass them (``(progress,
    "Bad action ...")``): else the game's message reads "Reason: 0.0" and a second invalid move sets a text reward.
    A class, not a closure, so that a game holding it still pickles and deep-copies."""

    def __init__(self, state: Any):
        self.state = state

    def __call__(self, reason: Any = None, reward: Any = -1.0) -> Any:
        if isinstance(reason, (int, float)) and isinstance(reward, str):
            reason, reward = reward, reason
        return type(self.state).set_invalid_move(self.state, reason, reward)


class TextArenaMatch:
    """One TextArena game instance (the ``-raw`` variant: message lists, no TextArena wrappers), RNG-isolated.

    Arguments:
        game: a TextArena id, e.g. ``"Minesweeper-v0"`` or ``"TicTacToe-v0"``.
        num_players: players of the game (1 or 2 here).

    Every method runs TextArena under :class:`PrivateGlobalRNG`; ``reset(seed)`` reseeds it and makes a fresh game
    instance (some games keep state across their own resets: KuhnPoker shuffles its deck in place, so a reused
    instance dealt another match for the same seed), so the match depends only on ``(game, seed)`` and the moves.
    """

    def __init__(self, game: str, num_players: int):
        ta = import_textarena()
        from textarena.envs.registration import ENV_REGISTRY

        known = registered_ids()
        if game not in known:
            close = [k for k in known if k.lower().startswith(game.split("-")[0].lower())][:8]
            raise ValueError(f"game={game!r} is not a TextArena id" + (f"; close: {close}" if close else ""))
        self.game, self.num_players = game, num_players
        self.rng = PrivateGlobalRNG()
        self.raw = f"{game}-raw" if f"{game}-raw" in ENV_REGISTRY else game
        with self.rng.active():
            self.env = ta.make(self.raw)
        self.done = True

    def reset(self, seed: int) -> None:
        ta = import_textarena()  # outside active(): both take the swap lock
        self.rng.seed(seed)
        with self.rng.active():
            self.env = ta.make(self.raw)
            self.env.reset(num_players=self.num_players, seed=seed)
        if isinstance(self.env.state, ta.SinglePlayerState):
            self.env.state.set_invalid_move = _InvalidMoveInEitherOrder(self.env.state)
        self.done = False

    @property
    def state(self) -> Any:
        """TextArena's ``State`` (``current_player_id``, ``error_count``, ``rewards``, ``game_info`` ...)."""
        return self.env.state

    def observe(self) -> tuple[int, list[tuple[int, str, Any]]]:
        """``(player_id, messages)``: whose turn it is and the messages queued for that player (drains them)."""
        with self.rng.active():
            return self.env.get_observation()

    def drain(self, player_id: int) -> list[tuple[int, str, Any]]:
        """The messages queued for ``player_id`` (drains them), whoever's turn it is."""
        messages = self.env.state.observations[player_id]
        self.env.state.observations[player_id] = []
        return list(messages)

    def step(self, action: str) -> bool:
        """Play ``action`` for the current player; return ``done``."""
        with self.rng.active():
            done, _ = self.env.step(action)
        self.done = bool(done)
        return self.done

    def invalid_move(self, reason: str) -> bool:
        """Count a move TextArena never saw (an unreadable reply) as an invalid move, by the game's own rule.

        Calls the state's ``set_invalid_move`` and ``step`` exactly as TextArena games do for an invalid action
        (a warning and a retry while ``error_allowance`` lasts, then the offender loses). Returns ``done``.
        """
        with self.rng.active():
            self.env.state.set_invalid_move(reason=reason)
            done, _ = self.env.state.step()
        self.done = bool(done)
        return self.done

    def rewards(self) -> dict[int, float] | None:
        """Final rewards by player id once the game is over (``None`` before)."""
        rewards = self.env.state.rewards
        return None if rewards is None else {int(k): float(v) for k, v in rewards.items()}

    def outcome_info(self, player_id: int) -> dict[str, Any]:
        """TextArena's end-of-game info of one player: ``reason``, ``invalid_move``, ``turn_count``."""
        info = self.env.state.game_info.get(player_id, {})
        return {"reason": str(info.get("reason", "")), "invalid_move": bool(info.get("invalid_move", False)),
                "turn_count": int(info.get("turn_count", 0))}
