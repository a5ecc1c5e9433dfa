"""One model location: ``resolve_model`` reads ``AGENTGYM_BENCH_HOME`` at call time and expands ``~``."""

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


@pytest.mark.parametrize("hub_id", ["Qwen/Qwen2.5-0.5B-Instruct", "gpt2"])
def test_hub_ids_pass_through(home, hub_id):
    assert resolve_model(hub_id) == hub_id


def test_an_empty_name_is_a_user_error(home):
    with pytest.raises(UserError):
        resolve_model("  ")
