"""WebShop's reward function on hand-made products and goals, and the fuzzy matching it rests on."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_bench.envs.webshop.reward import (
    get_reward,
    lcs_length,
    normalize_color,
    ratio,
    token_set_ratio,
    type_reward,
)

SHOE = {
    "Title": "Acme Non Slip Men's Running Shoes with Memory Foam",
    "BulletPoints": ["Breathable mesh upper", "Lace up closure"],
    "Description": "Great for trail running and gym workouts.",
    "Attributes": ["non slip", "memory foam", "lace up"],
    "query": "men's running shoes",
    "product_category": "Clothing, Shoes & Jewelry > Men > Shoes > Running",
    "name_nouns": ["acme", "running", "shoes"],
}
GOAL = {
    "attributes": ["non slip", "memory foam"],
    "goal_options": {"color": "black", "size": "9"},
    "price_upper": 60.0,
    "query": "men's running shoes",
    "product_category": "Clothing, Shoes & Jewelry > Men > Shoes > Running",
    "name_nouns": ["acme", "running", "shoes"],
}


def goal(**changes):
    return {**GOAL, **changes}


def product(**changes):
    return {**SHOE, **changes}


# (name, product, goal, price, selected options, expected reward)
REWARD_TABLE = [
    ("perfect purchase", SHOE, GOAL, 50.0, {"color": "black", "size": "9"}, 1.0),
    ("price equal to the bound is ok", SHOE, GOAL, 60.0, {"color": "black", "size": "9"}, 1.0),
    ("too expensive", SHOE, GOAL, 60.01, {"color": "black", "size": "9"}, 4 / 5),
    ("size must match exactly", SHOE, GOAL, 50.0, {"color": "black", "size": "9.5"}, 4 / 5),
    ("wrong colour", SHOE, GOAL, 50.0, {"color": "red", "size": "9"}, 4 / 5),
    ("no options selected", SHOE, GOAL, 50.0, {}, 3 / 5),
    ("colours are normalised: jet black is black", SHOE, GOAL, 50.0, {"color": "jet black", "size": "9"}, 1.0),
    ("normalisation quirk: light blue matches navy blue", SHOE, goal(goal_options={"color": "navy blue"}), 50.0,
     {"color": "light blue"}, 1.0),
    ("fuzzy quirk: pack of 3 matches pack of 2 unless the option is a size", SHOE,
     goal(goal_options={"style": "pack of 2"}), 50.0, {"style": "pack of 3"}, 1.0),
    ("a selected option found in the title counts, whatever the goal", SHOE, goal(goal_options={"style": "leather"}),
     50.0, {"style": "memory foam"}, 1.0),
    ("attribute found only in the description", SHOE, goal(attributes=["trail running"], goal_options={}), 50.0, {},
     1.0),
    ("attribute fuzzy-matched (non-slip ~ non slip)", product(Attributes=["non-slip"], Title="Acme Running Shoes"),
     goal(attributes=["non slip"], goal_options={}), 50.0, {}, 1.0),
    ("attribute missing", SHOE, goal(attributes=["non slip", "waterproof"]), 50.0, {"color": "black", "size": "9"},
     4 / 5),
    ("everything wrong but the type", SHOE, goal(attributes=["waterproof", "wide toe box"]), 99.0,
     {"color": "red", "size": "12"}, 0.0),
    ("same category path but no title noun in common: r_type 0",
     product(query="men's hiking boots", name_nouns=["zed", "hiking", "boots"]), GOAL, 50.0,
     {"color": "black", "size": "9"}, 0.0),
]


@pytest.mark.parametrize("name,prod,g,price,options,expected", REWARD_TABLE, ids=[row[0] for row in REWARD_TABLE])
def test_reward_table(name, prod, g, price, options, expected):
    assert get_reward(prod, g, price, options).reward == pytest.approx(expected)


def test_reward_parts_are_reported():
    info = get_reward(SHOE, GOAL, 70.0, {"color": "black"})
    assert (info.r_type, info.r_att, info.r_option, info.r_price) == (1.0, 1.0, 0.5, False)
    assert info.reward == pytest.approx(3 / 5)
    assert get_reward(SHOE, goal(goal_options={}), 50.0, {}).r_option is None


# title_score = |goal nouns found| / |goal nouns|; r_type from query/category match and title_score (WebShop's rules)
TYPE_TABLE = [
    ("same query", {}, {}, 1.0),
    ("same category (>= 2 levels), no shared noun", {"query": "x", "name_nouns": ["zzz"]}, {}, 0.0),
    ("category match (2 of 3 levels) rescues title_score 0.2", {"query": "x", "product_category": "A > B > C",
                                                               "name_nouns": ["a"]},
     {"product_category": "A > B > D", "name_nouns": ["a", "b", "c", "d", "e"]}, 1.0),
    ("one common category level is no match: title_score 0.2 stays 0.5", {"query": "x", "product_category":
                                                                         "A > Y > Z", "name_nouns": ["a"]},
     {"product_category": "A > B > D", "name_nouns": ["a", "b", "c", "d", "e"]}, 0.5),
    ("no query/category match, title_score 1/3 > 0.2", {"query": "x", "product_category": "P > Q",
                                                       "name_nouns": ["acme"]}, {}, 1.0),
    ("no match, title_score 1/5 = 0.2 (not > 0.2)", {"query": "x", "product_category": "P > Q",
                                                    "name_nouns": ["a"]},
     {"name_nouns": ["a", "b", "c", "d", "e"]}, 0.5),
    ("title_score 1/11 < 0.1", {"query": "x", "product_category": "P > Q", "name_nouns": ["a"]},
     {"name_nouns": list("abcdefghijk")}, 0.1),
    ("title_score 0 overrides a query match", {"name_nouns": ["zzz"]}, {}, 0.0),
    ("WebShop's separator works too", {"query": "x", "product_category": "A \u203a B \u203a C", "name_nouns": ["q"]},
     {"product_category": "A > B > D", "name_nouns": ["q", "r", "s", "t", "u", "v"]}, 1.0),
]


@pytest.mark.parametrize("name,prod_changes,goal_changes,expected", TYPE_TABLE, ids=[row[0] for row in TYPE_TABLE])
def test_type_factor_table(name, prod_changes, goal_changes, expected):
    assert type_reward(product(**prod_changes), goal(**goal_changes))["r_type"] == expected


def test_type_factor_scales_the_whole_reward():
    half = product(query="x", product_category="P > Q", name_nouns=["acme"])
    g = goal(name_nouns=["acme", "b", "c", "d", "e"])
    assert get_reward(half, g, 50.0, {"color": "black", "size": "9"}).reward == pytest.approx(0.5)


@pytest.mark.parametrize("a,b,expected", [
    ("fuzzy was a bear", "fuzzy fuzzy was a bear", 100),
    ("new york mets vs atlanta braves", "atlanta braves vs new york mets", 100),
    ("pack of 2", "pack of 3", 89),
    ("non-slip", "NON SLIP", 100),
    ("wired", "wireless", 62),
    ("", "anything", 0),
    ("!!!", "anything", 0),
    ("red", "blue", 29),
])
def test_token_set_ratio_values(a, b, expected):
    assert token_set_ratio(a, b) == expected


def test_ratio_matches_thefuzz_example():
    assert round(ratio("this is a test", "this is a test!")) == 97


@pytest.mark.parametrize("value,expected", [
    ("", ""), ("black forest", "black"), ("violet lavender", "lavender"), ("steelivy fuchsia", "fuchsia"),
    ("123alabaster", "alabaster"), ("webshop", "webshop"), ("navy blue", "blue"), ("standard", "tan"),
])
def test_normalize_color(value, expected):
    assert normalize_color(value) == expected


def _lcs_dp(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcde ", max_size=40), st.text(alphabet="abcde ", max_size=40))
def test_bit_parallel_lcs_equals_dynamic_programming(a, b):
    assert lcs_length(a, b) == _lcs_dp(a, b)
