"""The oracle shopper: a planner with privileged access to the goal and the catalog.

From the current page it enumerates every way to finish within the action budget and takes the best:

- buy the product on the current page (selecting, one click each, the options that match the goal);
- go back to the current results and open any of the (up to 50) hits, paging with ``next >``/``< prev``;
- start over (``back to search`` unless already there) with one of three searches an agent could type from the
  instruction: ``"<product type> <goal attributes>"``, the instruction without its options and price, or the
  product type alone.

Each plan's reward is computed exactly with WebShop's reward function (the environment is deterministic), and the
highest reward wins, then the shortest plan. With RAGEN's budget (9 actions) a plan is at most: search, paging,
open, options, buy. The best attainable reward is 1 whenever a matching product is reachable, which the target
product of every goal is unless the searches rank it below 50th.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgym_bench.envs.webshop.catalog import TYPES_BY_QUERY
from agentgym_bench.envs.webshop.pages import PRODUCT_WINDOW
from agentgym_bench.envs.webshop.reward import get_reward, option_matches
from agentgym_bench.envs.webshop.session import (
    BACK,
    BUY,
    ITEM,
    NEXT,
    PREV,
    RESULTS,
    SEARCH,
    SUB,
    WebShopSession,
    valid_query,
)


@dataclass(frozen=True)
class Plan:
    """A complete action sequence from the current page and the reward it ends with."""

    reward: float
    actions: tuple[str, ...]


def _better(a: Plan | None, b: Plan | None) -> Plan | None:
    """The higher-reward plan; on a tie the shorter one; on a full tie ``a`` (found first)."""
    if a is None or b is None:
        return a or b
    if b.reward > a.reward + 1e-12 or (abs(b.reward - a.reward) <= 1e-12 and len(b.actions) < len(a.actions)):
        return b
    return a


def goal_queries(goal: dict[str, Any]) -> list[str]:
    """The searches the oracle considers for ``goal`` (valid queries, no duplicates)."""
    ptype = TYPES_BY_QUERY.get(goal["query"])
    kind = ptype.plural if ptype else goal["query"]
    text = goal["instruction_text"].split(", and price lower than")[0]
    if goal["goal_options"]:
        text = text.split(f" with {next(iter(goal['goal_options']))}:")[0]
    candidates = [f"{kind} {' '.join(goal['attributes'])}", text, kind]
    queries: list[str] = []
    for q in candidates:
        q = " ".join(q.lower().split())[:200]
        if valid_query(q) and q not in queries:
            queries.append(q)
    return queries


class OracleShopper:
    """Plans for one :class:`~agentgym_bench.envs.webshop.session.WebShopSession` (caches per goal)."""

    def __init__(self, session: WebShopSession):
        self.session = session
        self._goal_index = -1
        self._finish: dict[tuple[int, tuple[tuple[str, str], ...]], tuple[list[str], list[float]]] = {}

    def _option_clicks(self, product: int, selected: dict[str, str]) -> tuple[list[str], list[float]]:
        """Option values to click on ``product`` (each adds a matching option) and the reward after k clicks."""
        key = (product, tuple(sorted(selected.items())))
        if key not in self._finish:
            goal = self.session.goal
            record = self.session.catalog.products[product]
            wanted = goal["goal_options"]
            values = list(wanted.values()) if isinstance(wanted, dict) else list(wanted)
            clicks: list[str] = []
            for name, offered in record["options"].items():
                current = selected.get(name)
                if current is not None and option_matches(record, values, {name: current}):
                    continue
                good = [v for v in offered if option_matches(record, values, {name: v})]
                good.sort(key=lambda v: v not in values)  # prefer the exact value
                if good:
                    clicks.append(good[0])
            names = {v: n for n, offered in record["options"].items() for v in offered}
            rewards = []
            for k in range(len(clicks) + 1):
                chosen = dict(selected)
                chosen.update({names[v]: v for v in clicks[:k]})
                rewards.append(get_reward(record, goal, record["price"], chosen).reward)
            self._finish[key] = (clicks, rewards)
        return self._finish[key]

    def _finish_plan(self, product: int, selected: dict[str, str], prefix: tuple[str, ...],
                     budget: int) -> Plan | None:
        room = budget - len(prefix) - 1  # actions left for option clicks after the prefix and "buy now"
        if room < 0:
            return None
        clicks, rewards = self._option_clicks(product, selected)
        k = min(room, len(clicks))
        return Plan(rewards[k], prefix + tuple(f"click[{v}]" for v in clicks[:k]) + (f"click[{BUY}]",))

    def _results_plan(self, hits: tuple[int, ...], page_num: int, prefix: tuple[str, ...], budget: int) -> Plan | None:
        best = None
        for pos, product in enumerate(hits):
            target = pos // PRODUCT_WINDOW + 1
            nav = (f"click[{NEXT}]",) * (target - page_num) + (f"click[{PREV}]",) * (page_num - target)
            opened = prefix + nav + (f"click[{self.session.catalog.products[product]['asin'].lower()}]",)
            best = _better(best, self._finish_plan(product, {}, opened, budget))
        return best

    def plan(self, budget: int) -> Plan:
        """The best plan within ``budget`` actions (empty with reward 0 if none can buy anything)."""
        s = self.session
        if s.goal_index != self._goal_index:
            self._goal_index, self._finish = s.goal_index, {}
        if s.done or budget <= 0:
            return Plan(0.0, ())
        best = None
        if s.page in (ITEM, SUB):
            prefix = (f"click[{PREV}]",) if s.page == SUB else ()
            best = self._finish_plan(s.product, s.options, prefix, budget)
        if s.page in (RESULTS, ITEM, SUB):
            prefix = {RESULTS: (), ITEM: (f"click[{PREV}]",), SUB: (f"click[{PREV}]",) * 2}[s.page]
            best = _better(best, self._results_plan(s.results, s.page_num, prefix, budget))
        restart = () if s.page == SEARCH else (f"click[{BACK}]",)
        for query in goal_queries(s.goal):
            hits = s.catalog.search(query)
            best = _better(best, self._results_plan(hits, 1, restart + (f"search[{query}]",), budget))
        return best or Plan(0.0, ())

    def next_actions(self, budget: int, max_actions: int) -> list[str]:
        """The first ``max_actions`` actions of the best plan; a harmless valid action if no plan can buy."""
        if self.session.done or budget <= 0 or max_actions <= 0:
            return []
        actions = list(self.plan(budget).actions)
        if not actions:
            available = self.session.available_actions()
            queries = goal_queries(self.session.goal)
            first = f"search[{queries[0]}]" if available["has_search_bar"] else f"click[{available['clickables'][0]}]"
            actions = [first]
        return actions[: min(budget, max_actions)]
