"""FrozenLake as a core text game (RAGEN's random-map, slippery variant)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from agentgym_bench.envs import arguments, render
from agentgym_bench.envs.frozen_lake_oracle import OpenLoopPlanner
from agentgym_bench.envs.frozen_lake_rules import (
    ACTIONS,
    generate_map,
    sample_direction,
    step_position,
    transition_matrices,
)
from agentgym_bench.seeds import seed_content_split
from agentgym_bench.spaces import text_space

LEGEND = "P: player, _: frozen ice, O: hole, G: goal, X: player in a hole, √: player on the goal"
_LOOKUP = {name.lower(): i for i, name in enumerate(ACTIONS)}
_COLORS = {"F": (190, 225, 245), "S": (190, 225, 245), "H": (20, 40, 110), "G": (230, 180, 40)}
_PLAYER = (210, 40, 40)
MAX_SIZE = 32
"""Largest map side: the oracle's transition table holds 4 x cells² floats (33 MB at 32x32, 537 MB at 64x64)."""


class FrozenLakeGame(gym.Env):
    """Cross a frozen lake from the start to the goal without falling into a hole; the ice may be slippery.

    ## Description
    RAGEN's FrozenLake: a new random ``size`` x ``size`` map every episode. Each tile is frozen with probability
    ``p`` and a hole otherwise; start and goal are two distinct random cells; the map is resampled until a path of
    frozen tiles joins them. On slippery ice a move goes in the intended direction with probability
    ``success_rate`` and in each of the two perpendicular directions with probability ``(1 - success_rate) / 2``,
    never backwards; a move into the border leaves the player in place. The rules are our own (not a subclass of
    Gymnasium's ``FrozenLakeEnv``) and match Gymnasium's slippery dynamics.

    ## Action Space
    One word, case-insensitive, surrounding whitespace ignored: ``Left``, ``Down``, ``Right`` or ``Up``
    (``info["valid_actions"]``, in that order; empty once the episode has ended). Anything else changes nothing,
    gives reward 0 and ``info["action_is_valid"] = False``.

    ## Observation Space
    The grid, one line per row, RAGEN's symbols (the start cell renders as ``_``)::

        _O__
        _P__
        __G_
        ____

    ``P`` player, ``_`` frozen ice, ``O`` hole, ``G`` goal, ``X`` player in a hole, ``√`` player on the goal.
    ``info["state_key"]`` is the same text (it determines the state).

    ## Rewards
    +1 on entering the goal, 0 otherwise.

    ## Episode End
    Terminated when the player enters the goal (``info["success"] = True``) or a hole. Never truncated: turn and
    action budgets belong to the agent wrapper.

    ## Arguments
    - ``size=4``: side of the square map, 2..32 (the oracle's transition table grows as the fourth power).
    - ``p=0.8``: probability that a tile is frozen, in (0, 1] (RAGEN's docstring wrongly calls it the hole
      probability).
    - ``is_slippery=True``: whether moves can slip (a ``bool``; strings such as ``"no"`` are refused).
    - ``success_rate=1/3``: probability that a slippery move goes where intended, in [0, 1].
    - ``render_mode=None``: ``"ansi"`` (the grid text) or ``"rgb_array"`` (32-pixel cells: ice light blue, holes dark
      blue, goal gold, player a red disc).

    ## Splits
    A map with its start and goal (:func:`~agentgym_bench.envs.frozen_lake_rules.map_text`) belongs to one content
    split by its hash (:func:`agentgym_bench.seeds.content_split`): 10% of maps are test maps, 10% validation maps,
    80% training maps, and a seed draws only maps of its own split (held-out test seeds: test maps; validation seeds
    0..9,999: validation maps; the rest: training maps), slippery or not, so the slippery and no-slip envs share
    their test maps. ``reset()`` without a seed keeps the split of the last seeded reset (training maps before any).
    agentgym-v1's retired test seeds (1,000,000,000..1,000,999,999) draw any map, as all seeds did before. A size
    whose split holds no solvable map (possible at 2x2) raises ``RuntimeError`` at reset. A seeded reset of a
    validation or test seed remembers which draw it accepted (:mod:`agentgym_bench.envs.draw_cache`), so resetting
    that seed again draws one map, not about ten; the map and the slips that follow are the same either way.

    ## Oracle
    :meth:`oracle_turn` plays optimally under the slip model and the agent's budgets: each turn the agent commits to
    up to ``max_actions_per_turn`` actions executed open-loop, with ``turns_left`` turns and ``actions_left`` actions
    left. The finite-horizon problem is solved exactly
    (:class:`~agentgym_bench.envs.frozen_lake_oracle.OpenLoopPlanner`); :meth:`oracle_value` is its success
    probability from the current state.

    ## Version History
    - v0: initial version (RAGEN's random maps, symbols and slip model; instructions with RAGEN's typos fixed, its
      example answer left to the wrapper's template and a sentence on slipping added; ``info["variant"]`` names
      slippery ice, so a prompt without the instructions still tells the two apart); maps were made
      content-disjoint by split (before, every seed drew any map: test maps of agentgym-v1 also occurred among
      training seeds). Episodes of agentgym-v1's test seeds are unchanged.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        size: int = 4,
        p: float = 0.8,
        is_slippery: bool = True,
        success_rate: float = 1.0 / 3.0,
        render_mode: str | None = None,
    ):
        size = arguments.integer("size", size, low=2, high=MAX_SIZE)
        p = arguments.number("p", p, low=0.0, high=1.0, low_open=True)  # the probability that a tile is frozen
        is_slippery = arguments.boolean("is_slippery", is_slippery)
        success_rate = arguments.number("success_rate", success_rate, low=0.0, high=1.0)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r} must be None or one of {self.metadata['render_modes']}")
        self.size = int(size)
        self.p = float(p)
        self.is_slippery = bool(is_slippery)
        self.success_rate = float(success_rate)
        self.render_mode = render_mode
        self.observation_space = text_space(self.size * (self.size + 1))
        self.action_space = text_space(32)
        self.desc: tuple[str, ...] = ()
        self.pos = (0, 0)
        self._planners: dict[int, OpenLoopPlanner] = {}
        self.content_split: str | None = "train"  # the split of the maps reset draws (seeds.seed_content_split)

    # ----- game -----------------------------------------------------------------------------------------------

    @property
    def tile(self) -> str:
        """The map tile under the player: ``S``, ``F``, ``H`` or ``G``."""
        return self.desc[self.pos[0]][self.pos[1]]

    @property
    def terminated(self) -> bool:
        """Whether the player is in a hole or on the goal."""
        return self.tile in "HG"

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        self.content_split = seed_content_split(seed, self.content_split)
        self.desc, self.pos = generate_map(self.size, self.p, self.np_random, self.content_split,
                                           remember=seed is not None)
        self._planners = {}
        info = self._info()
        info["instructions"] = self.instructions()
        info["legend"] = LEGEND
        info["variant"] = "slippery ice" if self.is_slippery and self.success_rate < 1.0 else ""
        return self.grid_text(), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        if not self.desc:
            raise RuntimeError("call reset() before step()")
        direction = _LOOKUP.get(action.strip().lower()) if isinstance(action, str) else None
        if direction is None or self.terminated:
            return self.grid_text(), 0.0, self.terminated, False, self._info(valid=False, effective=False)
        actual = sample_direction(direction, self.is_slippery, self.success_rate, self.np_random)
        old, self.pos = self.pos, step_position(self.pos, actual, self.size)
        reward = 1.0 if self.tile == "G" else 0.0
        return self.grid_text(), reward, self.terminated, False, self._info(valid=True, effective=self.pos != old)

    def instructions(self) -> str:
        """What the game is and how to win: RAGEN's wording with its typos fixed, without its example answer (the
        agent wrapper's template says how to answer), and, on slippery ice, a sentence on what slipping does."""
        text = "You are solving the FrozenLake puzzle. Avoid the holes and go to the goal."
        if self.is_slippery and self.success_rate < 1.0:
            text += (
                " The ice is slippery: you may move in an unintended direction, to the side of the one you chose"
                " (never backwards)."
            )
        return text

    def grid_text(self) -> str:
        """The observation: one line per row in RAGEN's symbols."""
        lines = []
        for r, row in enumerate(self.desc):
            chars = []
            for c, tile in enumerate(row):
                if (r, c) == self.pos:
                    chars.append({"H": "X", "G": "√"}.get(tile, "P"))
                else:
                    chars.append({"H": "O", "G": "G"}.get(tile, "_"))
            lines.append("".join(chars))
        return "\n".join(lines)

    def _info(self, valid: bool | None = None, effective: bool | None = None) -> dict:
        info = {
            "valid_actions": [] if self.terminated else list(ACTIONS),
            "state_key": self.grid_text(),
            "success": self.tile == "G",
        }
        if valid is not None:
            info["action_is_valid"] = valid
            info["action_is_effective"] = effective
        return info

    # ----- oracle ---------------------------------------------------------------------------------------------

    def _planner(self, max_actions_per_turn: int) -> OpenLoopPlanner:
        if max_actions_per_turn not in self._planners:
            trans = transition_matrices(self.desc, self.is_slippery, self.success_rate)
            flat = "".join(self.desc)
            alive = np.array([tile not in "HG" for tile in flat])
            self._planners[max_actions_per_turn] = OpenLoopPlanner(trans, flat.index("G"), alive, max_actions_per_turn)
        return self._planners[max_actions_per_turn]

    def oracle_turn(self, turns_left: int, actions_left: int, max_actions_per_turn: int) -> list[str]:
        """The optimal action words for this turn (empty if the game is over or no budget is left)."""
        if self.terminated or turns_left <= 0 or actions_left <= 0:
            return []
        cell = self.pos[0] * self.size + self.pos[1]
        seq, _ = self._planner(max_actions_per_turn).best_sequence(cell, turns_left, actions_left)
        return [ACTIONS[a] for a in seq]

    def oracle_value(self, turns_left: int, actions_left: int, max_actions_per_turn: int) -> float:
        """Probability that optimal play from the current state reaches the goal within the budgets."""
        if self.terminated:
            return float(self.tile == "G")
        cell = self.pos[0] * self.size + self.pos[1]
        return float(self._planner(max_actions_per_turn).values(turns_left, actions_left)[cell])

    # ----- rendering ------------------------------------------------------------------------------------------

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'.")
            return None
        if not self.desc:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "ansi":
            return self.grid_text()
        cell = 32
        img = render.grid_image([[_COLORS[tile] for tile in row] for row in self.desc], cell=cell)
        render.fill_disc(img, self.pos[0] * cell + cell / 2, self.pos[1] * cell + cell / 2, cell * 0.32, _PLAYER)
        return img
