"""The first-hit shopper: a scripted demonstrator whose every action copies a string from the page.

From the current page:

- search page: ``search[<the instruction, as the page shows it>]``;
- results page: open the first hit (``click[<its code>]``, the first product in the page's action list);
- product page: click, one a turn and in the instruction's order, each option value the instruction names
  (``"color: purple"`` -> ``click[purple]``) that is offered and not yet selected, then ``click[buy now]``; with
  one action of the budget left, buy;
- a description, features or reviews page: ``click[< prev]``.

It is a demonstrator for small models, not an oracle: it buys the first hit whether or not it matches, where the
oracle (``oracle.py``) plans with the goal and the catalog and buys the best product it can reach. What it gains is
that a model imitating it never has to guess: each action is a copy of the instruction, of the first product code in
the action list, or of an option value the instruction names, where the oracle's query reorders the instruction's
words and its choice among the hits depends on the catalog, which the page does not show. On the bundled store it
scores a mean reward of 0.966 (success 0.858) on validation goals 0..399 under RAGEN's 9 actions
(``benchmarks/webshop_strategies.py``).
"""

from __future__ import annotations

import re

from agentgym_bench.envs.webshop.session import BACK, BUY, ITEM, NEXT, PREV, RESULTS, SEARCH, SUB, WebShopSession

NAVIGATION = (BACK, NEXT, PREV)


def named_options(instruction: str, options: dict[str, list[str]]) -> list[tuple[str, str]]:
    """``(name, value)`` of each offered option whose ``"name: value"`` the instruction contains, in the
    instruction's order (at most one value a name; case-insensitive). The value must end where the instruction's
    does (at a comma or the end): ``"size: 6.5"`` names ``6.5``, not ``6``; ``"color: rose gold"`` not ``rose``."""
    text = instruction.lower()
    found = []
    for name, values in options.items():
        for value in values:
            match = re.search(rf"{re.escape(name.lower())}: {re.escape(value.lower())}(?=,|$)", text)
            if match:
                found.append((match.start(), name, value))
                break
    return [(name, value) for _, name, value in sorted(found)]


class FirstHitShopper:
    """Plans one action at a time for one :class:`~agentgym_bench.envs.webshop.session.WebShopSession` (the same
    interface as :class:`~agentgym_bench.envs.webshop.oracle.OracleShopper`)."""

    def __init__(self, session: WebShopSession):
        self.session = session

    def next_actions(self, budget: int, max_actions: int) -> list[str]:
        """The next action (one, whatever ``max_actions``): the shopper replans from each page."""
        s = self.session
        if s.done or budget <= 0 or max_actions <= 0:
            return []
        if s.page == SEARCH:
            return [f"search[{s.goal['instruction_text']}]"]
        if s.page == RESULTS:
            hits = [c for c in s.available_actions()["clickables"] if c not in NAVIGATION]
            return [f"click[{hits[0]}]" if hits else f"click[{BACK}]"]
        if s.page == SUB:
            return [f"click[{PREV}]"]
        assert s.page == ITEM, s.page
        if budget > 1:
            options = s.catalog.products[s.product]["options"]
            for name, value in named_options(s.goal["instruction_text"], options):
                if s.options.get(name) != value:
                    return [f"click[{value}]"]
        return [f"click[{BUY}]"]
