"""The bundled store (deterministic catalog, splits), BM25 search, and the session's pages and transitions."""

import math
import string

import numpy as np
import pytest

from agentgym_bench.envs.webshop import pages, vocab
from agentgym_bench.envs.webshop.catalog import DATA_PATH, encode_catalog, generate_catalog, load_catalog, make_product
from agentgym_bench.envs.webshop.reward import get_reward, normalize_color
from agentgym_bench.envs.webshop.search import BM25Index, stem, tokenize
from agentgym_bench.envs.webshop.session import WebShopSession, parse_action


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_committed_catalog_is_the_generator_output():
    assert DATA_PATH.read_bytes() == encode_catalog(generate_catalog(seed=0))
    assert DATA_PATH.stat().st_size < 2_000_000


def test_products_depend_only_on_the_generator_seed():
    ptype = vocab.PRODUCT_TYPES[0]
    a, b, c = (make_product(np.random.default_rng(s), ptype, set()) for s in (1, 1, 2))
    assert a == b and a != c
    with pytest.raises(ValueError, match="products_per_type"):
        generate_catalog(products_per_type=30)


def test_catalog_size_splits_and_targets(catalog):
    assert len(catalog.products) >= 1000 and len(catalog.goals) >= 1000
    assert catalog.splits["test"] == (0, 500) and catalog.splits["validation"] == (500, 1500)
    assert catalog.splits["train"] == (1500, len(catalog.goals))
    targets = {name: {catalog.goals[i]["asin"] for i in range(*rng)} for name, rng in catalog.splits.items()}
    assert len(targets["test"]) == 500 and len(targets["validation"]) == 1000
    assert not targets["test"] & targets["validation"]
    assert not (targets["test"] | targets["validation"]) & targets["train"]
    assert len({p["asin"] for p in catalog.products}) == len(catalog.products)


def test_catalog_is_ascii_and_consistent(catalog):
    printable = set(string.printable) - set("\t\n\r\x0b\x0c")
    for p in catalog.products:
        texts = [p["Title"], p["Description"], *p["BulletPoints"], *p["Attributes"]]
        texts += [v for values in p["options"].values() for v in values]
        assert all(set(t) <= printable for t in texts)
        assert len(p["Title"]) <= 120 and 0 < p["price"] < 990
        blob = " ".join([p["Title"], p["Description"], *p["BulletPoints"]]).lower()
        for values in p["options"].values():  # no option value would match through the text fallback
            assert all(normalize_color(v) not in blob for v in values)
    for g in catalog.goals:
        target = catalog.products[catalog.by_asin[g["asin"]]]
        assert set(g["attributes"]) <= set(target["Attributes"])
        assert all(v in target["options"][k] for k, v in g["goal_options"].items())
        assert target["price"] < g["price_upper"]
        assert get_reward(target, g, target["price"], g["goal_options"]).reward == 1.0


def test_stemming_and_tokens():
    assert [stem(w) for w in ("shoes", "berries", "glass", "bus", "boxes", "series")] == \
        ["shoe", "berry", "glass", "bus", "boxe", "sery"]
    assert tokenize("The Men's Running-Shoes, for trails!") == ["men", "running", "shoe", "trail"]


def test_bm25_scores_and_ranking():
    index = BM25Index(["red shoes", "blue shoes shoes", "red hat", "green tea"])
    idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))
    avg = 9 / 4
    norm0 = 0.9 * (1 - 0.4 + 0.4 * 2 / avg)
    assert index.scores("red shoes")[0] == pytest.approx(2 * idf * 1.9 / (1 + norm0))
    assert index.search("red shoes") == [0, 1, 2]
    assert index.search("tea") == [3]
    assert index.search("purple") == [] and index.search("") == []
    assert BM25Index(["same doc", "same doc", "same doc"]).search("doc") == [0, 1, 2]  # ties keep catalog order


def test_search_finds_the_target_by_its_goal_words(catalog):
    found = 0
    for g in catalog.goals[:100]:
        hits = catalog.search(f"{g['query']} {' '.join(g['attributes'])}")
        assert len(hits) <= 50
        found += catalog.by_asin[g["asin"]] in hits
    assert found >= 90


def test_session_walkthrough(catalog):
    s = WebShopSession(catalog)
    goal = catalog.goals[0]
    assert s.reset(0) == f"WebShop [SEP] Instruction: [SEP] {goal['instruction_text']} [SEP] Search"
    assert s.available_actions() == {"has_search_bar": True, "clickables": ["search"]}
    assert s.step("click[search]") == (0.0, False, False)
    assert s.step(f"search[{goal['query']}]") == (0.0, False, True)
    page = s.observation()
    assert page.startswith(f"Instruction: [SEP] {goal['instruction_text']} [SEP] Back to Search [SEP] Page 1 "
                           "(Total results: 50) [SEP] Next > [SEP] ")
    clickables = s.available_actions()["clickables"]
    assert clickables[:2] == ["back to search", "next >"] and len(clickables) == 12
    assert s.step("Click[ NEXT > ]")[2] and s.page_num == 2 and "< prev" in s.available_actions()["clickables"]
    assert s.step("click[< prev]")[2] and s.page_num == 1
    first = clickables[2]
    assert s.step(f"click[{first.upper()}]")[2] and s.page == "item"
    product = catalog.products[s.product]
    assert product["asin"].lower() == first
    item = s.observation()
    assert item.endswith(f"[SEP] Price: ${product['price']:.2f} [SEP] Rating: {product['Rating']} [SEP] Description "
                         "[SEP] Features [SEP] Reviews [SEP] Buy Now")
    name, values = next(iter(product["options"].items()))
    assert f"[SEP] < Prev [SEP] {name} [SEP] {values[0]}" in item
    assert s.step(f"click[{values[0]}]")[2] and s.options == {name: values[0]}
    assert s.step(f"click[{values[-1]}]")[2] and s.options == {name: values[-1]}  # replaces the earlier choice
    assert s.step("click[features]")[2] and s.page == "sub"
    assert s.observation().endswith(pages.SEP.join(product["BulletPoints"]))
    assert s.available_actions()["clickables"] == ["back to search", "< prev"]
    assert s.step("click[< prev]")[2] and s.page == "item" and s.options == {name: values[-1]}
    reward, done, valid = s.step("click[buy now]")
    expected = get_reward(product, goal, product["price"], {name: values[-1]}).reward
    assert (reward, done, valid) == (expected, True, True)
    assert s.observation().endswith(f"Your score (min 0.0, max 1.0) [SEP] {round(expected, 4):g}")
    assert s.available_actions() == {"has_search_bar": False, "clickables": []}
    assert s.step("click[buy now]") == (0.0, True, False)


def test_session_back_to_search_and_prev_reset_state(catalog):
    s = WebShopSession(catalog)
    s.reset(3)
    s.step("search[green tea]")
    s.step(f"click[{s.available_actions()['clickables'][2]}]")
    s.step("click[< prev]")
    assert s.page == "results" and s.options == {} and s.keywords == "green tea"
    s.step("click[back to search]")
    assert s.page == "search" and s.keywords == "" and s.results == ()
    assert s.step("search[zzzz qqqq]")[2]
    assert s.observation().endswith("Page 1 (Total results: 0)")
    assert s.available_actions()["clickables"] == ["back to search"]
    with pytest.raises(ValueError, match="goal_index"):
        s.reset(len(catalog.goals))


@pytest.mark.parametrize("action,has_bar,clickables,expected", [
    ("search[red shoes]", True, ["search"], "search[red shoes]"),
    ("  SEARCH [ Red   Shoes ] ", True, ["search"], "search[red shoes]"),
    ("search[price < 50.00 dollars]", True, ["search"], "search[price < 50.00 dollars]"),
    ("search[red shoes]", False, ["back to search"], None),
    ("search[]", True, ["search"], None),
    ("search[   ]", True, ["search"], None),
    ("search[!!!]", True, ["search"], None),
    ("search[" + "a" * 201 + "]", True, ["search"], None),
    ("search[" + "a" * 100_000 + "]", True, ["search"], None),
    ("search[shoes] click[buy now]", True, ["search"], None),
    ("search[x; DROP TABLE products]", True, ["search"], None),
    ("search[a\nb]", True, ["search"], None),
    ("search[caf\u00e9]", True, ["search"], None),
    ("click[search]", True, ["search"], None),
    ("click[Buy Now]", False, ["buy now"], "click[buy now]"),
    ("click[buy now]]", False, ["buy now"], None),
    ("click[buy now] || click[buy now]", False, ["buy now"], None),
    ("click[<script>alert(1)</script>]", False, ["buy now"], None),
    ("click[../../etc/passwd]", False, ["buy now"], None),
    ("buy now", False, ["buy now"], None),
    ("", True, ["search"], None),
    (None, True, ["search"], None),
    (42, True, ["search"], None),
])
def test_parse_action_table(action, has_bar, clickables, expected):
    parsed = parse_action(action, has_bar, clickables)
    assert (parsed.text if parsed else None) == expected
