"""The two-armed bandit of RAGEN as a core text game: one pull, arms known only by their names."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np

from agentgym_bench.envs import arguments, render
from agentgym_bench.spaces import text_space

TRAIN_ARMS = ("Phoenix", "Dragon")
"""(low arm, high arm) of RAGEN's ``Bandit`` tag, the default."""
TEST_ARMS = ("Trader", "Librarian")
"""(low arm, high arm) of RAGEN's held-out ``BanditTest`` tag."""
GENERALISATION_ARMS = ("Engineer", "Teacher")
"""(low arm, high arm) RAGEN trains on in its generalisation runs before testing on :data:`TEST_ARMS`."""

_NAME = re.compile(r"[A-Za-z0-9]+(?:[ _'-][A-Za-z0-9]+)*")
_BAR_COLORS = ((70, 130, 180), (230, 140, 40))


class BanditGame(gym.Env):
    """Pull one of two arms whose names hint at their payoffs: a safe low arm and a risky high arm.

    ## Description
    RAGEN's bandit tests whether a language model brings priors from the arms' names: "Phoenix" (low risk) always
    pays ``low_payoff``; "Dragon" (high risk) pays ``high_payoff`` with probability ``high_prob`` and 0 otherwise.
    The arm order is shuffled every episode. With the defaults the high-risk arm is the better bet: expected payoff
    0.25 against 0.15. RAGEN's paper says the low arm pays 0.15, its code 0.1; we take the paper's 0.15, the
    published spec readers compare against (with either value the high arm is better in expectation).

    ## Action Space
    One arm name, case-insensitive, surrounding whitespace ignored (``info["valid_actions"]`` lists both in the
    observation's order; empty once the arm is pulled). Anything else changes nothing, gives reward 0, does not end
    the episode and sets ``info["action_is_valid"] = False``.

    ## Observation Space
    Before the pull, the arms in this episode's order; after it, also the pull and its payoff::

        Arms: Dragon, Phoenix

        Arms: Dragon, Phoenix
        Dragon: 1 points

    ``info["instructions"]`` (RAGEN's prompt adapted) names the arms and asks the player to reason about the
    symbolic meaning of the names; ``info["legend"]`` is ``""``.

    ## Rewards
    ``low_payoff`` for the low arm; ``high_payoff`` with probability ``high_prob``, else 0, for the high arm (drawn
    from ``self.np_random``).

    ## Episode End
    Terminated by the first valid pull. ``info["success"]`` is True if the high-risk arm was pulled, whatever the
    draw (RAGEN's criterion). Never truncated.

    ## Arguments
    - ``low_arm="Phoenix"``, ``high_arm="Dragon"``: arm names (letters and digits, words joined by one space, ``-``,
      ``_`` or ``'``; different ignoring case). Held-out pairs: :data:`TEST_ARMS` (Trader low, Librarian high, as
      RAGEN's ``BanditTest``) and :data:`GENERALISATION_ARMS` (Engineer low, Teacher high).
    - ``low_payoff=0.15``, ``high_payoff=1.0``: finite payoffs.
    - ``high_prob=0.25``: probability in [0, 1] that the high arm pays ``high_payoff``.
    - ``render_mode=None``: ``"ansi"`` (the observation text) or ``"rgb_array"`` (one bar per arm in observation
      order, the pulled arm framed in white and the other dimmed).

    ## Oracle
    :meth:`oracle_turn` pulls the high-risk arm: it maximises success and, with the defaults, expected reward.

    ## Splits
    No generated content: every episode of an id is the same two arms, and a seed draws only the arm order and the
    payout, so there is nothing to hold out by content (:mod:`agentgym_bench.seeds`); the held-out test of
    generalisation is the other arm names (``AgentBanditTest-v0``), which no training config of ours uses.

    ## Version History
    - v0: initial version (paper payoffs: low 0.15, high 1.0 w.p. 0.25).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        low_arm: str = TRAIN_ARMS[0],
        high_arm: str = TRAIN_ARMS[1],
        low_payoff: float = 0.15,
        high_payoff: float = 1.0,
        high_prob: float = 0.25,
        render_mode: str | None = None,
    ):
        for name, value in (("low_arm", low_arm), ("high_arm", high_arm)):
            if not isinstance(value, str) or not _NAME.fullmatch(value):
                raise ValueError(
                    f"{name}={value!r} must be a non-empty name of letters and digits"
                    " (words joined by one space, '-', '_' or \"'\")"
                )
        if low_arm.lower() == high_arm.lower():
            raise ValueError(f"low_arm={low_arm!r} and high_arm={high_arm!r} must differ (ignoring case)")
        low_payoff = arguments.number("low_payoff", low_payoff)
        high_payoff = arguments.number("high_payoff", high_payoff)
        high_prob = arguments.number("high_prob", high_prob, low=0.0, high=1.0)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r} must be None or one of {self.metadata['render_modes']}")
        self.low_arm, self.high_arm = low_arm, high_arm
        self.low_payoff, self.high_payoff, self.high_prob = float(low_payoff), float(high_payoff), float(high_prob)
        self.render_mode = render_mode
        longest = max(len(low_arm), len(high_arm))
        self.observation_space = text_space(3 * longest + 64)
        self.action_space = text_space(longest + 16)
        self.arms: tuple[str, str] = (low_arm, high_arm)
        self.pulled: str | None = None
        self.payoff = 0.0
        self._started = False

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        swap = bool(self.np_random.integers(2))
        self.arms = (self.high_arm, self.low_arm) if swap else (self.low_arm, self.high_arm)
        self.pulled, self.payoff, self._started = None, 0.0, True
        info = self._info()
        info["instructions"] = self.instructions()
        info["legend"] = ""
        return self.observation(), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        if not self._started:  # its arms and draws come from reset's seed
            raise RuntimeError("call reset() before step()")
        word = action.strip().lower() if isinstance(action, str) else None
        arm = next((a for a in self.arms if a.lower() == word), None)
        if arm is None or self.pulled is not None:
            return self.observation(), 0.0, self.pulled is not None, False, self._info(valid=False)
        self.pulled = arm
        if arm == self.low_arm:
            self.payoff = self.low_payoff
        else:
            self.payoff = self.high_payoff if self.np_random.random() < self.high_prob else 0.0
        return self.observation(), self.payoff, True, False, self._info(valid=True)

    def instructions(self) -> str:
        """RAGEN's bandit prompt, adapted (the answer format belongs to the agent wrapper)."""
        a, b = self.arms
        return (
            "You are playing a bandit game. Goal: maximize your total reward by choosing which arm to pull.\n"
            "Game rules:\n"
            f"1. There are 2 arms, named {a} and {b}.\n"
            "2. Each arm has its own reward distribution, related to its name.\n"
            "3. Analyze the symbolic meaning of each arm's name to guess how its reward distribution might behave.\n"
            "4. Based on the symbolic meaning of their names, which arm do you think is more likely to give higher"
            f" rewards on average? Choose between {a} and {b}."
        )

    def observation(self) -> str:
        """The arms in this episode's order, plus the pull and its payoff once made."""
        text = f"Arms: {self.arms[0]}, {self.arms[1]}"
        if self.pulled is not None:
            text += f"\n{self.pulled}: {self.payoff:g} points"
        return text

    def _info(self, valid: bool | None = None) -> dict:
        info = {
            "valid_actions": [] if self.pulled is not None else list(self.arms),
            "state_key": self.observation(),
            "success": self.pulled == self.high_arm,
        }
        if valid is not None:
            info["action_is_valid"] = valid
            info["action_is_effective"] = valid
        return info

    def oracle_turn(self, turns_left: int, actions_left: int, max_actions_per_turn: int) -> list[str]:
        """``[high_arm]`` while the arm is still to be pulled and any budget is left, else ``[]``."""
        if self.pulled is not None or min(turns_left, actions_left, max_actions_per_turn) <= 0:
            return []
        return [self.high_arm]

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'.")
            return None
        if self.render_mode == "ansi":
            return self.observation()
        img = render.canvas(96, 160, (245, 245, 245))
        for i, arm in enumerate(self.arms):
            left, color = 20 + 70 * i, _BAR_COLORS[i]
            if self.pulled is not None and arm != self.pulled:
                color = tuple((c + 3 * 245) // 4 for c in color)  # dim the arm not pulled
            if arm == self.pulled:
                render.fill_rect(img, 12, left - 4, 76, 58, (40, 40, 40))
                render.fill_rect(img, 14, left - 2, 72, 54, (255, 255, 255))
            render.fill_rect(img, 16, left, 68, 50, color)
        return img
