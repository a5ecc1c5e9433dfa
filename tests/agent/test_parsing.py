import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_bench.agent.parsing import format_reply, parse_reply


@pytest.mark.parametrize(
    ("reply", "think", "ok", "actions"),
    [
        ("<think>go</think><answer>Up || Left</answer>", True, True, ["Up", "Left"]),
        ("<think>go</think>\n  <answer> Up||  ||Left </answer> trailing", True, True, ["Up", "Left"]),
        ("<answer>Up</answer>", True, False, []),
        ("<answer>Up</answer>", False, True, ["Up"]),
        ("<think>x</think><answer>Up</answer>", False, True, ["Up"]),
        ("<think>x</think> text <answer>Up</answer>", True, False, []),
        ("<think>x</think><answer>Up", True, False, []),
        ("<think><answer>Up</answer></think><answer>Down</answer>", True, True, ["Down"]),
        ("<think>x</think><answer></answer>", True, True, []),
        ("<think>x</think><answer><answer>Up</answer></answer>", True, True, ["<answer>Up"]),
        ("", True, False, []),
    ],
)
def test_parse_table(reply, think, ok, actions):
    parsed = parse_reply(reply, enable_think=think)
    assert parsed.format_ok is ok
    assert parsed.actions == actions


def test_parse_non_string_is_empty_reply():
    assert parse_reply(None).format_ok is False  # type: ignore[arg-type]


@pytest.mark.parametrize(("reply", "think", "problem"), [
    ("<answer>Up</answer>", True, "no <think>...</think> block before the answer (this env asks for one)"),
    ("<think>x</think> text <answer>Up</answer>", True, "<answer> does not follow </think> directly"),
    ("<think>x</think>Up", True, "<answer> does not follow </think> directly"),
    ("<think>x</think><answer>Up", True, "no <answer>...</answer> block"),
    ("Up", False, "no <answer>...</answer> block"),
    (None, True, "the reply is not a string"),
    ("<think>x</think><answer></answer>", True, ""),
    ("<answer>Up</answer>", False, ""),
])
def test_a_format_failure_says_what_the_reply_lacked(reply, think, problem):
    parsed = parse_reply(reply, enable_think=think)
    assert parsed.problem == problem and parsed.format_ok is (problem == "")


def test_format_round_trip():
    reply = format_reply(["Up", "Left"], think="plan")
    assert reply == "<think>plan</think><answer>Up || Left</answer>"
    assert parse_reply(reply).actions == ["Up", "Left"]
    assert parse_reply(format_reply(["A"], enable_think=False), enable_think=False).actions == ["A"]


def test_parse_is_linear_on_pathological_input():
    reply = "<think>" * 200_000 + "</think>" + " " * 100_000 + "<answer>" * 50_000
    assert parse_reply(reply).format_ok is False


@settings(max_examples=300, deadline=None)
@given(st.text(), st.booleans())
def test_parse_never_raises(reply, think):
    parsed = parse_reply(reply, enable_think=think)
    assert all(a and a == a.strip() for a in parsed.actions)
