"""A tiny text game for rollout tests: walk along a corridor to the goal; a move slips backwards with prob. 0.3."""

from __future__ import annotations

import gymnasium as gym

from agentgym_bench.agent.env import LLMAgentEnv
from agentgym_bench.spaces import text_space

TOY_ID = "test/AgentToyCorridor-v0"


class ToyCorridor(gym.Env):
    """Corridor of ``length`` cells; ``P`` the player, ``G`` the goal; random start and goal per seed."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, length: int = 6, slip: float = 0.3, render_mode: str | None = None):
        self.length, self.slip, self.render_mode = length, slip, render_mode
        self.observation_space = text_space(64)
        self.action_space = text_space(64)
        self.pos = self.goal = 0

    def _text(self) -> str:
        cells = ["_"] * self.length
        cells[self.goal] = "G"
        cells[self.pos] = "√" if self.pos == self.goal else "P"
        return "".join(cells)

    def _info(self) -> dict:
        done = self.pos == self.goal
        return {"valid_actions": [] if done else ["Left", "Right"], "state_key": self._text(), "success": done}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.goal = (int(x) for x in self.np_random.choice(self.length, size=2, replace=False))
        info = self._info()
        info.update(instructions="Walk to the goal.", legend="P: player, G: goal, _: floor")
        return self._text(), info

    def step(self, action):
        word = str(action).strip().lower()
        if self.pos == self.goal or word not in ("left", "right"):
            info = self._info()
            info.update(action_is_valid=False, action_is_effective=False)
            return self._text(), 0.0, self.pos == self.goal, False, info
        move = -1 if word == "left" else 1
        if self.np_random.random() < self.slip:
            move = -move
        before = self.pos
        self.pos = min(max(self.pos + move, 0), self.length - 1)
        info = self._info()
        info.update(action_is_valid=True, action_is_effective=self.pos != before)
        done = self.pos == self.goal
        return self._text(), 1.0 if done else 0.0, done, False, info

    def render(self):
        return self._text()

    def oracle_turn(self, turns_left, actions_left, max_actions_per_turn):
        n = min(abs(self.goal - self.pos), actions_left, max_actions_per_turn)
        return ["Right" if self.goal > self.pos else "Left"] * n


def make_toy(**kwargs) -> LLMAgentEnv:
    game_keys = {"length", "slip"}
    game = ToyCorridor(**{k: v for k, v in kwargs.items() if k in game_keys})
    return LLMAgentEnv(game, **{k: v for k, v in kwargs.items() if k not in game_keys})


def register() -> None:
    if TOY_ID not in gym.registry:
        gym.register(TOY_ID, entry_point=make_toy,
                     kwargs={"max_turns": 4, "max_actions_per_turn": 2, "max_actions_per_episode": 6})
