"""The rules of one WebShop shopping session: pages, clickable elements, transitions and the purchase reward.

This is WebShop's ``SimServer`` + ``SimBrowser`` state machine without HTML: the local backend of
:class:`~agentgym_bench.envs.webshop.game.WebShopGame` and every env of ``agentgym-bench webshop-serve`` run it.

Pages and what can be clicked on them (lower-case, as WebShop's ``get_available_actions`` lists them):

======== ===================================================================================================
search   the search bar (``has_search_bar``); clickables ``["search"]`` (never clickable itself)
results  ``back to search``, ``< prev`` (page > 1), ``next >`` (more results), the shown products' ASINs
item     ``back to search``, ``< prev``, ``description``, ``features``, ``reviews``, ``buy now``, option values
sub      (description, features or reviews) ``back to search``, ``< prev``
done     nothing
======== ===================================================================================================

Transitions follow WebShop: a search shows page 1 of the top 50 hits, 10 per page; ``next >``/``< prev`` page
through them; an ASIN opens its item page with no options selected; an option value selects it (replacing the
value chosen before for that option); ``< prev`` goes from a sub page to its item, from an item to its results
page; ``back to search`` starts over; ``buy now`` ends the session with WebShop's reward.

Action grammar (:func:`parse_action`): ``search[keywords]`` or ``click[value]``, case-insensitive, surrounding
whitespace ignored. Stricter than WebShop, and the same for every backend: a search is valid only on the search
page (WebShop also searches from other pages; RAGEN counts that invalid), with 1 to 200 printable ASCII characters,
at least one letter or digit, and none of ``[]{}\\|;`~^``; a click must name a clickable of the current page.
Anything else is invalid and changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentgym_bench.envs.webshop import pages
from agentgym_bench.envs.webshop.catalog import Catalog
from agentgym_bench.envs.webshop.reward import get_reward

MAX_ACTION_LENGTH = 512
MAX_QUERY_LENGTH = 200
FORBIDDEN_QUERY_CHARS = frozenset("[]{}\\|;`~^")
_ACTION = re.compile(r"(search|click)\s*\[(.*)\]", re.IGNORECASE | re.DOTALL)
_ALNUM = re.compile(r"[A-Za-z0-9]")

SEARCH, RESULTS, ITEM, SUB, DONE = "search", "results", "item", "sub", "done"
BACK, PREV, NEXT, BUY = (b.lower() for b in (pages.BACK_TO_SEARCH, pages.PREV_PAGE, pages.NEXT_PAGE, pages.BUY_NOW))
SUB_CLICKS = {name.lower(): name for name in pages.SUB_PAGES}
ITEM_BUTTONS = (BACK, PREV, *SUB_CLICKS, BUY)


@dataclass(frozen=True)
class Action:
    """A parsed, valid action: ``kind`` is ``"search"`` or ``"click"``; ``arg`` is lower-cased and trimmed."""

    kind: str
    arg: str

    @property
    def text(self) -> str:
        """The canonical action string, e.g. ``click[buy now]``."""
        return f"{self.kind}[{self.arg}]"


def valid_query(keywords: str) -> bool:
    """Whether ``keywords`` may be searched (see the module docstring)."""
    return (0 < len(keywords) <= MAX_QUERY_LENGTH and all(" " <= c <= "~" for c in keywords)
            and not FORBIDDEN_QUERY_CHARS.intersection(keywords) and _ALNUM.search(keywords) is not None)


def parse_action(action: Any, has_search_bar: bool, clickables: list[str]) -> Action | None:
    """The valid action ``action`` names on a page with these available actions, or ``None`` if it is invalid."""
    if not isinstance(action, str) or len(action) > MAX_ACTION_LENGTH:
        return None
    match = _ACTION.fullmatch(action.strip())
    if match is None:
        return None
    kind, arg = match.group(1).lower(), match.group(2).strip().lower()
    if kind == "search":
        return Action("search", " ".join(arg.split())) if has_search_bar and valid_query(arg) else None
    return Action("click", arg) if arg != "search" and arg in clickables else None


class WebShopSession:
    """One shopper's session on a :class:`~agentgym_bench.envs.webshop.catalog.Catalog`.

    Call :meth:`reset` with a goal index, then :meth:`step` with action strings. The state is plain attributes
    (``page``, ``keywords``, ``results``, ``page_num``, ``product``, ``options``, ``sub``, ``reward``), read by the
    oracle and the server.
    """

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.goal_index = -1
        self.goal: dict[str, Any] = {}
        self.page = DONE
        self.keywords = ""
        self.results: tuple[int, ...] = ()
        self.page_num = 1
        self.product = -1
        self.options: dict[str, str] = {}
        self.sub = ""
        self.reward = 0.0

    def reset(self, goal_index: int) -> str:
        """Start a session on goal ``goal_index`` (an index into ``catalog.goals``); returns the search page."""
        if not 0 <= goal_index < len(self.catalog.goals):
            raise ValueError(f"goal_index={goal_index!r} is out of range: "
                             f"the catalog has {len(self.catalog.goals)} goals")
        self.goal_index = int(goal_index)
        self.goal = self.catalog.goals[self.goal_index]
        self._to_search()
        self.reward = 0.0
        return self.observation()

    @property
    def done(self) -> bool:
        """Whether the session ended with a purchase."""
        return self.page == DONE

    def _to_search(self) -> None:
        self.page, self.keywords, self.results, self.page_num = SEARCH, "", (), 1
        self.product, self.options, self.sub = -1, {}, ""

    def _shown(self) -> list[int]:
        start = (self.page_num - 1) * pages.PRODUCT_WINDOW
        return list(self.results[start : start + pages.PRODUCT_WINDOW])

    def _option_names(self) -> dict[str, str]:
        """Option value -> option name on the current item (later names win on a clash, as in WebShop)."""
        return {v: name for name, values in self.catalog.products[self.product]["options"].items() for v in values}

    def available_actions(self) -> dict[str, Any]:
        """WebShop's ``{"has_search_bar": bool, "clickables": [str, ...]}`` for the current page."""
        clickables: list[str] = []
        if self.page == SEARCH:
            clickables = ["search"]
        elif self.page == RESULTS:
            clickables = [BACK]
            if self.page_num > 1:
                clickables.append(PREV)
            if self.page_num * pages.PRODUCT_WINDOW < len(self.results):
                clickables.append(NEXT)
            clickables += [self.catalog.products[i]["asin"].lower() for i in self._shown()]
        elif self.page == ITEM:
            clickables = [*ITEM_BUTTONS, *self._option_names()]
        elif self.page == SUB:
            clickables = [BACK, PREV]
        return {"has_search_bar": self.page == SEARCH, "clickables": clickables}

    def instruction_text(self) -> str:
        """The goal's instruction."""
        return self.goal.get("instruction_text", "")

    def observation(self) -> str:
        """The current page as WebShop ``text``-mode text."""
        instruction = self.instruction_text()
        if self.page == SEARCH:
            return pages.search_page(instruction)
        if self.page == RESULTS:
            shown = [self.catalog.products[i] for i in self._shown()]
            return pages.results_page(instruction, shown, self.page_num, len(self.results))
        product = self.catalog.products[self.product] if self.product >= 0 else {}
        if self.page == ITEM:
            return pages.item_page(instruction, product)
        if self.page == SUB:
            return pages.sub_page(instruction, product, self.sub)
        return pages.done_page(product.get("asin", ""), self.options, self.reward)

    def step(self, action: str) -> tuple[float, bool, bool]:
        """Apply ``action``; returns ``(reward, done, valid)``. Invalid actions (and any after the end) do nothing."""
        available = self.available_actions()
        parsed = parse_action(action, available["has_search_bar"], available["clickables"])
        if parsed is None or self.done:
            return 0.0, self.done, False
        if parsed.kind == "search":
            self.page, self.keywords, self.page_num = RESULTS, parsed.arg, 1
            self.results = self.catalog.search(parsed.arg)
            self.product, self.options = -1, {}
        else:
            self._click(parsed.arg)
        return self.reward if self.done else 0.0, self.done, True

    def _click(self, target: str) -> None:
        if target == BACK:
            self._to_search()
        elif self.page == RESULTS:
            if target in (NEXT, PREV):
                self.page_num += 1 if target == NEXT else -1
            else:
                self.page, self.product, self.options = ITEM, self.catalog.by_asin[target.upper()], {}
        elif self.page == SUB:
            self.page = ITEM  # target is "< prev"
        elif target == PREV:
            self.page, self.product, self.options = RESULTS, -1, {}
        elif target in SUB_CLICKS:
            self.page, self.sub = SUB, SUB_CLICKS[target]
        elif target == BUY:
            product = self.catalog.products[self.product]
            self.reward = get_reward(product, self.goal, product["price"], self.options).reward
            self.page = DONE
        else:
            self.options[self._option_names()[target]] = target
