"""``TextArenaGame``: a single-player TextArena game as a core text env for ``LLMAgentEnv``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentgym_bench.multiagent.textarena_bridge import TextArenaMatch, split_messages, to_charset
from agentgym_bench.multiagent.textarena_catalog import LEFT_OUT, TWO_PLAYER
from agentgym_bench.spaces import text_space

MAX_STATE_LENGTH = 1 << 16
NOTHING_YET = "(The game has shown nothing beyond its instructions yet: make your first move.)"


class TextArenaGame(gym.Env):
    """A single-player TextArena game (Minesweeper, Sudoku, 2048 ...) behind our core game contract.

    Description:
        Bridges one TextArena game (``docs/core-env-contract.md``): the wrapper
        (:class:`~agentgym_bench.agent.LLMAgentEnv`) supplies prompts, reply parsing, budgets and the format
        penalty, exactly as for our own games. TextArena runs on a private copy of the global ``random`` /
        ``numpy.random`` states (:class:`~agentgym_bench.multiagent.textarena_bridge.TextArenaMatch`), so the
        caller's RNG states are untouched and ``(game, seed)`` fixes the episode — including games such as 2048
        that draw from the global ``random`` during ``step``.

    Action Space:
        One TextArena move, e.g. ``"[3 2]"`` (Minesweeper) or ``"[A C]"`` (Tower of Hanoi); the game's
        instructions give the format. Open text: ``info`` has no ``valid_actions``; the game judges each move.

    Observation Space:
        What the game said since the last move: the board and game messages, in ``CHARSET`` (card suits and
        arrows spelled in ASCII, anything else ``?``); on reset, where a game shows nothing but its instructions
        (Guess the Number), :data:`NOTHING_YET`; once the game is over, a last line ``Game over: <TextArena's
        reason>``. For Minesweeper-v0-small, after ``[3 3]``::

            You revealed the cell at (3, 3).
            Current Board:

                0  1  2  3  4
             0  .  .  .  .  .
             ...

    Rewards:
        0 until the game ends, then TextArena's reward for the player (1.0 for a win; games give partial credit
        or their own value for a loss, e.g. Sokoban's share of boxes on targets).

    Episode End:
        When TextArena says the game is done. Invalid moves follow TextArena's rule (``error_allowance=1``): the
        first invalid move in a row is refused (``info["action_is_valid"] = False``, nothing changes) and the
        observation is TextArena's warning with its reason and the board, as TextArena shows it (the one place
        this bridge departs from the core contract's "an invalid action returns the same observation": without
        the warning the agent would read the last move's news again as this move's); a second in a row ends the
        game with the game's penalty; that move is reported as valid (it ended the game) with
        ``info["invalid_move"] = True`` and ``info["reason"]``.

    Info:
        ``instructions`` (TextArena's prompt) and ``legend`` (``""``) on reset; ``success`` (the game ended with
        reward >= 1), ``state_key`` (the last board drawn, else the observation), and on step
        ``action_is_valid``, ``action_is_effective``, ``invalid_move`` and, once over, ``reason``.

    Arguments:
        game: a single-player TextArena id, e.g. ``"Minesweeper-v0"`` (see ``docs/multiagent.md`` for the ones
            that run offline); a game of two or more players is refused (``ValueError``) with the PettingZoo env
            that plays it.
        render_mode: ``"ansi"`` (the observation) or ``None``.

    Version History:
        * v0: initial version (textarena 0.7.4).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, game: str, render_mode: str | None = None):
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode={render_mode!r} must be None or 'ansi'")
        if game in TWO_PLAYER or LEFT_OUT.get(game) in ("MANY_PLAYERS", "FFA_TWO_PLAYER"):
            raise ValueError(f"game={game!r} is a game of two or more players; this env plays single-player games "
                             "(docs/multiagent.md lists them). A two-player TextArena game is a PettingZoo env: "
                             f"TextArenaAECEnv({game!r}) from agentgym_bench.multiagent.textarena_aec, or "
                             f"make_multiagent_env('TextArena/{game}') for self-play")
        self.game = game
        self.match = TextArenaMatch(game, num_players=1)
        self.render_mode = render_mode
        self.observation_space = text_space(MAX_STATE_LENGTH)
        self.action_space = text_space(MAX_STATE_LENGTH)
        self._state = ""
        self._board = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start a game; ``seed`` is passed to TextArena (``None``: drawn from ``self.np_random``)."""
        super().reset(seed=seed)
        self.match.reset(seed if seed is not None else int(self.np_random.integers(2**31)))
        _, messages = self.match.observe()
        received = split_messages(messages, 0)
        self._state, self._board = received.news or NOTHING_YET, received.board
        info = self._info()
        info.update(instructions=received.instructions, legend="")
        return self._state[:MAX_STATE_LENGTH], info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.match.done:
            return self._state[:MAX_STATE_LENGTH], 0.0, True, False, self._info(valid=False)
        done = self.match.step(str(action))
        _, messages = self.match.observe()
        received = split_messages(messages, 0)
        if not done and self.match.state.error_count > 0:  # refused; TextArena says why and waits for another move
            return (received.news or self._state)[:MAX_STATE_LENGTH], 0.0, False, False, self._info(valid=False)
        self._state = received.news or self._state
        self._board = received.board or self._board
        reason = self.match.outcome_info(0)["reason"] if done else ""
        if reason:
            self._state += f"\nGame over: {to_charset(reason)}"
        reward = self.match.rewards()[0] if done else 0.0
        return self._state[:MAX_STATE_LENGTH], float(reward), done, False, self._info(valid=True)

    def _info(self, valid: bool | None = None) -> dict[str, Any]:
        rewards = self.match.rewards() if self.match.done else None
        outcome = self.match.outcome_info(0)
        info: dict[str, Any] = {
            "success": bool(rewards is not None and rewards[0] >= 1.0 and not outcome["invalid_move"]),
            "state_key": self._board or self._state,
        }
        if valid is not None:
            info.update(action_is_valid=valid, action_is_effective=valid, invalid_move=outcome["invalid_move"])
        if rewards is not None:
            info["reason"] = outcome["reason"]
        return info

    def render(self) -> str | None:
        return self._state if self.render_mode == "ansi" else None
