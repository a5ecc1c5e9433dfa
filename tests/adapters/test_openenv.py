"""The OpenEnv route on a real server on loopback: same episodes as the native env, isolated and bounded sessions,
garbage, disconnects, idle expiry; the named splits (Task API and reset(split, index)); `openenv validate` on the
server and on the shipped manifest. Every loop is bounded in count and every wait has a deadline. The pinned
openenv-core 0.3 client: tests/adapters/test_openenv_pinned_client.py."""

from __future__ import annotations

import asyncio
import gc
import json
import time
from contextlib import ExitStack

import pytest

pytest.importorskip("openenv.core", reason="the OpenEnv route needs openenv: pip install -e '.[openenv]'")

import requests  # noqa: E402 - a dependency of openenv-core
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from agentgym_bench.adapters.openenv import AgentEnvClient, AgentOpenEnv, make_app  # noqa: E402
from agentgym_bench.agent import LLMAgentEnv  # noqa: E402
from agentgym_bench.errors import UserError  # noqa: E402
from agentgym_bench.http_body import ServerLimits  # noqa: E402
from tests.adapters.conftest import serving  # noqa: E402
from tests.adapters.episodes import native_episode, scripted_replies  # noqa: E402

IDS = ["AgentFrozenLake-v0", "AgentSokoban-v0", "AgentBandit-v0"]


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/ws"


def ask(ws, message: dict | str, timeout: float = 20) -> dict:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.recv(timeout=timeout))


def wait_until(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within the deadline")
        time.sleep(0.05)


def live_agent_envs() -> int:
    gc.collect()
    return sum(type(o) is LLMAgentEnv for o in gc.get_objects())  # type(): isinstance wakes lazy modules


def assert_same_step(result, expected) -> None:
    obs, reward, terminated, truncated, info = expected
    assert result.observation.text == obs
    assert result.reward == reward
    assert result.done == (terminated or truncated)
    assert result.observation.truncated == truncated
    assert result.observation.info == info


@pytest.fixture(scope="module")
def server():
    app = make_app(IDS, limits=ServerLimits(max_sessions=16, session_ttl=60))
    with serving(app) as url:
        yield url, app.app.state.env_server


def test_episodes_match_the_native_env_for_the_same_seed_and_replies(server):
    url, _ = server
    with AgentEnvClient(url).sync() as env:
        for env_id in IDS:
            for seed in (0, 7):
                replies = scripted_replies(env_id, seed, rng_seed=seed)
                expected = native_episode(env_id, seed, replies)
                assert_same_step(env.reset(seed=seed, env_id=env_id), expected[0])
                for reply, step in zip(replies, expected[1:], strict=True):
                    assert_same_step(env.step(reply), step)
                state = env.state()
                assert (state.env_id, state.seed, state.step_count, state.done) == (env_id, seed, len(replies), True)
                assert state.episode_reward == pytest.approx(sum(s[1] for s in expected[1:]))


def test_concurrent_sessions_are_isolated(server):
    url, env_server = server
    plans = [("AgentSokoban-v0" if i % 2 else "AgentFrozenLake-v0", 100 + i) for i in range(8)]

    async def play(env_id: str, seed: int) -> list:
        replies = scripted_replies(env_id, seed, rng_seed=seed)
        async with AgentEnvClient(url) as env:
            results = [await env.reset(seed=seed, env_id=env_id)]
            for reply in replies:
                results.append(await env.step(reply))
                await asyncio.sleep(0)  # interleave the sessions' steps
        return replies, results

    async def main():
        return await asyncio.wait_for(asyncio.gather(*(play(e, s) for e, s in plans)), 120)

    for (env_id, seed), (replies, results) in zip(plans, asyncio.run(main()), strict=True):
        for result, expected in zip(results, native_episode(env_id, seed, replies), strict=True):
            assert_same_step(result, expected)
    wait_until(lambda: env_server.active_sessions == 0)


def test_sessions_beyond_the_limit_are_refused_and_slots_come_back():
    app = make_app(["AgentFrozenLake-v0"], limits=ServerLimits(max_sessions=2, session_ttl=60))
    with serving(app) as url:
        stack = ExitStack()
        first = stack.enter_context(connect(ws_url(url), open_timeout=10))
        second = stack.enter_context(connect(ws_url(url), open_timeout=10))
        assert ask(first, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        assert ask(second, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        with connect(ws_url(url), open_timeout=10) as third:
            refused = json.loads(third.recv(timeout=10))
            assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"
        first.close()
        wait_until(lambda: app.app.state.env_server.active_sessions == 1)
        with connect(ws_url(url), open_timeout=10) as again:
            assert ask(again, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        stack.close()


@pytest.mark.parametrize("message, code, words", [
    ("not json {", "INVALID_JSON", "Invalid JSON"),
    ({"type": "teleport"}, "UNKNOWN_TYPE", "teleport"),
    ({"type": "step", "data": {"reply": "<answer>Up</answer>"}}, "EXECUTION_ERROR", "send reset first"),
    ({"type": "step", "data": {}}, "VALIDATION_ERROR", "Invalid message"),
    ({"type": "step", "data": {"reply": 12}}, "VALIDATION_ERROR", "Invalid message"),
    ({"type": "step", "data": {"reply": "x", "extra": 1}}, "VALIDATION_ERROR", "Invalid message"),
    ({"type": "reset", "data": {"seed": "abc"}}, "EXECUTION_ERROR", "non-negative integer"),
    ({"type": "reset", "data": {"seed": -1}}, "EXECUTION_ERROR", "non-negative integer"),
    ({"type": "reset", "data": {"env_id": "AgentChess-v0"}}, "EXECUTION_ERROR", "not served here"),
    ({"type": "reset", "data": {"level": 3}}, "EXECUTION_ERROR", "unknown reset arguments ['level']"),
    ({"type": "reset", "data": {"split": "dev"}}, "EXECUTION_ERROR", "not a split of this environment"),
    ({"type": "reset", "data": {"split": "test", "index": 10**6}}, "EXECUTION_ERROR", "outside split 'test'"),
    ({"type": "reset", "data": {"split": "test", "index": -1}}, "EXECUTION_ERROR", "outside split 'test'"),
    ({"type": "reset", "data": {"split": "test", "seed": 3}}, "EXECUTION_ERROR", "not both"),
    ({"type": "reset", "data": {"index": 3}}, "EXECUTION_ERROR", "index needs a split"),
])
def test_garbage_gets_an_error_and_the_session_goes_on(server, message, code, words):
    url, _ = server
    with connect(ws_url(url), open_timeout=10) as ws:
        reply = ask(ws, message)
        assert reply["type"] == "error" and reply["data"]["code"] == code
        assert words in reply["data"]["message"]
        obs = ask(ws, {"type": "reset", "data": {"seed": 2}})  # the same session still works
        assert obs["type"] == "observation" and "FrozenLake" in obs["data"]["observation"]["text"]


def test_a_message_that_is_not_a_json_object_ends_that_session_only(server):
    url, env_server = server
    with connect(ws_url(url), open_timeout=10) as ws:
        reply = ask(ws, [1, 2, 3])
        assert reply["type"] == "error" and reply["data"]["code"] == "SESSION_ERROR"  # OpenEnv ends the session
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=10)
    wait_until(lambda: env_server.active_sessions == 0)
    with AgentEnvClient(url).sync() as env:
        assert not env.reset(seed=0).done


def test_oversized_frames_close_that_connection_only():
    app = make_app(["AgentFrozenLake-v0"], limits=ServerLimits(max_sessions=4, session_ttl=60, ws_max_bytes=1 << 16))
    with serving(app) as url:
        with connect(ws_url(url), open_timeout=10, max_size=None) as ws:
            ws.send(json.dumps({"type": "step", "data": {"reply": "x" * (1 << 17)}}))
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=10)
        wait_until(lambda: app.app.state.env_server.active_sessions == 0)
        with AgentEnvClient(url).sync() as env:
            assert not env.reset(seed=0).done


def test_clients_that_vanish_mid_episode_leave_nothing_behind(server):
    url, env_server = server
    baseline = live_agent_envs()
    for round_ in range(5):
        stack = ExitStack()
        sockets = [stack.enter_context(connect(ws_url(url), open_timeout=10)) for _ in range(8)]
        for i, ws in enumerate(sockets):
            assert ask(ws, {"type": "reset", "data": {"seed": round_ * 8 + i}})["type"] == "observation"
            assert ask(ws, {"type": "step", "data": {"reply": "<answer>Up</answer>"}})["type"] == "observation"
        assert env_server.active_sessions == 8
        for ws in sockets:
            ws.socket.close()  # the TCP connection drops with no close frame
        wait_until(lambda: env_server.active_sessions == 0)
        stack.close()
    wait_until(lambda: live_agent_envs() <= baseline)


def test_idle_sessions_expire_and_memory_stays_bounded():
    """Clients open sessions and never close them: the TTL ends each, so live envs never exceed the limit."""
    app = make_app(["AgentFrozenLake-v0"], limits=ServerLimits(max_sessions=4, session_ttl=0.5))
    env_server = app.app.state.env_server
    with serving(app) as url:
        baseline = live_agent_envs()
        held, stack = [], ExitStack()
        for _ in range(4):
            for i in range(4):
                ws = stack.enter_context(connect(ws_url(url), open_timeout=10))
                assert ask(ws, {"type": "reset", "data": {"seed": i}})["type"] == "observation"
                held.append(ws)  # never closed by the client
            assert env_server.active_sessions <= 4
            assert live_agent_envs() <= baseline + 4
            wait_until(lambda: env_server.active_sessions == 0)
        for ws in held:  # the server closed every one of them
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=10)
        stack.close()
        wait_until(lambda: live_agent_envs() <= baseline)


def test_http_reset_gives_the_first_observation_and_http_step_explains_why_not(server):
    url, _ = server
    expected = native_episode("AgentSokoban-v0", 4, [])[0]
    body = requests.post(url + "/reset", json={"seed": 4, "env_id": "AgentSokoban-v0"}, timeout=20).json()
    assert body["observation"]["text"] == expected[0] and body["done"] is False
    step = requests.post(url + "/step", json={"action": {"reply": "<answer>Up</answer>"}}, timeout=20)
    assert step.status_code == 409 and "WebSocket" in step.json()["detail"]
    assert requests.post(url + "/step", json={"action": {"move": "Up"}}, timeout=20).status_code == 422
    assert requests.post(url + "/reset", json={"seed": -1}, timeout=20).status_code == 422
    assert requests.get(url + "/health", timeout=20).status_code == 200
    schema = requests.get(url + "/schema", timeout=20).json()
    assert "reply" in schema["action"]["properties"]


def test_bad_server_settings_are_user_errors():
    with pytest.raises(UserError, match="unknown env id .AgentChess-v0."):
        make_app(["AgentChess-v0"])
    with pytest.raises(ValueError, match="max_sessions=0"):
        ServerLimits(max_sessions=0)
    with pytest.raises(ValueError, match="session_ttl=-1"):
        ServerLimits(session_ttl=-1)
    with pytest.raises(UserError, match="do not build"):
        make_app(["AgentFrozenLake-v0"], env_kwargs={"colour": "blue"})


def test_environment_in_process_rejects_a_step_before_reset_or_after_the_end_and_says_which():
    from agentgym_bench.adapters.openenv import AgentAction

    env = AgentOpenEnv(["AgentBandit-v0"], session_ttl=30)
    with pytest.raises(RuntimeError, match="send reset first. If you did, this is another session: the server "
                                           r"closes a session idle for 30 s \(openenv-serve --session-ttl\)"):
        env.step(AgentAction(reply="<answer>Phoenix</answer>"))
    env.reset(seed=0)
    env.step(AgentAction(reply="<think></think><answer>Phoenix</answer>"))
    with pytest.raises(RuntimeError, match=r"^the episode is over \(it ended at step 1\): send reset"):
        env.step(AgentAction(reply="<think></think><answer>Phoenix</answer>"))


@pytest.mark.slow  # a fresh interpreter imports openenv-core (FastAPI, Gradio, FastMCP): 10-40 s on shared cores
def test_the_openenv_serve_command_serves_episodes(tmp_path):
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "agentgym_bench.cli", "openenv-serve", "AgentBandit-v0",
                             "AgentFrozenLake-v0", "--port", str(port), "--max-sessions", "2", "--session-ttl", "30",
                             "--env-kwargs", '{"prompt": "compact"}'], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        def healthy() -> bool:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            try:
                return requests.get(url + "/health", timeout=2).status_code == 200
            except requests.ConnectionError:
                return False

        wait_until(healthy, timeout=90)
        replies = scripted_replies("AgentFrozenLake-v0", 9, rng_seed=9, prompt="compact")
        expected = native_episode("AgentFrozenLake-v0", 9, replies, prompt="compact")
        with AgentEnvClient(url).sync() as env:
            assert "Phoenix" in env.reset(seed=1).observation.text  # the first id is the default
            assert_same_step(env.reset(seed=9, env_id="AgentFrozenLake-v0"), expected[0])
            for reply, step in zip(replies, expected[1:], strict=True):
                assert_same_step(env.step(reply), step)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_the_openenv_serve_command_rejects_bad_arguments_in_one_line(capsys):
    from agentgym_bench.cli import main

    for argv, message in [(["AgentChess-v0"], "unknown env id 'AgentChess-v0'"),
                          (["--env-kwargs", "{prompt: compact}"], "--env-kwargs is not JSON"),
                          (["--max-sessions", "0"], "max_sessions=0")]:
        assert main(["openenv-serve", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("agentgym-bench: error: ") and message in err and err.count("\n") == 1


def test_openenvs_generic_client_plays_with_plain_dicts(server):
    from openenv.core.generic_client import GenericEnvClient

    url, _ = server
    expected = native_episode("AgentBandit-v0", 5, ["<answer>Dragon</answer>"])
    with GenericEnvClient(url).sync() as env:
        first = env.reset(seed=5, env_id="AgentBandit-v0")
        assert first.observation["text"] == expected[0][0]
        last = env.step({"reply": "<answer>Dragon</answer>"})
        assert (last.observation["text"], last.reward, last.done) == expected[1][:3]


def test_splits_are_the_benchmarks_seed_ranges_and_reset_by_split_plays_that_seed(server):
    from agentgym_bench.adapters.openenv import SPLIT_SEEDS
    from agentgym_bench.seeds import TEST_SEED_START, TRAIN_SEED_START, seed_split

    url, _ = server
    api = url + "/agentgym-bench"
    splits = requests.get(api + "/splits", timeout=20).json()
    assert [(s["name"], s["type"], s["first_seed"]) for s in splits] == [
        ("train", "train", TRAIN_SEED_START), ("validation", "validation", 0), ("test", "test", TEST_SEED_START)]
    for split in splits:
        count = requests.post(api + "/num_tasks", json={"split": split["name"]}, timeout=20).json()["num_tasks"]
        assert count == split["num_tasks"] == len(SPLIT_SEEDS[split["name"]])
        last = requests.post(api + "/task", json={"split": split["name"], "index": count - 1}, timeout=20).json()
        assert seed_split(last["task"]["seed"]) == split["name"] == seed_split(split["first_seed"])
    task = requests.post(api + "/task", json={"split": "test", "index": 5}, timeout=20).json()["task"]
    assert task == {"id": "test-5", "split": "test", "index": 5, "seed": TEST_SEED_START + 5}
    window = requests.post(api + "/task_range", json={"split": "validation", "start": 3, "stop": 6}, timeout=20).json()
    assert [t["seed"] for t in window["tasks"]] == [3, 4, 5]
    preview = requests.post(api + "/tasks", json={"split": "train"}, timeout=20).json()["tasks"]
    assert len(preview) == 1000 and preview[0]["seed"] == TRAIN_SEED_START
    for path, body in [("/num_tasks", {"split": "dev"}), ("/task", {"split": "test", "index": 10**6}),
                       ("/task_range", {"split": "train"})]:
        assert requests.post(api + path, json=body, timeout=20).status_code == 400

    with AgentEnvClient(url).sync() as env:
        for split, index in [("test", 5), ("validation", 7), ("train", 2)]:
            seed = SPLIT_SEEDS[split][index]
            replies = scripted_replies("AgentSokoban-v0", seed, rng_seed=index)
            expected = native_episode("AgentSokoban-v0", seed, replies)
            assert_same_step(env.reset(split=split, index=index, env_id="AgentSokoban-v0"), expected[0])
            for reply, step in zip(replies, expected[1:], strict=True):
                assert_same_step(env.step(reply), step)
            state = env.state()
            assert (state.seed, state.split, state.task_index) == (seed, split, index)
        env.reset(split="test")  # a random test task
        state = env.state()
        assert state.split == "test" and state.seed == SPLIT_SEEDS["test"][state.task_index]
        for seed, split in [(12, "validation"), (12_345, "train"), (TEST_SEED_START, "test")]:
            env.reset(seed=seed)
            assert (env.state().split, env.state().task_index) == (split, None)


def test_the_server_passes_openenv_validate(server):
    from openenv.cli._validation import validate_running_environment

    url, _ = server
    report = validate_running_environment(url, timeout_s=20)
    assert report["passed"], report["criteria"]
    assert report["standard_profile"] == "openenv-http/1.x" and report["mode"] == "simulation"
    assert {c["id"] for c in report["criteria"]} >= {"health_endpoint", "metadata_endpoint", "schema_endpoint",
                                                    "mcp_endpoint", "mode_endpoint_consistency"}
    metadata = requests.get(url + "/metadata", timeout=20).json()
    assert metadata["name"] == "agentgym-bench" and "split" in metadata["description"]


def test_the_shipped_manifest_passes_openenv_validate_and_declares_the_splits():
    import yaml
    from openenv.validation import Level, Verdict, run_validation

    from agentgym_bench.adapters.openenv import MANIFEST, SPLIT_SEEDS

    report = run_validation(MANIFEST.parent, max_level=Level.STATIC)
    assert report.verdict is Verdict.PASS, report.results
    assert [r.check_id for r in report.results] == ["static.manifest"]
    declared = yaml.safe_load(MANIFEST.read_text())["validation"]["capabilities"]["declared_task_count"]
    assert declared == {name: len(seeds) for name, seeds in SPLIT_SEEDS.items()}


@pytest.mark.slow  # two fresh `openenv` CLI processes: about 10 s each on shared cores
def test_the_openenv_validate_command_passes_on_the_server_and_the_manifest(server):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from agentgym_bench.adapters.openenv import MANIFEST

    url, _ = server
    cli = shutil.which("openenv") or str(Path(sys.executable).with_name("openenv"))
    for args in (["--url", url], [str(MANIFEST.parent), "--level", "static"]):
        run = subprocess.run([cli, "validate", *args], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and "Verdict: PASS" in run.stdout, run.stdout + run.stderr


def test_split_arguments_in_process():
    from agentgym_bench.adapters.openenv import seed_for

    env = AgentOpenEnv(["AgentBandit-v0"])
    assert env.num_tasks("validation") == 10_000
    with pytest.raises(ValueError, match="not a split"):
        env.num_tasks("dev")
    with pytest.raises(IndexError):
        env.get_task("test", True)
    assert seed_for(None, None, None) == (None, None, None)
    assert seed_for(1_000_000_005, None, None) == (1_000_000_005, None, None)  # v1's retired test seeds: no split
    assert seed_for(2_000_000_001, None, None) == (2_000_000_001, "test", None)
