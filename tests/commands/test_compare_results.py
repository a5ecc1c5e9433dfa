"""`agentgym-bench compare-results`, on the committed board's results files (real evaluations of the suite)."""

import gzip
import json
import subprocess
import sys
from pathlib import Path

from agentgym_bench.benchmark.results import read_results
from agentgym_bench.benchmark.suites import load_suite
from agentgym_bench.leaderboard.render import PAIRED_REPS, compare
from agentgym_bench.stats import paired_difference
from tests.leaderboard.conftest import TINY_SUITE, play

BOARD = Path(__file__).resolve().parents[2] / "leaderboards"
ORACLE, RANDOM = (BOARD / "agentgym-v1" / "submissions" / f"{n}.json.gz" for n in ("oracle", "random"))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentgym_bench.cli", "compare-results", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_each_file_against_the_first_with_the_boards_paired_numbers():
    out = cli(RANDOM, ORACLE, RANDOM)
    assert out.returncode == 0, out.stderr
    tables = out.stdout.split("oracle.json.gz against random.json.gz")[1].split("random.json.gz against")
    suite = load_suite("agentgym-v1")
    c = compare(suite, read_results(RANDOM), read_results(ORACLE))
    rows = {line.split("|")[1].strip(): line for line in tables[0].splitlines() if line.startswith("| ")}
    assert set(rows) == {"entry", "score", *(e.name for e in suite.entries)}
    s = c["suite"]
    assert f"{s['difference']:+.3f} [{s['low']:+.3f}, {s['high']:+.3f}]" in rows["score"] and s["low"] > 0
    e = c["entries"]["frozenlake-noslip"]
    assert f"| {e['a']:.3f} | {e['b']:.3f} | {e['difference']:+.3f}" in rows["frozenlake-noslip"]
    assert "| score | " in tables[1] and "+0.000 [+0.000, +0.000] | 1 |" in tables[1]  # a file against itself
    # graded rewards: WebShop's mean purchase score, paired on the same goals, beside the success rate
    r = paired_difference(read_results(RANDOM).entry("webshop").returns(),
                          read_results(ORACLE).entry("webshop").returns(), reps=PAIRED_REPS)
    assert rows["webshop"].endswith(f"| {r.mean_a:.3f} | {r.mean_b:.3f} | {r.difference:+.3f} [{r.low:+.3f}, "
                                    f"{r.high:+.3f}] |") and r.mean_b == 1.0 and r.mean_a < 0


def test_a_two_player_suite_pairs_mean_payoffs():
    ma = BOARD / "agentgym-ma-v1" / "submissions"
    out = cli(ma / "random.json.gz", ma / "scripted.json.gz")
    assert out.returncode == 0, out.stderr
    assert "mean payoffs, no p" in out.stdout and "| bargain-vs-random | " in out.stdout
    assert all(line.endswith("| - |") for line in out.stdout.splitlines()[3:] if line.startswith("| "))


def test_files_of_a_suite_file_are_compared_with_suite(tmp_path):
    suite_file = tmp_path / "tiny.json"
    suite_file.write_text(json.dumps(TINY_SUITE))
    suite = load_suite(str(suite_file))
    for name in ("oracle", "random"):
        (tmp_path / f"{name}.json.gz").write_bytes(play(name, suite))
    files = (tmp_path / "random.json.gz", tmp_path / "oracle.json.gz")
    out = cli("--suite", suite_file, *files)
    assert out.returncode == 0, out.stderr
    assert "same seeds of tiny" in out.stdout and "| sokoban-6x6 | " in out.stdout
    without = cli(*files)  # the suite is no bundled one: said in one line
    assert without.returncode == 2 and "not a bundled suite" in without.stderr and without.stderr.count("\n") == 1


def test_files_that_cannot_be_paired_are_one_line_errors(tmp_path):
    other_suite = BOARD / "agentgym-ma-v1" / "submissions" / "random.json.gz"
    data = json.loads(gzip.decompress(ORACLE.read_bytes()))
    data["entries"][0]["episodes"].pop()  # a seed missing: nothing to pair it with
    short = tmp_path / "short.json.gz"
    short.write_bytes(gzip.compress(json.dumps(data).encode()))
    for args, message in [((ORACLE, tmp_path / "none.json.gz"), "does not exist"),
                          ((ORACLE, other_suite), "agentgym-ma-v1"),
                          ((ORACLE, short), f"{short}: entry {data['entries'][0]['name']}: the seeds must be")]:
        out = cli(*args)
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert out.stderr.startswith("agentgym-bench: error:") and message in out.stderr


def test_quick_checks_of_the_same_episodes_are_compared_and_others_refused(tmp_path):
    """Two quick checks (eval --episodes / --entries) of the same episodes pair on them (issue 64: checking `serve`
    against local eval is done on quick checks); a quick check against the whole suite, or of other episodes, is one
    line."""
    def run(policy: str, out: str, *quick: str) -> Path:
        done = subprocess.run([sys.executable, "-m", "agentgym_bench.cli", "eval", "--policy", policy, "--suite",
                               "agentgym-v2", *quick, "--out", str(tmp_path / out)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return tmp_path / out

    quick = ("--episodes", "5", "--entries", "bandit", "sokoban-6x6")
    a, b = run("random", "a.json.gz", *quick), run("oracle", "b.json.gz", *quick)
    out = cli(a, b)
    assert out.returncode == 0, out.stderr
    assert "a quick check (--episodes 5 --entries bandit sokoban-6x6): the score is over its entries" in out.stdout
    rows = {line.split("|")[1].strip() for line in out.stdout.splitlines() if line.startswith("| ")}
    assert rows == {"entry", "score", "bandit", "sokoban-6x6"}
    # a quick check against a whole file (a board's submission): the whole file cut to the quick check's episodes
    whole = BOARD / "agentgym-v2" / "submissions" / "oracle.json.gz"
    out = cli(whole, b)
    assert out.returncode == 0, out.stderr
    assert "the base cut to the quick check's episodes, --episodes 5 --entries bandit sokoban-6x6" in out.stdout
    rows = {line.split("|")[1].strip(): line for line in out.stdout.splitlines() if line.startswith("| ")}
    assert set(rows) == {"entry", "score", "bandit", "sokoban-6x6"}
    assert "+0.000 [+0.000, +0.000]" in rows["score"]  # the oracle plays the board's first five seeds again
    other = run("oracle", "c.json.gz", "--episodes", "4", "--entries", "bandit", "sokoban-6x6")
    for args, message in [((a, other), "is a quick check (--episodes 4 --entries bandit sokoban-6x6), the base is a "
                                       "quick check (--episodes 5"),
                          ((ORACLE, a), "agentgym-v2"),  # another suite's whole file
                          ((a, ORACLE), "is the whole suite, the base is a quick check")]:
        out = cli(*args)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
