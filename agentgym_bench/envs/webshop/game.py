"""WebShop as a core text game, on the bundled offline store or on a WebShop server over HTTP."""

from __future__ import annotations

import json
from typing import Any, Protocol

import gymnasium as gym

from agentgym_bench.envs import arguments
from agentgym_bench.envs.webshop.catalog import SPLIT_SIZES, load_catalog
from agentgym_bench.envs.webshop.client import WebShopClient
from agentgym_bench.envs.webshop.first_hit import FirstHitShopper
from agentgym_bench.envs.webshop.oracle import OracleShopper
from agentgym_bench.envs.webshop.pages import SEP
from agentgym_bench.envs.webshop.session import (
    BACK,
    BUY,
    DONE,
    ITEM,
    ITEM_BUTTONS,
    NEXT,
    PREV,
    RESULTS,
    SEARCH,
    SUB,
    SUB_CLICKS,
    Action,
    WebShopSession,
    parse_action,
)
from agentgym_bench.seeds import TEST_SEEDS, seed_split
from agentgym_bench.spaces import sanitize, text_space

MAX_OBSERVATION_LENGTH = 16_384
MAX_ACTION_LENGTH = 2_048
SPLITS = ("test", "validation", "train")
BY_SEED = "by_seed"
BACKENDS = ("local", "http")

INSTRUCTIONS = (
    "You are web shopping. Buy the product that best matches the instruction shown on the page. Each turn you see "
    "the current page and the actions you can take now. Use search[keywords] on the search page, and click[value] "
    "where value is one of the listed clickable values: a product id, an option such as a size or color, "
    "description, features, reviews, buy now, back to search, next > or < prev. The episode ends when you "
    "click[buy now]; the reward, from 0 to 1, measures how well the product, the selected options and the price "
    "match the instruction, and 1 is a success.\n"
    "Buy a product before your actions run out; it does not have to match the instruction perfectly. "
    "Search terms should not include details like size and color. Do not search more than twice. "
    "Prefer a product on the current page over going to the next page. "
    "If you have fewer than 3 actions left, buy the product you are looking at. "
    "If a matching option exists, click it (one option per action) before click[buy now]."
)


class Backend(Protocol):
    """Where the pages come from: :class:`LocalBackend` or :class:`HttpBackend`."""

    def reset(self, goal_index: int) -> str: ...
    def step(self, action: str) -> tuple[str, float, bool]: ...
    def available_actions(self) -> dict[str, Any]: ...
    def close(self) -> None: ...


class LocalBackend:
    """The bundled store, in this process (:class:`~agentgym_bench.envs.webshop.session.WebShopSession`)."""

    def __init__(self) -> None:
        self.session = WebShopSession(load_catalog())

    def reset(self, goal_index: int) -> str:
        return self.session.reset(goal_index)

    def step(self, action: str) -> tuple[str, float, bool]:
        reward, done, _ = self.session.step(action)
        return self.session.observation(), reward, done

    def available_actions(self) -> dict[str, Any]:
        return self.session.available_actions()

    def close(self) -> None:
        pass


class HttpBackend:
    """A WebShop server speaking AgentGym's protocol: ``webshop-serve`` or the real WebShop (see docs/webshop.md).

    One server env per backend, created at the first reset and closed by :meth:`close`.
    """

    def __init__(self, base_url: str, timeout: float, retries: int):
        self.client = WebShopClient(base_url, timeout=timeout, retries=retries)
        self.env_idx: int | None = None

    def reset(self, goal_index: int) -> str:
        if self.env_idx is None:
            self.env_idx = self.client.create()
        return self.client.reset(self.env_idx, goal_index)

    def step(self, action: str) -> tuple[str, float, bool]:
        assert self.env_idx is not None, "reset() first"
        return self.client.step(self.env_idx, action)

    def available_actions(self) -> dict[str, Any]:
        assert self.env_idx is not None, "reset() first"
        return self.client.available_actions(self.env_idx)

    def close(self) -> None:
        try:
            if self.env_idx is not None:
                self.client.close_env(self.env_idx)
        except Exception:  # noqa: BLE001 - the server may be gone; closing must not fail
            pass
        finally:
            self.env_idx = None
            self.client.close()


def ragen_actions(available: dict[str, Any]) -> list[str]:
    """The available actions as RAGEN lists them: ``search[<content>]`` if there is a search bar, then ``click[x]``."""
    actions = ["search[<content>]"] if available["has_search_bar"] else []
    return actions + [f"click[{c}]" for c in available["clickables"] if c != "search"]


def option_names(page: str, clickables: list[str]) -> dict[str, str]:
    """Option value -> option name, read off an item page (each option's name precedes its clickable values)."""
    values = set(clickables) - set(ITEM_BUTTONS)
    segments = [s.strip() for s in page.split(SEP)]
    lowered = [s.lower() for s in segments]
    if PREV not in lowered:
        return {}
    names: dict[str, str] = {}
    name = None
    for i in range(lowered.index(PREV) + 1, len(segments)):
        if lowered[i] in values and name is not None:
            names[lowered[i]] = name
        elif i + 1 < len(segments) and lowered[i + 1] in values:
            name = lowered[i]
        else:
            break
    return names


class WebShopGame(gym.Env):
    """Shop for a product matching an instruction: search, browse results, pick options, buy.

    ## Description
    WebShop (Yao et al., 2022) as a core text game. An episode is one shopping instruction (a goal) such as
    "i need non slip men's running shoes with memory foam with color: black, and size: 9, and price lower than
    60.00 dollars". The agent searches the store, pages through results (10 per page, top 50), opens products,
    reads their description, features or reviews, selects options and buys. The default ``backend="local"`` runs
    the bundled offline store (2,000 generated products, 3,292 instructions, BM25 search; see
    ``agentgym_bench/envs/webshop/catalog.py``); ``backend="http"`` plays on a server speaking AgentGym's WebShop
    protocol: ``agentgym-bench webshop-serve`` (same store, other processes or machines) or the real 1.18M-product
    WebShop (``docs/webshop.md``). Against ``webshop-serve`` both backends give the same episodes.

    ## Action Space
    Open text: ``search[keywords]`` (on the search page only) or ``click[value]`` with ``value`` one of the page's
    clickable values (matched case-insensitively; surrounding whitespace ignored). There is no
    ``info["valid_actions"]``; the observation lists the actions available now, RAGEN style, as does
    ``info["available_actions"]``. Anything else (unknown targets, searching off the search page, queries over 200
    characters or with ``[]{}\\|;`~^``, any string over 2,048 characters) is invalid: nothing changes, reward 0,
    ``info["action_is_valid"] = False``.

    ## Observation Space
    The page in WebShop's ``text`` mode, then the available actions::

        Instruction: [SEP] i need ... [SEP] Back to Search [SEP] < Prev [SEP] color [SEP] black [SEP] red [SEP]
        size [SEP] 8 [SEP] 9 [SEP] Norvia Non Slip Men's Running Shoes [SEP] Price: $54.99 [SEP] Rating: N.A.
        [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now
        You must choose from these actions: click[back to search], click[< prev], click[description],
        click[features], click[reviews], click[buy now], click[black], click[red], click[8], click[9].

    (one line for the page, one for the actions). After buying: the purchase and the score, no actions.

    ## Rewards
    0 until ``click[buy now]``, then WebShop's score in [0, 1]:
    ``r_type * (attributes matched + options matched + price within bound) / (attributes + options + 1)``
    (``agentgym_bench/envs/webshop/reward.py``). ``info["success"]`` is ``reward == 1``.

    ## Episode End
    Terminated at ``click[buy now]``. Never truncated here: the turn and action budgets (RAGEN: 9 turns, 1 action
    each) belong to the agent wrapper.

    ## Arguments
    - ``split="by_seed"``: which goals seeds map to. ``"test"`` (500 goals), ``"validation"`` (1,000) or ``"train"``
      (the rest): ``reset(seed=s)`` plays goal ``s % len(split)`` of the split (RAGEN's mapping);
      ``reset(options={"goal_index": i})`` plays goal ``i`` of the split. ``"by_seed"``: the seed's range picks the
      split (:func:`agentgym_bench.seeds.seed_split`): a held-out test seed (agentgym-v2's from 2,000,000,000,
      agentgym-v1's retired ones from 1,000,000,000) plays the test goals, a validation seed (0..9,999) the
      validation goals, a training seed the training goals, each as above (so the test and validation suites'
      seeds give the same episodes as ``split="test"`` and ``"validation"``); ``goal_index`` needs
      a named split. No seed draws a goal of the split from ``np_random``; with ``"by_seed"``, of the split of the
      last seeded reset (the training goals if there was none), as every env of the package keeps its last seed's
      content split (:func:`agentgym_bench.seeds.seed_content_split`), so a vector env's autoreset after a held-out
      seed stays held out. ``info["split"]`` says which split the episode's goal is from. The test goals are held
      out: with any split, a reset that would play a test goal where the last seed was not a held-out test seed (a
      training or validation seed, or none) raises ``ValueError``. So is their content: a training goal that asks
      for exactly what a test or validation goal asks for (:meth:`~agentgym_bench.envs.webshop.catalog.Catalog.
      held_out_twins`: 3 of the bundled store's 1,792) is never played; a seed or draw that lands on one plays the
      next training goal instead, and ``goal_index`` naming one raises ``ValueError``.
    - ``backend="local"``: ``"local"`` or ``"http"``.
    - ``base_url=None``: the server for ``backend="http"`` (required then, e.g. ``"http://127.0.0.1:36001"``).
    - ``timeout=10.0``, ``retries=2``: seconds allowed for one HTTP request attempt (connect to last byte) and retries
      (0..10); one call ends within ``(retries + 1) * timeout`` plus the backoff (see ``client.py``).
    - ``num_goals=None``: goals on the HTTP server, needed for the train split of a server other than
      ``webshop-serve`` (whose count is the default). Split ranges: test ``[0, 500)``, validation ``[500, 1500)``,
      train ``[1500, num_goals)``.
    - ``render_mode=None``: ``"ansi"`` returns the observation text.

    ## Oracle
    :meth:`oracle_turn` (local backend only): the planner of ``agentgym_bench/envs/webshop/oracle.py`` searches from
    the goal, and buys the best product it can reach with the goal's options within the budget.
    :meth:`first_hit_turn` (local backend only): a demonstrator for small models (``first_hit.py``): searches the
    instruction, opens the first hit, clicks the option values the instruction names, buys.

    ## Version History
    - v0: initial version. The default ``split`` became ``"by_seed"`` (it was ``"test"``, under which training
      seeds played test goals); episodes of test and validation seeds are unchanged; test goals refuse non-test
      seeds (``split="test"`` let any seed play them). Since 2026-12-02 training seeds skip the three training goals
      whose requirements repeat test goals' (seeds 10,260, 10,288 and 10,604, of the documented imitation recipe's
      range, played them before).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, split: str = BY_SEED, backend: str = "local", base_url: str | None = None,
                 timeout: float = 10.0, retries: int = 2, num_goals: int | None = None,
                 render_mode: str | None = None):
        if split not in (*SPLITS, BY_SEED):
            raise ValueError(f"split={split!r} must be one of {(*SPLITS, BY_SEED)}")
        if backend not in BACKENDS:
            raise ValueError(f"backend={backend!r} must be one of {BACKENDS}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r} must be None or one of {self.metadata['render_modes']}")
        if num_goals is not None:  # test and validation take the first goals
            num_goals = arguments.integer("num_goals", num_goals, low=sum(SPLIT_SIZES.values()) + 1)
        timeout = arguments.number("timeout", timeout, low=0.0, low_open=True)
        retries = arguments.integer("retries", retries, low=0)
        self.split, self.render_mode = split, render_mode
        self.seeded_split = "train"  # seeds.seed_split of the last seeded reset, which unseeded resets keep
        if backend == "local":
            if base_url is not None:
                raise ValueError(f"base_url={base_url!r} is only used with backend='http'")
            if num_goals is not None:
                raise ValueError(f"num_goals={num_goals!r} is only used with backend='http'")
            self.backend: Backend = LocalBackend()
        else:
            if base_url is None:
                raise ValueError("base_url is required with backend='http', e.g. base_url='http://127.0.0.1:36001'")
            self.backend = HttpBackend(base_url, timeout, retries)
        self.num_goals = num_goals
        self._skipped = load_catalog().held_out_twins() if num_goals is None else frozenset()  # the bundled store's
        self.observation_space = text_space(MAX_OBSERVATION_LENGTH)
        self.action_space = text_space(MAX_ACTION_LENGTH)
        self.goal_index = -1
        self._page, self._available = "", {"has_search_bar": False, "clickables": []}
        self._kind, self._keywords, self._selected = DONE, "", {}
        self._obs, self._done = "", True
        self._planners: dict[str, OracleShopper | FirstHitShopper] = {}

    def split_range(self, split: str) -> tuple[int, int]:
        """``(start, stop)`` goal indices of ``split`` (an HTTP server's train split reads the bundled store's goal
        count only when ``num_goals`` is not given)."""
        if isinstance(self.backend, LocalBackend):
            return self.backend.session.catalog.split_range(split)
        test, validation = SPLIT_SIZES["test"], SPLIT_SIZES["validation"]
        if split == "test":
            return 0, test
        if split == "validation":
            return test, test + validation
        return test + validation, self.num_goals if self.num_goals is not None else len(load_catalog().goals)

    # ----- state tracking (identical for both backends) --------------------------------------------------------------

    def _track(self, action: Action) -> None:
        """Follow the page kind, the last search and the selected options (WebShop's text pages do not show them)."""
        kind, arg = self._kind, action.arg
        if action.kind == "search":
            self._kind, self._keywords, self._selected = RESULTS, arg, {}
        elif arg == BACK:
            self._kind, self._keywords, self._selected = SEARCH, "", {}
        elif arg == BUY:
            self._kind = DONE
        elif kind == RESULTS:
            self._kind = RESULTS if arg in (NEXT, PREV) else ITEM
        elif kind == SUB:
            self._kind = ITEM
        elif arg == PREV:
            self._kind, self._selected = RESULTS, {}
        elif arg in SUB_CLICKS:
            self._kind = SUB
        else:
            name = option_names(self._page, self._available["clickables"]).get(arg, arg)
            self._selected = {**self._selected, name: arg}

    def _state_key(self) -> str:
        return f"{self._page}\nquery: {self._keywords}\nselected: {json.dumps(self._selected, sort_keys=True)}"

    def _observe(self) -> str:
        actions = ragen_actions(self._available)
        if not actions:
            return sanitize(self._page, MAX_OBSERVATION_LENGTH)
        text = f"{self._page}\nYou must choose from these actions: {', '.join(actions)}."
        return sanitize(text, MAX_OBSERVATION_LENGTH)

    def _info(self, success: bool = False) -> dict[str, Any]:
        return {"state_key": self._state_key(), "success": success, "goal_index": self.goal_index,
                "page": self._kind, "available_actions": ragen_actions(self._available)}

    # ----- gymnasium API ---------------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if options and "goal_index" in options and self.split == BY_SEED:
            raise ValueError(f"options['goal_index'] needs a named split (split='test', 'validation' or 'train'); "
                             f"with split={BY_SEED!r} the seed picks the split")
        if seed is not None:
            self.seeded_split = seed_split(seed)
        split = self.seeded_split if self.split == BY_SEED else self.split
        if split == "test" and self.seeded_split != "test":
            raise ValueError(f"the test goals are held out: only a held-out test seed plays them (reset(seed=s), s "
                             f"from {TEST_SEEDS.start:,}, and unseeded resets after one); this reset's seed is "
                             f"{seed!r}. Train and tune on the default split='by_seed' with training and validation "
                             "seeds")
        start, stop = self.split_range(split)
        size = stop - start
        if options and "goal_index" in options:
            index = options["goal_index"]
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < size:
                raise ValueError(f"options['goal_index']={index!r} must be an integer in [0, {size}) "
                                 f"(the {self.split} split)")
            if start + index in self._skipped and split == "train":
                raise ValueError(f"training goal {index} (goal {start + index}) asks for what a held-out goal asks "
                                 "for: it is left out of training")
        elif seed is not None:
            index = seed % size
        else:
            index = int(self.np_random.integers(size))
        while split == "train" and start + index in self._skipped:  # a held-out goal's twin: the next one instead
            index = (index + 1) % size
        self.goal_index = start + index
        self._page = self.backend.reset(self.goal_index)
        self._available = self.backend.available_actions()
        self._kind, self._keywords, self._selected, self._done = SEARCH, "", {}, False
        self._obs = self._observe()
        info = self._info()
        info["instructions"] = INSTRUCTIONS
        info["legend"] = ""
        info["split"] = split
        return self._obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.goal_index < 0:
            raise RuntimeError("call reset() before step()")
        parsed = None if self._done else parse_action(action, self._available["has_search_bar"],
                                                      self._available["clickables"])
        if parsed is None:
            info = self._info(success=False)
            info.update(action_is_valid=False, action_is_effective=False)
            return self._obs, 0.0, self._done, False, info
        before = self._state_key()
        page, reward, done = self.backend.step(parsed.text)
        self._track(parsed)
        self._page, self._done = page, bool(done)
        self._available = (self.backend.available_actions() if not self._done
                           else {"has_search_bar": False, "clickables": []})
        self._obs = self._observe()
        reward = float(reward) if self._done else 0.0
        info = self._info(success=self._done and reward >= 1.0 - 1e-9)
        info.update(action_is_valid=True, action_is_effective=self._state_key() != before)
        return self._obs, reward, self._done, False, info

    def render(self) -> str | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi'.")
            return None
        return self._obs

    def close(self) -> None:
        self.backend.close()

    # ----- oracle ----------------------------------------------------------------------------------------------------

    def oracle_turn(self, turns_left: int, actions_left: int, max_actions_per_turn: int) -> list[str]:
        """The oracle's actions for this turn, planned within ``min(actions_left, turns_left * per-turn)`` actions."""
        return self._planned_turn("oracle", turns_left, actions_left, max_actions_per_turn)

    def first_hit_turn(self, turns_left: int, actions_left: int, max_actions_per_turn: int) -> list[str]:
        """The first-hit shopper's action for this turn (``first_hit.py``: a demonstrator copying from the page)."""
        return self._planned_turn("first-hit", turns_left, actions_left, max_actions_per_turn)

    def _planned_turn(self, planner: str, turns_left: int, actions_left: int, max_actions_per_turn: int) -> list[str]:
        if not isinstance(self.backend, LocalBackend):
            raise NotImplementedError(f"the WebShop {planner} reads the goal and catalog, so it needs backend='local'")
        if self._done or turns_left <= 0:
            return []
        if planner not in self._planners:
            shopper = OracleShopper if planner == "oracle" else FirstHitShopper
            self._planners[planner] = shopper(self.backend.session)
        per_turn = max_actions_per_turn if planner == "oracle" else 1  # the first-hit shopper acts once a turn
        budget = min(actions_left, turns_left * per_turn)
        return self._planners[planner].next_actions(budget, min(max_actions_per_turn, actions_left))
