"""Two-player TextArena games as PettingZoo AEC envs for LLM agents."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from agentgym_bench.multiagent.seats import (
    DEFAULT_MAX_OBSERVATION_LENGTH,
    action_space,
    format_hint,
    observation,
    observation_space,
    read_move,
    unreadable,
)
from agentgym_bench.multiagent.textarena_bridge import TextArenaMatch, split_messages
from agentgym_bench.multiagent.textarena_catalog import SINGLE_PLAYER

AGENTS = ("player_0", "player_1")


class TextArenaAECEnv(AECEnv):
    """A two-player TextArena game (TicTacToe, ConnectFour, KuhnPoker, IteratedPrisonersDilemma ...) as an AEC env.

    Description:
        Agents ``player_0`` and ``player_1`` are TextArena's players 0 and 1; ``agent_selection`` is whoever
        TextArena says moves next (the same agent again after a refused invalid move). Games with simultaneous
        moves (Prisoner's Dilemma, Colonel Blotto ...) are played as TextArena plays them: one player after the
        other, each blind to the other's pending move. TextArena runs on a private copy of the global RNG states
        (:class:`~agentgym_bench.multiagent.textarena_bridge.TextArenaMatch`): ``reset(seed)`` fixes the match and
        the caller's ``random`` / ``numpy.random`` states are untouched.

    Action Space:
        The model's raw reply (``Text``, any string accepted). The move is the first action inside
        ``<answer>...</answer>`` (:func:`~agentgym_bench.multiagent.seats.read_move`, the single-agent parser),
        given to TextArena as written, e.g. ``<think>...</think><answer>[4]</answer>``. A reply with no readable
        move is an invalid move by the game's own rule (TextArena's ``set_invalid_move``): a warning and a retry
        the first time in a row, then the offender loses (-1, the other player +1).

    Observation Space:
        ``Dict({"text": Text})`` (see :mod:`~agentgym_bench.multiagent.seats` for why not a bare ``Text``). On a
        player's first turn: TextArena's instructions for that player; then on each turn what happened since the
        player last moved (the board, game messages, the other player's actions as ``[Player k] ...``), then
        ``Your move.`` and the output-format reminder. After the game: the last news and the outcome.

    Rewards:
        0 until the end, then TextArena's: win +1, loss -1, draw 0. A match cut by ``max_moves`` gives 0 to both.

    Episode End:
        Both agents terminate when TextArena ends the game; both are truncated after ``max_moves`` moves
        (invalid ones included) if it has not.

    Info:
        Every agent: ``state_key`` (the board in its last observation, else that observation's news). The agent
        that just moved also gets ``format_valid``, ``actions``, ``dropped_actions``, ``move`` and ``refused``
        (TextArena refused the move and waits for another). At the end every agent gets ``outcome`` (``"win"``,
        ``"loss"``, ``"draw"`` or ``"unfinished"``) and ``reason``.

    Arguments:
        game: a two-player TextArena id (curated ones: ``textarena_catalog.TWO_PLAYER``).
        enable_think: require ``<think>...</think>`` before ``<answer>`` (as the single-agent envs).
        max_moves: cap on moves in a match.
        max_observation_length: size of the observation's text space.
        render_mode: ``"ansi"`` (the current player's observation) or ``None``.

    Version History:
        * v0: initial version (textarena 0.7.4, pettingzoo 1.27).
    """

    metadata = {"name": "textarena_aec_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(self, game: str, *, enable_think: bool = True, max_moves: int = 200,
                 max_observation_length: int = DEFAULT_MAX_OBSERVATION_LENGTH, render_mode: str | None = None):
        super().__init__()
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode={render_mode!r} must be None or 'ansi'")
        if max_moves < 1:
            raise ValueError(f"max_moves={max_moves} must be >= 1")
        if game in SINGLE_PLAYER:
            raise ValueError(f"game={game!r} is a single-player TextArena game: play it as an agent env, "
                             f"gym.make('AgentTextArena-v0', game={game!r})")
        self.game = game
        self.match = TextArenaMatch(game, num_players=2)
        self.enable_think, self.max_moves = enable_think, max_moves
        self.max_observation_length, self.render_mode = max_observation_length, render_mode
        self.possible_agents = list(AGENTS)
        self._observation_space, self._action_space = observation_space(max_observation_length), action_space()
        self.agents: list[str] = []
        self._seeds = np.random.default_rng()
        self._texts = dict.fromkeys(AGENTS, "")
        self._keys = dict.fromkeys(AGENTS, "")
        self._boards = dict.fromkeys(AGENTS, "")
        self._seen_prompt = dict.fromkeys(AGENTS, False)
        self._moves = 0

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_space  # the same object on every call, as api_test requires

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    def observe(self, agent: str) -> dict[str, str]:
        return observation(self._texts[agent], self.max_observation_length)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a match; ``seed`` goes to TextArena (``None``: drawn from a generator seeded by the last seed)."""
        if seed is not None:
            self._seeds = np.random.default_rng(seed)
        self.match.reset(seed if seed is not None else int(self._seeds.integers(2**31)))
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(AGENTS, 0.0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0.0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self._texts = dict.fromkeys(AGENTS, "")
        self._keys = dict.fromkeys(AGENTS, "")
        self._boards = dict.fromkeys(AGENTS, "")
        self._seen_prompt = dict.fromkeys(AGENTS, False)
        self._moves = 0
        self.agent_selection = AGENTS[self.match.state.current_player_id]
        self._look(self.match.state.current_player_id, done=False)
        self.infos = {a: {"state_key": self._keys[a]} for a in AGENTS}

    def _look(self, player_id: int, *, done: bool, refused: bool = False) -> None:
        """Give ``player_id`` the messages queued for it as its new observation (after a refused move, with the
        board it last saw where TextArena's warning did not draw it again: the board has not changed)."""
        agent = AGENTS[player_id]
        received = split_messages(self.match.drain(player_id), player_id)
        parts = [received.instructions] if received.instructions and not self._seen_prompt[agent] else []
        self._seen_prompt[agent] = self._seen_prompt[agent] or bool(received.instructions)
        parts.append(received.news)
        kept = refused and not received.board and self._boards[agent]
        if kept:
            parts.append(self._boards[agent])
        if not done:
            parts.append(f"Your move. {format_hint(self.enable_think)}")
        self._texts[agent] = "\n\n".join(p for p in parts if p)
        self._boards[agent] = received.board or self._boards[agent]
        self._keys[agent] = self._boards[agent] if kept else received.board or received.news

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        move, read = read_move(action, enable_think=self.enable_think)
        done = self.match.invalid_move(unreadable(read)) if move is None else self.match.step(move)
        self._moves += 1
        refused = not done and self.match.state.error_count > 0
        self.rewards = dict.fromkeys(AGENTS, 0.0)
        if done:
            rewards = self.match.rewards() or {}
            self.rewards = {a: float(rewards.get(i, 0.0)) for i, a in enumerate(AGENTS)}
            self.terminations = dict.fromkeys(AGENTS, True)
        elif self._moves >= self.max_moves:
            self.truncations = dict.fromkeys(AGENTS, True)
        over = done or self._moves >= self.max_moves
        if over:
            for pid in (0, 1):
                self._look(pid, done=True)
        else:
            self._look(self.match.state.current_player_id, done=False, refused=refused)
        self.infos = {a: {"state_key": self._keys[a]} for a in AGENTS}
        self.infos[agent].update(read, move=move, refused=refused)
        if over:
            for i, a in enumerate(AGENTS):
                r = self.rewards[a]
                outcome = "unfinished" if not done else "win" if r > 0 else "loss" if r < 0 else "draw"
                self.infos[a].update(outcome=outcome, reason=self.match.outcome_info(i)["reason"])
                self._texts[a] = "\n\n".join(p for p in [self._texts[a], f"Game over: {outcome}."] if p)
        else:
            self.agent_selection = AGENTS[self.match.state.current_player_id]
        self._accumulate_rewards()

    def render(self) -> str | None:
        return self._texts[self.agent_selection] if self.render_mode == "ansi" and self.agents else None

    def close(self) -> None:
        pass
