"""The command line, run the way a user runs it (a real subprocess, real stdin)."""

import subprocess
import sys

from agentgym_bench.registration import AGENT_ENVS


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentgym_bench.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=120)


def test_help_lists_commands():
    out = cli("--help")
    assert out.returncode == 0
    for name in ["envs", "play", "demo", "init-model", "warmstart", "train", "serve", "webshop-serve"]:
        assert name in out.stdout


def test_unknown_command_fails_with_message():
    out = cli("fly")
    assert out.returncode != 0 and "invalid choice" in out.stderr


def test_envs_lists_every_id_one_line_each():
    lines = cli("envs").stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(AGENT_ENVS)


def test_play_a_whole_episode_from_stdin():
    out = cli("play", "AgentFrozenLake-v0", "--seed", "0", stdin="Jump\nLeft Down\nUp || Right\nLeft\nDown\nUp\n")
    assert out.returncode == 0, out.stderr
    assert "invalid ['Jump']" in out.stdout
    assert "Episode over:" in out.stdout


def test_play_stops_cleanly_when_input_ends():
    out = cli("play", "AgentSokoban-v0", "--seed", "1", stdin="Up\n")
    assert out.returncode == 0 and "(input closed)" in out.stdout


def test_play_rejects_unknown_env_argument_with_its_name():
    out = cli("play", "AgentSokoban-v0", "--arg", "colour=red")
    assert out.returncode == 2 and "colour" in out.stderr and "Traceback" not in out.stderr


def test_demo_scores_oracle_above_random():
    out = cli("demo", "--episodes", "40", "--env", "AgentFrozenLakeNoSlip-v0")
    assert out.returncode == 0, out.stderr
    rows = {line.split()[1]: float(line.split()[2]) for line in out.stdout.splitlines()
            if line.startswith("AgentFrozenLakeNoSlip-v0")}
    assert rows["oracle"] > rows["random"] + 0.3
