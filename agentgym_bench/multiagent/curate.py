"""Re-run the curation of TextArena games: ``python -m agentgym_bench.multiagent.curate [--check]``.

For every TextArena id (wrapper variants aside), with sockets blocked and a 60 s limit per id: make the ``-raw``
variant, reset it (1 player, else 2, ...), play one move and two invalid ones (read as the bridge reads them), and
reset it twice with the same seed. Prints one JSON line per id (``players``, ``state`` class, ``error``); with
``--check`` it compares the result with :mod:`~agentgym_bench.multiagent.textarena_catalog` and exits 1 on a
difference. Unix only (``signal.alarm``).
It is a maintenance tool, not part of the library: it blocks sockets in its own process.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
from typing import Any

from agentgym_bench.multiagent.textarena_bridge import TextArenaMatch, registered_ids, split_messages
from agentgym_bench.multiagent.textarena_catalog import LEFT_OUT, SINGLE_PLAYER, TWO_PLAYER


def _no_network(*args: Any, **kwargs: Any) -> None:
    raise OSError("network blocked by agentgym_bench.multiagent.curate")


def _timeout(*args: Any) -> None:
    raise TimeoutError("no answer within 60 s")


def probe(game: str) -> dict[str, Any]:
    """Try ``game`` with 1..6 players; report the first player count that resets, its state class, or the error."""
    row: dict[str, Any] = {"id": game}
    signal.alarm(60)
    try:
        last: Exception | None = None
        for players in range(1, 7):
            match = TextArenaMatch(game, num_players=players)
            try:
                match.reset(seed=0)
            except (AssertionError, ValueError) as error:
                last = error
                continue
            first = match.observe()
            for move in ("[1]", "[not a move]", "[not a move]"):  # a move, then two invalid ones: the game's end
                if match.step(move):
                    break
                split_messages(match.observe()[1], match.state.current_player_id)  # as the bridge reads them
            match.rewards()
            match.reset(seed=0)
            match.reset(seed=0)
            row.update(players=players, state=type(match.state).__name__, reproducible=str(match.observe()) ==
                       str(first))
            break
        else:
            raise last or RuntimeError("no player count worked")
    except BaseException as error:  # noqa: BLE001 - a broken third-party game may raise anything
        row["error"] = f"{type(error).__name__}: {str(error).strip()[:160]}"
    finally:
        signal.alarm(0)
    return row


def curated(row: dict[str, Any]) -> str:
    """Where a probed id belongs: ``"single"``, ``"two"`` or ``"left out"``."""
    if "error" in row or not row.get("reproducible"):
        return "left out"
    return {"SinglePlayerState": "single", "TwoPlayerState": "two"}.get(row["state"], "left out")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with textarena_catalog; exit 1 on a difference")
    args = parser.parse_args(argv)
    socket.socket.connect = _no_network  # type: ignore[method-assign]
    signal.signal(signal.SIGALRM, _timeout)
    catalog = {**dict.fromkeys(SINGLE_PLAYER, "single"), **dict.fromkeys(TWO_PLAYER, "two"),
               **dict.fromkeys(LEFT_OUT, "left out")}
    differences = 0
    for game in registered_ids():
        row = probe(game)
        row["curated"] = curated(row)
        print(json.dumps(row), flush=True)
        if args.check and catalog.get(game, "left out") != row["curated"]:
            differences += 1
            print(f"DIFFERENT: {game} is {catalog.get(game)!r} in the catalog, {row['curated']!r} now",
                  file=sys.stderr)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
