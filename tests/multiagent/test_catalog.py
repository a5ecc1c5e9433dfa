"""The TextArena catalog covers every TextArena id once, and docs/multiagent.md lists every left-out id."""

from pathlib import Path

import pytest

from agentgym_bench.multiagent.textarena_catalog import LEFT_OUT, REASONS, SINGLE_PLAYER, TWO_PLAYER

DOC = (Path(__file__).resolve().parents[2] / "docs" / "multiagent.md").read_text()


def test_every_left_out_id_and_reason_is_in_the_docs():
    for game, reason in LEFT_OUT.items():
        assert f"`{game}`" in DOC
        assert REASONS[reason] in DOC
    assert f"Single-player, curated ({len(SINGLE_PLAYER)} ids" in DOC
    assert f"Two-player, curated ({len(TWO_PLAYER)} ids" in DOC
    assert f"Left out ({len(LEFT_OUT)} ids)" in DOC


def test_catalog_partitions_textarenas_ids():
    pytest.importorskip("textarena", reason="needs the multiagent extra: pip install -e '.[multiagent]'")
    from agentgym_bench.multiagent.textarena_bridge import registered_ids

    listed = [*SINGLE_PLAYER, *TWO_PLAYER, *LEFT_OUT]
    assert len(listed) == len(set(listed))
    assert set(listed) == set(registered_ids())
