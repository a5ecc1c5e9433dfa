"""One model location: ``resolve_model`` reads ``AGENTGYM_BENCH_HOME`` at call time and expands ``~``."""

import os
import socket
import subprocess
import sys
import time

import pytest

from agentgym_bench.errors import UserError
from agentgym_bench.paths import model_dir, resolve_model


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty ``AGENTGYM_BENCH_HOME`` and ``HOME`` under ``tmp_path``."""
    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(tmp_path / "bench"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user").mkdir()
    return tmp_path


def test_a_bare_name_resolves_under_the_home_set_at_call_time(home, monkeypatch):
    (home / "bench" / "models" / "warmstart").mkdir(parents=True)
    assert resolve_model("warmstart") == str(home / "bench" / "models" / "warmstart")
    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(home / "elsewhere"))
    assert model_dir("warmstart") == home / "elsewhere" / "models" / "warmstart"
    with pytest.raises(UserError, match="agentgym-bench warmstart"):
        resolve_model("warmstart")


def test_without_its_own_variable_home_follows_the_xdg_cache_folder(home, monkeypatch):
    monkeypatch.delenv("AGENTGYM_BENCH_HOME")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert model_dir("warmstart") == home / "user" / ".cache" / "agentgym-bench" / "models" / "warmstart"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "xdg"))
    assert model_dir("warmstart") == home / "xdg" / "agentgym-bench" / "models" / "warmstart"
    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(home / "bench"))
    assert model_dir("warmstart") == home / "bench" / "models" / "warmstart"


def test_tilde_and_variables_are_expanded(home, monkeypatch):
    (home / "user" / "m").mkdir()
    assert resolve_model("~/m") == str(home / "user" / "m")
    monkeypatch.setenv("MODELS", str(home / "user"))
    assert resolve_model("$MODELS/m") == str(home / "user" / "m")


@pytest.mark.parametrize(("name", "command"), [("default", "agentgym-bench init-model"),
                                               ("warmstart", "agentgym-bench warmstart")])
def test_a_missing_built_model_says_what_to_run(home, name, command):
    with pytest.raises(UserError, match=command) as error:
        resolve_model(name)
    assert str(home / "bench" / "models" / name) in str(error.value)


@pytest.mark.parametrize("path", ["/nonexistent", "~/no/such/model", "./model", "runs/models/warmstart", "m/"])
def test_a_missing_local_path_is_a_user_error_not_a_hub_lookup(home, path):
    with pytest.raises(UserError, match="init-model"):
        resolve_model(path)


@pytest.fixture
def hub(monkeypatch):
    """A real HTTP server on loopback as ``HF_ENDPOINT`` (it answers 404 to everything: the hub is reachable)."""
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    yield
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("hub_id", ["Qwen/Qwen2.5-0.5B-Instruct", "gpt2"])
def test_hub_ids_pass_through_when_the_hub_answers(home, hub, hub_id):
    assert resolve_model(hub_id) == hub_id


@pytest.mark.parametrize("typo, name", [("warmstrat", "warmstart"), ("defualt", "default"), ("my-modle", "my-model")])
def test_a_typo_of_a_local_name_suggests_it_and_asks_no_hub(home, hub, typo, name):
    (home / "bench" / "models" / "my-model").mkdir(parents=True)
    with pytest.raises(UserError, match=f"did you mean '{name}'") as error:
        resolve_model(typo)
    assert "Local models: my-model;" in str(error.value)  # only what exists: default and warmstart are not built
    if name != "my-model":
        assert f"{name}' (not built yet: `agentgym-bench " in str(error.value)


def test_a_missing_built_model_points_to_the_published_checkpoint(home, monkeypatch, tmp_path):
    """In a clone, a model the newcomer has not built names the one they have; outside one, where to get it."""
    with pytest.raises(UserError, match="published checkpoint .*: leaderboards/agentgym-v2/models/default-model-sft$"):
        resolve_model("warmstart")
    with pytest.raises(UserError, match="published checkpoint"):
        resolve_model("./no-such-model")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as error:
        resolve_model("warmstart")
    assert "comes with a clone of the repository" in str(error.value)
    assert "or use the published checkpoint" not in str(error.value)


def test_an_unreachable_hub_fails_at_once_naming_it(home, monkeypatch):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    start = time.perf_counter()
    with pytest.raises(UserError, match="cannot be reached") as error:
        resolve_model("org/not-cached-anywhere")
    assert time.perf_counter() - start < 2 and endpoint in str(error.value)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="HF_HUB_OFFLINE is set"):
        resolve_model("org/not-cached-anywhere")


def hub_cache(root, repo_id, model_dir):
    """``model_dir`` laid out as the Hugging Face hub cache holds a downloaded ``repo_id``."""
    import shutil

    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    shutil.copytree(model_dir, repo / "snapshots" / ("0" * 40))
    return repo / "snapshots" / ("0" * 40)


def cli(*args, env):
    return subprocess.run([sys.executable, "-m", "agentgym_bench.cli", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


def test_an_unreachable_hub_loads_a_cached_model_from_the_cache(home, tmp_path, model_dir):
    """``serve --model ORG/NAME`` with the hub unreachable: the cached snapshot is served, without waiting on
    retries; a name not cached fails with one line in well under the ~49 s of transformers' retries."""
    snapshot = hub_cache(tmp_path / "cache", "org/tiny", model_dir)
    env = {"HF_HUB_CACHE": str(tmp_path / "cache"), "HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}",
           "AGENTGYM_BENCH_HOME": str(home / "bench"), "HF_HUB_OFFLINE": ""}
    code = "from agentgym_bench.paths import resolve_model; print(resolve_model('org/tiny'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **env})
    assert out.stdout.strip() == str(snapshot.resolve()), out.stderr
    for args in (["serve", "--model", "org/missing", "--port", "0"], ["warmstart", "--model", "org/missing"],
                 ["eval", "--policy", "hf:org/missing"], ["serve", "--model", "warmstrat", "--port", "0"]):
        start = time.perf_counter()
        out = cli(*args, env=env)
        assert out.returncode == 2 and time.perf_counter() - start < 20, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr
        assert ("did you mean 'warmstart'" if "warmstrat" in args else "cannot be reached") in out.stderr


def test_an_empty_name_is_a_user_error(home):
    with pytest.raises(UserError):
        resolve_model("  ")


@pytest.mark.parametrize("name, machine", [
    ("/srv/someone/models/warmstart", True), ("~/models/x", True), ("$HOME/x", True), ("../outside", True),
    ("models/../../x", True), ("C:\\models\\x", True), ("\\\\server\\x", True),
    ("leaderboards/agentgym-v2/models/sft", False), ("warmstart", False), ("Qwen/Qwen2.5-0.5B-Instruct", False),
    ("runs/baselines-reference/runs/starpo", False), ("a..b/c", False),
])
def test_machine_paths_are_told_from_portable_names(name, machine):
    from agentgym_bench.paths import is_machine_path

    assert is_machine_path(name) is machine


def test_a_repository_root_is_the_nearest_folder_holding_leaderboards(tmp_path):
    from agentgym_bench.paths import repository_root

    (tmp_path / "repo" / "leaderboards" / "b" / "models" / "m").mkdir(parents=True)
    assert repository_root(tmp_path / "repo" / "leaderboards" / "b" / "models" / "m") == (tmp_path / "repo").resolve()
    assert repository_root(tmp_path / "repo" / "leaderboards" / "not-yet") == (tmp_path / "repo").resolve()
    assert repository_root(tmp_path / "elsewhere") is None


def test_a_model_is_recorded_by_its_repository_relative_path_or_its_home_name(home, monkeypatch):
    from agentgym_bench.rollout.specs import locate_model, model_name

    repo = home / "repo"
    (repo / "leaderboards" / "b" / "models" / "m").mkdir(parents=True)
    (home / "bench" / "models" / "warmstart").mkdir(parents=True)
    (home / "loose").mkdir()
    monkeypatch.chdir(repo / "leaderboards")
    assert model_name(str(repo / "leaderboards" / "b" / "models" / "m")) == "leaderboards/b/models/m"
    assert model_name("b/models/m") == "leaderboards/b/models/m"  # as the command line named it, from here
    assert model_name(str(home / "bench" / "models" / "warmstart")) == "warmstart"
    assert model_name("warmstart") == "warmstart" and model_name("Qwen/Qwen2.5-0.5B") == "Qwen/Qwen2.5-0.5B"
    assert model_name(str(home / "loose")) == str(home / "loose")  # outside any repository: as given
    run = repo / "runs" / "r"  # a trainer run: the checkpoint it plays now, which stays when the run goes on
    for step in (1, 2):
        (run / f"checkpoint-{step}" / "actor").mkdir(parents=True)
        (run / f"checkpoint-{step}" / "actor" / "config.json").write_text("{}")
    (run / "config.yaml").write_text("max_steps: 2\n")
    assert model_name(str(run)) == "runs/r/checkpoint-2/actor"
    assert model_name(str(run / "checkpoint-1")) == "runs/r/checkpoint-1/actor"
    assert locate_model("leaderboards/b/models/m", repo) == str(repo / "leaderboards" / "b" / "models" / "m")
    assert locate_model("leaderboards/b/models/m", home) is None  # only under the root given
    assert locate_model("warmstart", repo) == str(home / "bench" / "models" / "warmstart")
    assert locate_model("Qwen/Qwen2.5-0.5B", repo) is None
    # what a file names decides nothing this machine reads: no expansion, no climbing out; a literal folder is found
    monkeypatch.setenv("LOOSE", str(home / "loose"))
    assert locate_model(str(home / "loose"), repo) == str(home / "loose")
    for name in ("$LOOSE", "${LOOSE}", "~/loose", "leaderboards/../../loose"):
        assert locate_model(name, repo) is None, name
