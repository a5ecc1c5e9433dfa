"""WebShop pages as text, in WebShop's ``text`` observation mode (visible strings joined by ``" [SEP] "``).

The strings match what the real ``WebAgentTextEnv(observation_mode="text")`` shows (and what AgentGym and RAGEN
feed to models), e.g.::

    WebShop [SEP] Instruction: [SEP] i need ... [SEP] Search
    Instruction: [SEP] i need ... [SEP] Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP]
        B0ABCDEFGH [SEP] <title> [SEP] $12.99 [SEP] ...
    Instruction: [SEP] i need ... [SEP] Back to Search [SEP] < Prev [SEP] color [SEP] black [SEP] red [SEP]
        <title> [SEP] Price: $12.99 [SEP] Rating: N.A. [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now

The page after buying keeps WebShop's visible lines except the Mechanical Turk code and the hidden target details.
"""

from __future__ import annotations

import json
from typing import Any

SEP = " [SEP] "
PRODUCT_WINDOW = 10
BACK_TO_SEARCH = "Back to Search"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BUY_NOW = "Buy Now"
SUB_PAGES = ("Description", "Features", "Reviews")


def price_tag(price: float) -> str:
    """``$12.99``."""
    return f"${price:.2f}"


def search_page(instruction: str) -> str:
    """The start page: instruction and search bar."""
    return SEP.join(["WebShop", "Instruction:", instruction, "Search"])


def results_page(instruction: str, products: list[dict[str, Any]], page: int, total: int) -> str:
    """Search results ``page`` (1-based) showing ``products`` (at most 10) of ``total`` hits."""
    parts = ["Instruction:", instruction, BACK_TO_SEARCH, f"Page {page} (Total results: {total})"]
    if page > 1:
        parts.append(PREV_PAGE)
    if page * PRODUCT_WINDOW < total:
        parts.append(NEXT_PAGE)
    for p in products:
        parts += [p["asin"], p["Title"], price_tag(p["price"])]
    return SEP.join(parts)


def item_page(instruction: str, product: dict[str, Any]) -> str:
    """A product's page: options (name, then its values), title, price, rating and buttons."""
    parts = ["Instruction:", instruction, BACK_TO_SEARCH, PREV_PAGE]
    for name, values in product["options"].items():
        parts += [name, *values]
    parts += [product["Title"], f"Price: {price_tag(product['price'])}", f"Rating: {product['Rating']}",
              *SUB_PAGES, BUY_NOW]
    return SEP.join(parts)


def sub_page(instruction: str, product: dict[str, Any], name: str) -> str:
    """A product's ``Description``, ``Features`` or ``Reviews`` page."""
    parts = ["Instruction:", instruction, BACK_TO_SEARCH, PREV_PAGE]
    if name == "Description":
        parts.append(product["Description"])
    elif name == "Features":
        parts += product["BulletPoints"]
    elif product["Reviews"]:
        for review in product["Reviews"]:
            parts += [f'"{review["title"]}"', str(review["score"]), review["body"]]
    else:
        parts.append("No reviews found")
    return SEP.join(parts)


def done_page(asin: str, options: dict[str, str], reward: float) -> str:
    """The page after ``Buy Now``: what was bought and the score."""
    return SEP.join(["Thank you for shopping with us!", "Purchased", "asin", asin, "options",
                     json.dumps(options, sort_keys=True), "Your score (min 0.0, max 1.0)", f"{round(reward, 4):g}"])
