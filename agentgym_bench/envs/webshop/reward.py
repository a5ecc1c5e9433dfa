"""WebShop's reward (github.com/princeton-nlp/WebShop, ``web_agent_site/engine/goal.py::get_reward`` at 6ba9969),
without spaCy/thefuzz. RAGEN's webshop-minimal scores options otherwise (``docs/webshop.md``).

A purchase is scored against the goal as::

    reward = r_type * (attributes matched + options matched + price ok)
                    / (len(goal attributes) + len(goal options) + 1)

- Attribute: a goal attribute matches if ``token_set_ratio(product attribute, goal attribute) > 85`` for some product
  attribute, or else if it is a substring of the lower-cased title, features (bullet points) or description.
- Option: each *selected* option value is normalised (:func:`normalize_color`); an option named ``size`` must equal
  a goal option exactly, any other must have ``token_set_ratio > 85`` with some goal option; failing that, it
  counts if it is a substring of the title, features or description.
- Price: 1 if ``price <= goal["price_upper"]``.
- ``r_type`` (product-type factor): ``title_score`` = the share of the goal title's nouns found among the bought
  title's nouns. ``r_type`` = 1 if the products share the search query, or share at least two category levels, or
  ``title_score > 0.2``; otherwise 0.5. Then ``r_type`` = 0.1 if ``title_score < 0.1`` and 0 if ``title_score == 0``.

Differences from WebShop, and why:
- ``token_set_ratio`` is reimplemented here (thefuzz/rapidfuzz's definition: indel similarity of sorted token sets,
  rounded to an integer), so the rule is the same without the dependency.
- WebShop finds title nouns with spaCy (``en_core_web_lg``). Our catalog is generated, so each product records its
  title's nouns (``name_nouns``: the brand and the product-type nouns) and each goal records its target's; no
  tagger is needed and the factor is exact for our catalog.
- Category paths may use ``>`` or WebShop's ``›`` as the separator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# WebShop's colour list (web_agent_site/engine/normalize.py), in its order: the first one found in a value wins.
COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue", "blush",
    "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne", "charcoal", "cheetah",
    "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper", "coral", "cranberry", "cream", "crystal",
    "dark", "denim", "eggplant", "elephant", "espresso", "fuchsia", "gold", "granite", "grape", "graphite", "grass",
    "gray", "green", "grey", "heather", "indigo", "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light",
    "lilac", "lime", "magenta", "maroon", "mauve", "merlot", "midnight", "mint", "mocha", "multicolor", "mushroom",
    "mustard", "natural", "navy", "nude", "olive", "orange", "peach", "pewter", "pink", "plum", "purple", "rainbow",
    "red", "rose", "royal", "rust", "sand", "sapphire", "seashell", "silver", "skull", "slate", "steel", "stone",
    "stonewash", "sunflower", "tan", "taupe", "teal", "tiger", "turquoise", "violet", "walnut", "wheat", "white",
    "wine", "yellow",
)
EXACT_MATCH_OPTIONS = ("size",)
MATCH_THRESHOLD = 85
_NON_ALNUM = re.compile(r"[^0-9a-zA-Z]+")
_CATEGORY_SEP = re.compile(r"[>\u203a]")


def normalize_color(value: str) -> str:
    """The first colour of :data:`COLOR_SET` contained in ``value`` (``"navy blue"`` -> ``"blue"``), else ``value``."""
    for color in COLOR_SET:
        if color in value:
            return color
    return value


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (bit-parallel, Hyyrö 2004)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    masks: dict[str, int] = {}
    for i, ch in enumerate(a):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for ch in b:
        u = v & masks.get(ch, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def ratio(a: str, b: str) -> float:
    """Indel similarity in [0, 100]: ``200 * LCS / (len(a) + len(b))`` (thefuzz/rapidfuzz ``fuzz.ratio``)."""
    total = len(a) + len(b)
    return 100.0 * 2 * lcs_length(a, b) / total if total else 0.0


def _process(text: str) -> str:
    """thefuzz's ``full_process``: non-alphanumerics to spaces, lower case, trimmed (ASCII only)."""
    return _NON_ALNUM.sub(" ", text).lower().strip()


@lru_cache(maxsize=1 << 16)
def token_set_ratio(a: str, b: str) -> int:
    """thefuzz's ``fuzz.token_set_ratio``: similarity of the sorted token intersection and differences, 0..100."""
    ta, tb = set(_process(a).split()), set(_process(b).split())
    if not ta or not tb:
        return 0
    common, only_a, only_b = ta & tb, ta - tb, tb - ta
    if common and (not only_a or not only_b):
        return 100
    sect = " ".join(sorted(common))
    ja = (sect + " " + " ".join(sorted(only_a))).strip()
    jb = (sect + " " + " ".join(sorted(only_b))).strip()
    scores = [ratio(ja, jb)]
    if sect:
        scores += [ratio(sect, ja), ratio(sect, jb)]
    return int(round(max(scores)))


def _texts(product: dict[str, Any]) -> tuple[str, str, str]:
    return (product["Title"].lower(), " ".join(product["BulletPoints"]).lower(), product["Description"].lower())


def _in_texts(value: str, texts: tuple[str, str, str]) -> bool:
    return any(value in text for text in texts)


def type_reward(product: dict[str, Any], goal: dict[str, Any]) -> dict[str, Any]:
    """WebShop's product-type factor: ``{"r_type", "query_match", "category_match", "title_score"}``."""
    query_match = product["query"] == goal["query"]
    bought = {level.strip() for level in _CATEGORY_SEP.split(product["product_category"])}
    wanted = {level.strip() for level in _CATEGORY_SEP.split(goal["product_category"])}
    category_match = len(bought & wanted) >= 2
    desired = [n.lower() for n in goal["name_nouns"]]
    found = {n.lower() for n in product["name_nouns"]}
    title_score = len(set(desired) & found) / len(desired) if desired else 0.2
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {"r_type": r_type, "query_match": query_match, "category_match": category_match,
            "title_score": title_score}


def attribute_matches(product: dict[str, Any], goal_attributes: list[str]) -> int:
    """How many goal attributes the product has (fuzzy match against its attributes, else a text substring)."""
    texts = _texts(product)
    matches = 0
    for g_attr in goal_attributes:
        if any(token_set_ratio(p_attr, g_attr) > MATCH_THRESHOLD for p_attr in product["Attributes"]):
            matches += 1
        elif _in_texts(g_attr, texts):
            matches += 1
    return matches


def option_matches(product: dict[str, Any], goal_options: list[str], selected: dict[str, str]) -> int:
    """How many selected options match a goal option (exact for ``size``, fuzzy otherwise, else a text substring)."""
    texts = _texts(product)
    wanted = [normalize_color(o) for o in goal_options]
    matches = 0
    for name, raw in selected.items():
        value = normalize_color(raw)
        if name.lower() in EXACT_MATCH_OPTIONS:
            matched = value in wanted
        else:
            matched = any(token_set_ratio(g, value) > MATCH_THRESHOLD for g in wanted)
        if matched or _in_texts(value, texts):
            matches += 1
    return matches


@dataclass(frozen=True)
class RewardInfo:
    """A purchase's reward and its parts (WebShop's ``verbose`` info)."""

    reward: float
    r_type: float
    r_att: float
    r_option: float | None
    r_price: bool
    query_match: bool
    category_match: bool
    title_score: float


def get_reward(product: dict[str, Any], goal: dict[str, Any], price: float, options: dict[str, str]) -> RewardInfo:
    """Score buying ``product`` at ``price`` with the selected ``options`` (option name -> value) against ``goal``.

    Args:
        product: ``Title``, ``BulletPoints``, ``Description``, ``Attributes``, ``query``, ``product_category``,
            ``name_nouns``.
        goal: ``attributes``, ``goal_options`` (name -> value, or a list of values), ``price_upper``, ``query``,
            ``product_category``, ``name_nouns``.
        price: the price paid.
        options: the options selected on the item page.

    Returns:
        The reward with its parts: in [0, 1] unless more selected options match than the goal has (WebShop counts
        each; no purchase in the bundled store does).
    """
    kind = type_reward(product, goal)
    goal_options = goal["goal_options"]
    goal_values = list(goal_options.values()) if isinstance(goal_options, dict) else list(goal_options)
    n_attr = attribute_matches(product, goal["attributes"])
    n_opt = option_matches(product, goal_values, options)
    r_price = price <= goal["price_upper"]
    total = (n_attr + n_opt + int(r_price)) / (len(goal["attributes"]) + len(goal_values) + 1)
    return RewardInfo(
        reward=total * kind["r_type"],
        r_type=kind["r_type"],
        r_att=n_attr / len(goal["attributes"]) if goal["attributes"] else 0.0,
        r_option=n_opt / len(goal_values) if goal_values else None,
        r_price=r_price,
        query_match=kind["query_match"],
        category_match=kind["category_match"],
        title_score=kind["title_score"],
    )
