"""``check_game`` passes every game of the package and a third party's that follows docs/core-env-contract.md, and
names the rule each broken variant of that game breaks."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest

import agentgym_bench
from agentgym_bench.envs.contract import ContractError, check_game
from agentgym_bench.spaces import text_space


class GuessGame(gym.Env):
    """Guess a number from 1 to 8, told higher or lower (a third party's game, written to the contract).

    ## Description
    A secret number from 1 to 8; each guess is told whether the secret is higher or lower.

    ## Action Space
    One of ``1`` .. ``8`` (surrounding whitespace ignored); anything else is invalid and changes nothing.

    ## Observation Space
    The last guess's verdict: ``last guess: higher``.

    ## Rewards
    1 for the right guess, else 0.

    ## Episode End
    Terminated by the right guess.

    ## Arguments
    - ``render_mode=None``: ``"ansi"`` returns the observation text.

    ## Oracle
    :meth:`oracle_turn` guesses the secret.

    ## Version History
    - v0: initial version.
    """

    metadata = {"render_modes": ["ansi"]}
    observation_space = text_space(64)
    action_space = text_space(8)
    ACTIONS = [str(i) for i in range(1, 9)]

    def __init__(self, render_mode=None):
        self.render_mode, self.secret, self.last, self.done = render_mode, 1, "", False

    def info(self):
        return {"valid_actions": list(self.ACTIONS), "state_key": self.last, "success": self.last == "correct"}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.secret, self.last, self.done = int(self.np_random.integers(1, 9)), "start", False
        return self.render(), {**self.info(), "instructions": "Guess the number from 1 to 8.", "legend": ""}

    def step(self, action):
        word = str(action).strip()
        if self.done or word not in self.ACTIONS:
            return self.render(), 0.0, self.done, False, {**self.info(), "action_is_valid": False,
                                                          "action_is_effective": False}
        self.last = ("correct" if int(word) == self.secret else "higher" if int(word) < self.secret else "lower")
        self.done = self.last == "correct"
        return self.render(), float(self.done), self.done, False, {**self.info(), "action_is_valid": True,
                                                                   "action_is_effective": True}

    def render(self):
        return f"last guess: {self.last}"

    def oracle_turn(self, turns_left, actions_left, max_actions_per_turn):
        return [str(self.secret)]


class NumpyReward(GuessGame):
    def step(self, action):
        obs, reward, *rest = super().step(action)
        return (obs, np.float64(reward), *rest)


class SharedInfo(GuessGame):
    def info(self):  # the same list object in every info: a caller that edits one edits all
        return {**super().info(), "valid_actions": self.ACTIONS}


class RaisesOnInvalid(GuessGame):
    def step(self, action):
        if str(action).strip() not in self.ACTIONS:
            raise ValueError(f"bad action {action!r}")
        return super().step(action)


class GlobalRandom(GuessGame):
    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        self.secret = random.randint(1, 8)
        return obs, info


class Drifting(GuessGame):
    resets = 0

    def reset(self, *, seed=None, options=None):  # the episode depends on how many came before, not on the seed
        obs, info = super().reset(seed=seed)
        Drifting.resets += 1
        self.secret = 1 + Drifting.resets % 8
        return obs, info


class NoSuccess(GuessGame):
    def info(self):
        return {k: v for k, v in super().info().items() if k != "success"}


class NoSeed(GuessGame):
    def reset(self):  # noqa: D102 - the newcomer's signature
        return super().reset()


class FourValues(GuessGame):
    def step(self, action):
        obs, reward, terminated, _, info = super().step(action)
        return obs, reward, terminated, info


class ObservationOnly(GuessGame):
    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed)[0]


class ExactCase(GuessGame):
    def step(self, action):  # only the exact spelling is taken: " 3 " is refused
        return super().step(None if isinstance(action, str) and action != action.strip() else action)


class ListsTooMuch(GuessGame):
    def info(self):  # lists an action its step refuses
        return {**super().info(), "valid_actions": [*self.ACTIONS, "9"]}


class RendersOtherText(GuessGame):
    def render(self):
        return f"the game: {super().render()}"

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        return obs.removeprefix("the game: "), info

    def step(self, action):
        obs, *rest = super().step(action)
        return (obs.removeprefix("the game: "), *rest)


class NoSections(GuessGame):
    """A game."""


@pytest.mark.parametrize("env_id", [*agentgym_bench.AGENT_ENVS])
def test_every_game_of_the_package_keeps_the_contract(env_id):
    check_game(gym.make(env_id))
    check_game(gym.make(env_id, render_mode="ansi"))  # render() is the observation


@pytest.mark.parametrize("env_id", [*agentgym_bench.AGENT_ENVS])
def test_a_step_before_any_reset_says_to_reset_first(env_id):
    """Unwrapped (gym.make's order enforcing aside), the game and the agent env refuse a step before reset by
    name, as Sokoban always did (FrozenLake raised an IndexError, WebShop answered a finished episode)."""
    agent = gym.make(env_id).unwrapped
    for env in (agent.game, agent):
        with pytest.raises(RuntimeError, match=r"reset\(\) (before|first)"):
            env.step("Up")


def test_a_third_partys_game_written_to_the_contract_passes():
    check_game(GuessGame())
    check_game(GuessGame(render_mode="ansi"))


@pytest.mark.parametrize(("game", "rule"), [
    (NumpyReward, "never numpy scalars"),
    (SharedInfo, "a fresh info dict on every call"),
    (RaisesOnInvalid, "an invalid action raises nothing (seed 0, step 1: ValueError: bad action"),
    (GlobalRandom, "never touch the random or np.random globals"),
    (NoSuccess, "info has success: bool"),
    (Drifting, "the same seed and actions give the same episode"),
    (NoSeed, "run without raising on the game's own actions (seed 0: TypeError: "),
    (FourValues, "step returns (obs, reward, terminated, truncated, info) (seed 0, step 1: it returned 4 values)"),
    (ObservationOnly, "reset returns (str, dict) (seed 0, reset: it returned str)"),
    (ExactCase, "an action is matched ignoring case and surrounding whitespace"),
    (ListsTooMuch, "every action valid_actions lists is valid (seed 0, after reset: '9')"),
    (NoSections, "the class docstring is the spec, with its sections (missing: Description, Action Space"),
])
def test_each_broken_rule_is_named(game, rule):
    with pytest.raises(ContractError, match=r"breaks docs/core-env-contract\.md") as caught:
        check_game(game())
    assert rule in str(caught.value)


def test_a_render_that_is_not_the_observation_is_named():
    with pytest.raises(ContractError, match='render\\(\\) with render_mode "ansi" returns the observation text'):
        check_game(RendersOtherText(render_mode="ansi"))


def test_a_game_that_raises_on_an_invalid_action_is_named_for_that_alone():
    with pytest.raises(ContractError) as caught:
        check_game(RaisesOnInvalid())
    assert str(caught.value).count("\n- ") == 1 and "an invalid action raises nothing" in str(caught.value)
