"""The command line, run the way a user runs it (a real subprocess, real stdin)."""

import importlib.util
import os
import socket
import subprocess
import sys

import pytest
import torch

import agentgym_bench
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


def test_options_may_sit_between_positional_arguments(capsys):
    from agentgym_bench.cli import main

    assert main(["train", "starpo-sokoban", "--print-config", "max_steps=7", "seed=3"]) == 0
    printed = capsys.readouterr().out
    assert "max_steps: 7" in printed and "seed: 3" in printed


def test_envs_lists_every_id_one_line_each():
    lines = cli("envs").stdout.splitlines()
    assert [line.split()[0] for line in lines if not line.startswith("(")] == list(AGENT_ENVS)
    assert lines[-1].startswith("(two-player, PettingZoo: Bargain-v1") and "play Bargain-v1" in lines[-1]
    if importlib.util.find_spec("textarena") is not None:  # the bridge's ids, counted, and listed on request
        assert lines[-2].startswith("(and ") and "envs --textarena" in lines[-2]
        listed = cli("envs", "--textarena").stdout.splitlines()
        assert sum(line.startswith("AgentTextArena/") for line in listed) == int(lines[-2].split()[1])


def test_play_a_whole_episode_from_stdin():
    out = cli("play", "AgentFrozenLake-v0", "--seed", "0", stdin="Jump\nLeft Down\nUp || Right\nLeft\nDown\nUp\n")
    assert out.returncode == 0, out.stderr
    assert "invalid ['Jump']" in out.stdout
    assert "Episode over:" in out.stdout


def test_play_in_tool_format_writes_bare_actions_as_a_tool_call_and_names_the_format():
    out = cli("play", "AgentFrozenLakeNoSlip-v0", "--arg", "action_format=tool",
              stdin="Up Left\n<tool_call>x</tool_call>\n")
    assert out.returncode == 0, out.stderr
    assert "executed ['Up', 'Left']" in out.stdout
    assert 'write <think>...</think><tool_call>{"name": "take_actions"' in out.stdout


def test_play_stops_cleanly_when_input_ends():
    out = cli("play", "AgentSokoban-v0", "--seed", "1", stdin="Up\n")
    assert out.returncode == 0 and "(input closed)" in out.stdout


def test_play_a_seat_of_a_two_player_textarena_game_against_a_model():
    pytest.importorskip("textarena")
    model = os.path.join(os.path.dirname(__file__), "..", "leaderboards", "agentgym-v2", "models", "default-model-sft")
    out = cli("play", "TextArena/TicTacToe-v0", "--opponent", f"hf:{model}", stdin="[4]\n[0]\n[8]\n[2]\n[6]\n")
    assert out.returncode == 0, out.stderr
    assert "--- your turn (player_0) ---" in out.stdout and "[Player 1]" in out.stdout  # the model's move shown
    assert "--- game over ---" in out.stdout or "(input closed)" in out.stdout


def test_play_rejects_unknown_env_argument_with_its_name():
    out = cli("play", "AgentSokoban-v0", "--arg", "colour=red")
    assert out.returncode == 2 and "colour" in out.stderr and "Traceback" not in out.stderr
    assert "the agent wrapper takes" in out.stderr and "raised from the environment creator" not in out.stderr


def test_demo_scores_oracle_above_random():
    out = cli("demo", "--episodes", "40", "--env", "AgentFrozenLakeNoSlip-v0")
    assert out.returncode == 0, out.stderr
    rows = {line.split()[1]: float(line.split()[2]) for line in out.stdout.splitlines()
            if line.startswith("AgentFrozenLakeNoSlip-v0")}
    assert rows["oracle"] > rows["random"] + 0.3


# -- ordinary mistakes: one line on stderr, exit code 2, no traceback (unless --debug) ---------------------------


@pytest.fixture
def empty_home(tmp_path, monkeypatch):
    """A fresh ``AGENTGYM_BENCH_HOME`` with no model built, and no hub access."""
    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("AGENTGYM_BENCH_DEBUG", raising=False)
    return tmp_path


@pytest.fixture
def busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


MISTAKES = {
    "demo with an unknown env": (["demo", "--env", "NoSuchEnv-v0", "--episodes", "1"],
                                 ["unknown env id", "NoSuchEnv-v0", "agentgym-bench envs"]),
    "play with an unknown env": (["play", "AgentSokobn-v0"], ["did you mean AgentSokoban-v0"]),
    "demo with an env's short name": (["demo", "--env", "sokoban", "--episodes", "1"],
                                      ["'sokoban'", "did you mean one of AgentSokoban-v0, AgentSokobanLarge-v0"]),
    "play with a misspelt short name": (["play", "frozenlak"], ["did you mean one of AgentFrozenLake-v0"]),
    "play with a malformed --arg": (["play", "AgentSokoban-v0", "--arg", "num_boxes"], ["KEY=VALUE"]),
    "play with an impossible argument": (["play", "AgentSokoban-v0", "--arg", "num_boxes=0"], ["num_boxes=0"]),
    "play a seat of a one-player env": (["play", "AgentSokoban-v0", "--seat", "player_1"],
                                        ["--seat is for two-player envs", "has one player"]),
    "serve before init-model": (["serve"], ["no model 'default'", "agentgym-bench init-model"]),
    "serve a missing folder": (["serve", "--model", "/nonexistent/model"], ["/nonexistent/model", "init-model"]),
    "serve a missing folder given as vllm serve's": (["serve", "/nonexistent/model"],
                                                     ["/nonexistent/model", "init-model"]),
    "serve two models": (["serve", "/a/model", "--model", "/b/model"], ["two models given", "serve one"]),
    "serve on a port in use": (["serve", "{model}", "--port", "{port}"], ["port is in use", "--port 0"]),
    "serve a folder without a model": (["serve", "--model", "{tmp}"], ["cannot load a model from",
                                                                       "no config.json, so it is not a Hugging Face"]),
    "eval an endpoint without http://": (["eval", "--policy", "openai:m@127.0.0.1:8000/v1", "--out", "{tmp}/e.json"],
                                         ["must start with http:// or https://", "openai:m@http://127.0.0.1:8000/v1"]),
    "serve on cuda without a GPU": (["serve", "--model", "{model}", "--device", "cuda", "--port", "0"],
                                    ["device 'cuda': this torch", "--device cpu"]),
    "webshop-serve on a port in use": (["webshop-serve", "--port", "{port}"], ["port is in use", "--port 0"]),
    "webshop-serve with a missing catalog": (["webshop-serve", "--catalog", "/nonexistent.json"], ["no such file"]),
    "init-model with width not divisible by heads": (["init-model", "--path", "{tmp}/m", "--width", "30"],
                                                      ["multiple of --heads"]),
    "init-model onto a file": (["init-model", "--path", "{model}/config.json"], ["is a file: give a folder"]),
    "init-model over another model": (["init-model", "--path", "{model}", "--seed", "5"],
                                      ["already holds", "--overwrite"]),
    "eval with a prompt for no entry": (["eval", "--policy", "oracle", "--prompt", "bandit=compact,foo=ragen"],
                                        ["prompts name entries ['foo']", "its entries: bandit"]),
    "warmstart into a file": (["warmstart", "output={model}/config.json", "episodes=2"],
                              ["is a file: a warm start writes a model folder"]),
    "serve with its key's variable unset": (["serve", "--model", "{model}", "--api-key-env", "AGB_NO_SUCH_KEY"],
                                            ["--api-key-env AGB_NO_SUCH_KEY: the variable is unset or empty"]),
    "warmstart with a misspelt env": (["warmstart", "envs=[AgentFrozenLak-v0]"], ["did you mean AgentFrozenLake-v0"]),
    "eval of a suite that is a folder": (["eval", "--policy", "oracle", "--suite", "{tmp}"], ["is a folder"]),
    "submit a folder": (["submit", "{tmp}", "--name", "x", "--check"], ["results file", "is a folder"]),
    "warmstart on zero threads": (["warmstart", "--threads", "0"], ["--threads 0 must be >= 1"]),
    "warmstart with zero epochs": (["warmstart", "--epochs", "0"], ["epochs=0 must be >= 1"]),
    "warmstart with a demonstrator the env lacks": (["warmstart", "--demonstrator", "AgentSokoban-v0=first-hit"],
                                                    ["--demonstrator AgentSokoban-v0=first-hit", "WebShop only"]),
}


@pytest.mark.parametrize("name", MISTAKES)
def test_ordinary_mistakes_are_one_line_and_exit_code_2(name, empty_home, busy_port, model_dir, capsys):
    from agentgym_bench.cli import main

    argv, expected = MISTAKES[name]
    if "cuda" in argv and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    argv = [a.format(tmp=empty_home, port=busy_port, model=model_dir) for a in argv]
    threads = torch.get_num_threads()
    assert main(argv) == 2
    assert torch.get_num_threads() == threads  # a refused command changes nothing (later tests rely on one thread)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("agentgym-bench: error: "), err
    for text in expected:
        assert text in lines[0]


@pytest.mark.parametrize("argv", [["serve", "--port", "70000"], ["webshop-serve", "--port", "-1"],
                                  ["serve", "--port", "http"], ["play", "AgentSokoban-v0", "--seed", "-1"],
                                  ["eval", "--policy", "oracle", "--temperature", "-1"],
                                  ["eval", "--policy", "oracle", "--top-p", "0"],
                                  ["eval", "--policy", "oracle", "--timeout", "0"],
                                  ["eval", "--policy", "oracle", "--max-concurrency", "0"]])
def test_out_of_range_numbers_are_refused_by_the_parser(argv, capsys):
    from agentgym_bench.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert argv[-2] in capsys.readouterr().err


def test_debug_flag_and_variable_show_the_traceback(tmp_path):
    env = {**os.environ, "AGENTGYM_BENCH_HOME": str(tmp_path)}
    env.pop("AGENTGYM_BENCH_DEBUG", None)
    args = ["demo", "--env", "NoSuchEnv-v0"]
    plain = subprocess.run([sys.executable, "-m", "agentgym_bench.cli", *args], capture_output=True, text=True,
                           timeout=120, env=env)
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert plain.stderr.strip() == "agentgym-bench: error: " + plain.stderr.strip().split("error: ", 1)[1]
    flagged = subprocess.run([sys.executable, "-m", "agentgym_bench.cli", "--debug", *args], capture_output=True,
                             text=True, timeout=120, env=env)
    assert "Traceback" in flagged.stderr and "UserError" in flagged.stderr
    variable = subprocess.run([sys.executable, "-m", "agentgym_bench.cli", *args], capture_output=True, text=True,
                              timeout=120, env={**env, "AGENTGYM_BENCH_DEBUG": "1"})
    assert "Traceback" in variable.stderr
    after = subprocess.run([sys.executable, "-m", "agentgym_bench.cli", *args, "--debug"], capture_output=True,
                           text=True, timeout=120, env=env)  # after the command, as its other flags are
    assert "Traceback" in after.stderr and "UserError" in after.stderr


def test_train_into_a_file_is_one_line(model_dir):
    """In a process of its own, as a user's: train turns transformers' progress bars off for its process."""
    out = cli("train", "gigpo-frozenlake", f"output_dir={model_dir}/config.json")
    assert out.returncode == 2 and out.stderr.strip() == (
        f"agentgym-bench train: error: output_dir {model_dir}/config.json is a file: a run writes a folder (e.g. "
        "runs/mine)")
    out = cli("train", "gigpo-frozenlak")
    assert out.returncode == 2 and "did you mean gigpo-frozenlake?" in out.stderr


def test_version_and_a_reader_that_goes_away():
    assert cli("--version").stdout.strip() == f"agentgym-bench {agentgym_bench.__version__}"
    piped = subprocess.run(f"{sys.executable} -m agentgym_bench.cli envs --textarena | head -1", shell=True,
                           capture_output=True, text=True, timeout=120)
    assert piped.stdout.startswith("AgentBandit-v0") and "Traceback" not in piped.stderr, piped.stderr


def test_play_webshop_keeps_a_typed_action_whole_and_flags_a_bad_format():
    out = cli("play", "AgentWebShop-v0", "--seed", "0",
              stdin="search[pink portable charger]\n<answer>click[back to search]</answer>\n")
    assert out.returncode == 0, out.stderr
    assert "executed ['search[pink portable charger]']" in out.stdout
    assert "invalid reply format" in out.stdout
    assert "Type a move as the instructions above write it" in out.stdout  # no list of actions to quote
    assert "actions: open text, as the instructions say]" in out.stdout


def test_plain_text_drops_restructuredtext_markup():
    from agentgym_bench.cli import plain_text

    doc = ("``agentgym-bench x``: see :func:`~agentgym_bench.leaderboard.verify.verify`, :mod:`agentgym_bench.seeds`"
           " and :ref:`the page <page>`; the **published** one.\n\nExamples::\n\n    agentgym-bench x --y\n")
    assert plain_text(doc) == ("agentgym-bench x: see verify, agentgym_bench.seeds and the page; the published one."
                               "\n\nExamples:\n\n    agentgym-bench x --y\n")
    assert plain_text(None) is None


@pytest.mark.parametrize("command", ["baselines", "submit", "reproduce", "compare-results", "eval", "board",
                                     "publish-model"])
def test_command_help_shows_no_restructuredtext(command):
    """These commands build their description and epilog from their module docstring (reST)."""
    out = cli(command, "--help")
    assert out.returncode == 0 and f"agentgym-bench {command}" in out.stdout
    for markup in ("``", ":func:`", ":mod:`", ":class:`", ":data:`", "::\n"):
        assert markup not in out.stdout, (markup, out.stdout)


def test_play_reads_arg_values_as_python_or_yaml():
    """``play --arg`` takes the spellings ``train``'s overrides take (``false``, ``null``) as well as Python's."""
    from agentgym_bench.commands.play import parse_kwargs

    assert parse_kwargs(["a=true", "b=False", "c=null", "d=None", "e=compact", "f=[x, y]", "g=2", "h=search[red mug]"]
                        ) == {"a": True, "b": False, "c": None, "d": None, "e": "compact", "f": ["x", "y"], "g": 2,
                              "h": "search[red mug]"}


@pytest.mark.parametrize("args, words", [
    (["play", "AgentWebShop-v0", "--arg", "split=test"], "the test goals are held out"),
    (["play", "AgentWebShop-v0", "--arg", "backend=http", "--arg", "base_url=http://127.0.0.1:1"],
     "is the WebShop server running?"),
])
def test_a_mistake_found_at_reset_is_one_line(args, words):
    out = cli(*args, stdin="x\n")
    assert out.returncode == 2 and "Traceback" not in out.stderr and words in out.stderr, out.stderr


def test_webshop_serve_names_a_file_that_is_no_catalog(tmp_path):
    plain = tmp_path / "catalog.json"
    plain.write_text("{}")
    out = cli("webshop-serve", "--catalog", str(plain), "--port", "0")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "not a catalog file" in out.stderr, out.stderr


def test_warmstart_help_lists_every_key_of_its_config():
    import dataclasses

    from trainers.sft.sft_config import SFTConfig

    text = " ".join(cli("warmstart", "--help").stdout.split())
    listed = text.split("keys (trainers/sft/sft_config.py, docs/trainers.md): ")[1].split(".")[0].split(", ")
    assert sorted(listed) == sorted(f.name for f in dataclasses.fields(SFTConfig))


def test_eval_names_an_entry_that_cannot_start_before_playing(tmp_path):
    """A suite file's WebShop entry naming a server that is not running: one line, nothing played (a traceback)."""
    import json

    from agentgym_bench.benchmark.suites import load_suite, suite_to_dict

    data = suite_to_dict(load_suite("agentgym-v2"))
    data["name"], data["entries"] = "mine", [e for e in data["entries"] if e["name"] == "webshop"]
    data["entries"][0]["env_kwargs"] = {"backend": "http", "base_url": "http://127.0.0.1:1"}
    (tmp_path / "suite.json").write_text(json.dumps(data))
    out = cli("eval", "--suite", str(tmp_path / "suite.json"), "--policy", "oracle", "--out",
              str(tmp_path / "r.json.gz"))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "entry webshop cannot start" in out.stderr and "is the WebShop server running?" in out.stderr
    assert not (tmp_path / "r.json.gz").exists() and not (tmp_path / "r.json.gz.partial").exists()


def test_eval_of_an_archived_suite_says_its_board_takes_nothing_new(tmp_path):
    out = cli("eval", "--suite", "agentgym-v1", "--policy", "oracle", "--episodes", "1", "--entries", "bandit",
              "--out", str(tmp_path / "r.json.gz"))
    assert out.returncode == 0, out.stderr
    assert "agentgym-v1 is archived (superseded by agentgym-v2): its board takes no new files" in out.stdout


def test_a_full_disk_is_one_line_and_the_same_command_goes_on(tmp_path):
    """A file-size limit (``ulimit -f``, EFBIG) stands in for a full disk: ``eval`` stops with one line naming the file
    it could not write, leaves no temporary file, and the same command run again keeps what it finished."""
    import resource
    import signal

    out = tmp_path / "random.json.gz"
    argv = [sys.executable, "-m", "agentgym_bench.cli", "eval", "--policy", "random", "--suite", "agentgym-v2",
            "--episodes", "20", "--out", str(out)]

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, not a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (1500, 1500))

    stopped = subprocess.run(argv, capture_output=True, text=True, timeout=120, preexec_fn=small_files)
    assert stopped.returncode == 1, stopped.stderr
    last = stopped.stderr.strip().splitlines()[-1]
    assert last.startswith("agentgym-bench: error: File too large: ") and "Traceback" not in stopped.stderr
    assert "random.json.gz.partial" in last and "keeps the entries it finished" in last
    assert not [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]
    finished = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert out.exists()


def test_storage_errors_are_found_behind_other_errors():
    import errno

    from agentgym_bench.cli import storage_error

    full = OSError(errno.ENOSPC, "No space left on device", "/x/model.safetensors")
    try:
        try:
            raise full
        except OSError as err:
            raise RuntimeError("saving failed") from err
    except RuntimeError as chained:
        assert storage_error(chained) is full
    safetensors = RuntimeError("Error while serializing: I/O error: Read-only file system (os error 30)")
    assert storage_error(safetensors).errno == errno.EROFS
    assert storage_error(RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed")).errno \
        == errno.ENOSPC
    assert storage_error(FileNotFoundError(errno.ENOENT, "No such file")) is None  # a program's error: a traceback
    assert storage_error(ValueError("bad (os error 2)")) is None


def test_output_and_overwrite_flags_have_one_name_across_commands():
    """eval's --out and --overwrite work on init-model and publish-model too (their own --path, --replace stay)."""
    import argparse

    from agentgym_bench.commands import publish_model
    from trainers.sft import default_model

    parser = argparse.ArgumentParser()
    default_model.configure_parser(parser)
    assert parser.parse_args(["--out", "m"]).path == parser.parse_args(["--path", "m"]).path == "m"
    parser = argparse.ArgumentParser()
    publish_model.configure_parser(parser)
    assert parser.parse_args(["RUN", "--name", "x", "--overwrite"]).replace
    assert parser.parse_args(["RUN", "--name", "x", "--replace"]).replace
