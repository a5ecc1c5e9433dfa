"""The board's index.html in a real headless browser (Debian's chromium): every submission shows, a header click
sorts, a name opens the details, a transcript link opens an episode turn by turn, and the pairwise view compares.

The page is driven by a small harness page in the board folder that loads index.html in an iframe, clicks like a
person would, and writes what it saw into its own DOM, which ``chromium --dump-dom`` prints. Skipped only where no
browser binary exists (install one with ``apt-get install chromium``); the test installs nothing.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from agentgym_bench.cli import main

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None,
                                reason=f"no headless browser found (looked for {', '.join(BROWSERS)})")

HARNESS_HEAD = """<!DOCTYPE html><html><body><pre id="out">pending</pre>
<iframe id="f" src="index.html" width="1200" height="800"></iframe>
<script>
const log = {};
const wait = ms => new Promise(r => setTimeout(r, ms));
document.getElementById("f").onload = async () => {
  try {
    const d = document.getElementById("f").contentDocument;
"""
HARNESS_TAIL = """  } catch (e) { log.error = String(e); }
  document.getElementById("out").textContent = JSON.stringify(log);
};
</script></body></html>"""

SORT_AND_OPEN = """\
    const rows = d => [...d.querySelectorAll("#board-body tr[data-slug]")].map(r => r.dataset.slug);
    log.initial = rows(d);
    d.querySelector('th[data-key="score"]').click(); await wait(100); log.score_first_click = rows(d);
    d.querySelector('th[data-key="score"]').click(); await wait(100); log.score_second_click = rows(d);
    d.querySelector('a[data-slug="random"]').click(); await wait(300);
    log.details = d.querySelector("#details h2").textContent;
    log.breakdown_rows = d.querySelectorAll("#breakdown tr").length - 1;
    [...d.querySelectorAll("#breakdown a")].find(a => a.href.includes(":sokoban-6x6:")).click(); await wait(300);
    log.title = d.getElementById("transcript-title").textContent;
    log.first_observation = d.querySelector("#transcript pre.observation").textContent;
    log.first_reply = d.querySelector("#transcript pre.reply").textContent;
    log.turns = d.querySelectorAll("#transcript div[data-turn]").length;
    [...d.querySelectorAll("#transcript button")].find(b => b.textContent === "\\u25C0 turn").click(); await wait(100);
    log.turns_after_step_back = d.querySelectorAll("#transcript div[data-turn]").length;
    const a = d.getElementById("compare-a"), b = d.getElementById("compare-b");
    a.value = "random"; a.dispatchEvent(new Event("change")); await wait(100);
    b.value = "oracle"; b.dispatchEvent(new Event("change")); await wait(100);
    log.compare = [...d.querySelectorAll("#compare-table tr")].map(r => r.textContent);
"""


def drive(board: Path, steps: str) -> dict:
    """Open the board's index.html in the harness, run ``steps`` (JavaScript: ``d`` is the page's document, ``log``
    the record, ``wait(ms)`` a pause) and return the record."""
    (board / "harness.html").write_text(HARNESS_HEAD + steps + HARNESS_TAIL)
    dom = run_browser((board / "harness.html").as_uri())
    found = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
    assert found, dom[:2000]
    log = json.loads(html.unescape(found.group(1)))
    assert "error" not in log, log
    return log


def run_browser(url: str) -> str:
    out = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--allow-file-access-from-files", "--virtual-time-budget=10000", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    return out.stdout


def test_the_page_shows_sorts_and_opens_a_transcript(tmp_path, suite_file, oracle_bytes, random_bytes):
    board = tmp_path / "board"
    for name, raw in {"oracle": oracle_bytes, "random": random_bytes}.items():
        (tmp_path / f"{name}.json.gz").write_bytes(raw)
        assert main(["submit", str(tmp_path / f"{name}.json.gz"), "--name", name, "--board", str(board),
                     "--suite", str(suite_file)]) == 0
    log = drive(board, SORT_AND_OPEN)
    assert log["initial"] == ["oracle", "random"]  # by rank
    assert log["score_first_click"] == ["oracle", "random"]  # score, descending
    assert log["score_second_click"] == ["random", "oracle"]  # score, ascending
    assert log["details"] == "random" and log["breakdown_rows"] == 2

    from agentgym_bench.benchmark.results import loads
    from agentgym_bench.leaderboard.render import transcripts_of

    results = loads(random_bytes)
    first = min(ep.seed for ep in results.entry("sokoban-6x6").episodes)
    episode = next(ep for ep in results.entry("sokoban-6x6").episodes if ep.seed == first)
    texts = transcripts_of(results, episodes=1)["sokoban-6x6"][first]
    assert log["title"] == f"random \u2014 sokoban-6x6 \u2014 seed {first}"
    assert log["first_observation"] == texts.observations[0] and "Sokoban" in texts.observations[0]
    assert log["first_reply"] == episode.turns[0].reply
    assert log["turns"] == len(episode.turns) and log["turns_after_step_back"] == max(1, len(episode.turns) - 1)
    assert log["compare"][1].startswith("suite score") and "oracle better" in log["compare"][1]


def test_a_hash_link_opens_an_episode_directly(tmp_path, suite_file, oracle_bytes):
    board = tmp_path / "board"
    (tmp_path / "o.json.gz").write_bytes(oracle_bytes)
    assert main(["submit", str(tmp_path / "o.json.gz"), "--name", "oracle", "--board", str(board),
                 "--suite", str(suite_file)]) == 0
    dom = run_browser(Path(board / "index.html").as_uri() + "#open=oracle:bandit:1000000003&turn=1")
    assert 'id="transcript-title">oracle — bandit — seed 1000000003<' in dom
    assert dom.count('class="turn" data-turn=') == 1


TRAINING_STEPS = """\
    d.querySelector('a[data-slug="oracle"]').click(); await wait(300);
    log.oracle_charts = d.querySelectorAll("#training svg").length;
    d.querySelector('a[data-slug="trained"]').click(); await wait(300);
    log.charts = [...d.querySelectorAll("#training .chart")].map(c => [c.querySelector("text").textContent,
      [...c.querySelectorAll("polyline")].map(p => p.getAttribute("points").split(" ").length)]);
    log.legend = d.querySelector("#training .chart div").textContent;
    log.config = [...d.querySelectorAll("#details details table.config tr")].map(r => [r.cells[0].textContent,
      r.cells[1].textContent]);
    log.details_text = d.getElementById("details").textContent;
"""


def test_the_details_plot_the_training_curves_a_file_reports(tmp_path, suite_file, oracle_bytes, trained_bytes):
    board = tmp_path / "board"
    for name, raw in {"oracle": oracle_bytes, "trained": trained_bytes}.items():
        (tmp_path / f"{name}.json.gz").write_bytes(raw)
        assert main(["submit", str(tmp_path / f"{name}.json.gz"), "--name", name, "--board", str(board),
                     "--suite", str(suite_file)]) == 0
    log = drive(board, TRAINING_STEPS)
    assert log["oracle_charts"] == 0  # nothing reported, nothing drawn
    # success: the training episodes (3 points), validation (2) and its per-env line (2); then the entropy (3)
    assert log["charts"] == [["success", [3, 2, 2]], ["policy entropy", [3]]]
    assert "training episodes" in log["legend"] and "validation AgentBandit-v0" in log["legend"]
    # the trainer config as a table of plain values, no raw JSON anywhere in the details
    assert log["config"] == [["preset", "gigpo"], ["learning_rate", "0.0001"], ["max_steps", "3"]]
    assert "{" not in log["details_text"] and '":' not in log["details_text"]


MA_STEPS = """\
    log.headers = [...d.querySelectorAll("#board-head th")].map(t => t.textContent);
    log.legend = d.getElementById("legend").textContent;
    d.querySelector('a[data-slug="scripted"]').click(); await wait(300);
    log.breakdown = [...d.querySelectorAll("#breakdown tr")].map(r => r.textContent);
    [...d.querySelectorAll("#breakdown a")].find(a => a.href.includes(":bargain-vs-random:")).click(); await wait(300);
    log.summary = d.querySelector("#transcript p").textContent;
    log.turn_titles = [...d.querySelectorAll("#transcript div[data-turn] h4")].map(h => h.textContent);
    const a = d.getElementById("compare-a"), b = d.getElementById("compare-b");
    a.value = "random"; a.dispatchEvent(new Event("change")); await wait(100);
    b.value = "scripted"; b.dispatchEvent(new Event("change")); await wait(100);
    log.compare = [...d.querySelectorAll("#compare-table tr")].map(r => r.textContent);
"""


def test_a_two_player_board_shows_payoffs_outcomes_and_both_seats(tmp_path):
    """The same page on a two-player board: payoff and win/draw/loss columns, the match breakdown, a match turn by
    turn with each move's seat, and the pairwise view on payoffs."""
    from tests.leaderboard.test_matches_board import ma_suite_data, play

    suite_file = tmp_path / "tiny-ma.json"
    suite_file.write_text(json.dumps(ma_suite_data(4)))
    from agentgym_bench.benchmark.suites import load_suite

    suite = load_suite(str(suite_file))
    board = tmp_path / "board"
    for name in ("scripted", "random"):
        (tmp_path / f"{name}.json.gz").write_bytes(play(name, suite))
        assert main(["submit", str(tmp_path / f"{name}.json.gz"), "--name", name, "--board", str(board),
                     "--suite", str(suite_file)]) == 0
    log = drive(board, MA_STEPS)
    assert "bargain-vs-random payoff" in log["headers"] and "bargain-self-play win / draw / loss" in log["headers"]
    assert "mean payoff" in log["legend"]
    assert len(log["breakdown"]) == 4 and log["breakdown"][1].startswith("bargain-vs-randomrandom4")
    assert "for the evaluated policy (player_0), payoffs player_0" in log["summary"]
    assert "player_0 (evaluated policy)" in log["turn_titles"][0] and "player_1 (opponent)" in log["turn_titles"][1]
    assert "A: random" in log["compare"][0] and "B: scripted" in log["compare"][0]
    assert len(log["compare"]) == 5 and "suite score" in log["compare"][1]


def test_the_readme_writes_numbers_as_the_page_does():
    """The page's ``toFixed`` rounds an exact tie away from zero, Python's format to even: agentgym-ma-v2's random
    deal rate 0.8125 read 0.812 in README.md and 0.813 in index.html. Expected values: ECMAScript's toFixed."""
    from agentgym_bench.leaderboard.render import fixed

    assert [fixed(x) for x in (0.8125, 0.3125, 0.0005, -0.0125, 0.1, 1.0)] == [
        "0.813", "0.313", "0.001", "-0.013", "0.100", "1.000"]
