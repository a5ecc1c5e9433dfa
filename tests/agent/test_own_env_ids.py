"""An agent env of the user's own, registered as docs/core-env-contract.md ("Register your game") says: Gymnasium's
checker accepts it, and ``play``, ``demo`` and ``openenv-serve`` take it as ``MODULE:ID`` (and the TextArena ids);
a game without an oracle says so in one line."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from agentgym_bench.adapters.openenv import check_env_ids
from agentgym_bench.agent.policies import oracle_reply
from agentgym_bench.errors import UserError
from agentgym_bench.registration import check_env_id

GUESS = '''"""A number-guessing game for the contract test: guess 1-8, told higher or lower."""

import gymnasium as gym

from agentgym_bench.spaces import text_space


class GuessGame(gym.Env):
    metadata = {"render_modes": ["ansi"]}
    observation_space = text_space(64)
    action_space = text_space(8)
    ACTIONS = [str(i) for i in range(1, 9)]

    def __init__(self, render_mode=None):
        self.render_mode = render_mode
        self.secret, self.last, self.done = 1, "", False

    def _info(self):
        return {"valid_actions": list(self.ACTIONS), "state_key": self.last, "success": self.last == "correct"}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.secret, self.last, self.done = int(self.np_random.integers(1, 9)), "start", False
        return self.render(), {**self._info(), "instructions": "Guess the number from 1 to 8.", "legend": ""}

    def step(self, action):
        word = str(action).strip()
        if self.done or word not in self.ACTIONS:
            return self.render(), 0.0, self.done, False, {**self._info(), "action_is_valid": False,
                                                          "action_is_effective": False}
        guess = int(word)
        self.last = "correct" if guess == self.secret else ("higher" if guess < self.secret else "lower")
        self.done = self.last == "correct"
        return self.render(), float(self.done), self.done, False, {**self._info(), "action_is_valid": True,
                                                                   "action_is_effective": True}

    def render(self):
        return f"last guess: {self.last}"

    def oracle_turn(self, turns_left, actions_left, max_actions_per_turn):
        return [str(self.secret)]


gym.register("AgentGuess-v0", entry_point="agentgym_bench.registration:make_agent_env",
             kwargs={"game": "guess:GuessGame", "max_turns": 6, "max_actions_per_turn": 1})
'''


def command(tmp_path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "agentgym_bench.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=300, env=env, cwd=tmp_path)


@pytest.fixture
def guess(tmp_path, monkeypatch):
    (tmp_path / "guess.py").write_text(GUESS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_registered_game_of_ones_own_is_an_agent_env_the_commands_take(guess):
    assert check_env_id("guess:AgentGuess-v0") == "AgentGuess-v0"  # imports guess, which registers the id
    check_env(gym.make("AgentGuess-v0").unwrapped)  # Gymnasium's checker, as it calls spec.make(render_mode=...)
    assert check_env_ids(["guess:AgentGuess-v0"]) == ["AgentGuess-v0"]  # openenv-serve's list
    played = command(guess, "play", "guess:AgentGuess-v0", stdin="4\n")
    assert played.returncode == 0, played.stderr
    assert "executed ['4']" in played.stdout and "actions: 1, 2, 3, 4, 5, 6, 7, 8" in played.stdout
    demo = command(guess, "demo", "--env", "guess:AgentGuess-v0", "--episodes", "3")
    assert demo.returncode == 0, demo.stderr
    assert any(line.split()[:3] == ["AgentGuess-v0", "oracle", "1.000"] for line in demo.stdout.splitlines())


def test_wrong_ids_are_one_line(guess):
    for env_id, message in [("nosuchmodule:AgentGuess-v0", "cannot import 'nosuchmodule'"),
                            ("CartPole-v1", "is registered but is not an agent env"),
                            ("guess:AgentGues-v0", "unknown env id 'AgentGues-v0'")]:
        with pytest.raises(UserError, match=message):
            check_env_id(env_id)


def test_textarena_ids_are_agent_ids_and_an_oracle_less_game_says_so():
    pytest.importorskip("textarena")
    env_id = "AgentTextArena/GuessTheNumber-v0"
    assert check_env_id(env_id) == env_id
    env = gym.make(env_id)
    env.reset(seed=0)
    with pytest.raises(UserError, match=r"AgentTextArena/GuessTheNumber-v0: its game \(TextArenaGame\) has no oracle"):
        oracle_reply(env)
