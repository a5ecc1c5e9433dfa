"""A tiny third-party-style text game for wrapper tests: walk a counter from 0 to ``goal`` with Inc/Dec."""

from __future__ import annotations

import gymnasium as gym

from agentgym_bench.spaces import text_space


class CounterGame(gym.Env):
    """Counter game: start at a seeded value in [0, 3); ``Inc``/``Dec`` move by one; reaching ``goal`` pays 1."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, goal: int = 5, render_mode: str | None = None):
        self.goal = goal
        self.render_mode = render_mode
        self.observation_space = text_space(64)
        self.action_space = text_space(64)
        self.value = 0

    def _info(self) -> dict:
        return {"valid_actions": ["Inc", "Dec"], "state_key": str(self.value), "success": self.value == self.goal}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.value = int(self.np_random.integers(0, 3))
        return self.render(), {**self._info(), "instructions": f"Reach {self.goal}.", "legend": ""}

    def step(self, action):
        if self.value == self.goal or action not in ("Inc", "Dec"):
            return self.render(), 0.0, self.value == self.goal, False, {
                **self._info(), "action_is_valid": False, "action_is_effective": False}
        self.value += 1 if action == "Inc" else -1
        done = self.value == self.goal
        return self.render(), 1.0 if done else 0.0, done, False, {
            **self._info(), "action_is_valid": True, "action_is_effective": True}

    def render(self):
        return f"value {self.value}"

    def oracle_turn(self, turns_left, actions_left, max_actions_per_turn):
        need = self.goal - self.value
        return ["Inc" if need > 0 else "Dec"] * min(abs(need), actions_left, max_actions_per_turn)


class FreeTextGame(gym.Env):
    """A game with open-text actions (no ``valid_actions``): ``say[x]`` is valid, anything else is not."""

    metadata = {"render_modes": []}

    def __init__(self):
        self.observation_space = text_space(64)
        self.action_space = text_space(64)
        self.said: list[str] = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.said = []
        return "say something", {"state_key": "0", "success": False}

    def step(self, action):
        ok = action.startswith("say[") and action.endswith("]")
        if ok:
            self.said.append(action[4:-1])
        done = len(self.said) >= 2
        return f"said {len(self.said)}", 1.0 if ok else 0.0, done, False, {
            "state_key": str(len(self.said)), "success": done, "action_is_valid": ok, "action_is_effective": ok,
            "said": list(self.said)}
