"""The HTTP backend against ``webshop-serve`` on a free loopback port, and against servers that fail or lie."""

import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym_bench.agent import LLMAgentEnv, oracle_reply
from agentgym_bench.envs.webshop.client import WebShopClient, WebShopProtocolError, WebShopServerError
from agentgym_bench.envs.webshop.game import WebShopGame
from agentgym_bench.envs.webshop.server import serve_in_thread

BUDGET = {"max_turns": 9, "max_actions_per_turn": 1, "max_actions_per_episode": 9}


@pytest.fixture(scope="module")
def server():
    with serve_in_thread(host="127.0.0.1", port=0) as srv:
        yield srv


def oracle_actions(seed):
    """The local oracle's action list for ``seed``, with a few invalid and exploratory actions mixed in."""
    game = WebShopGame()
    game.reset(seed=seed)
    actions = ["click[buy now]", "search[" + "z" * 300 + "]"]
    while True:
        turn = game.oracle_turn(9, 9, 1)
        if not turn:
            return actions
        actions.append(turn[0])
        if turn[0].startswith("search["):
            actions += ["click[next >]", "click[< prev]"]
            game.step("click[next >]")
            game.step("click[< prev]")
        game.step(turn[0])


def play(game, seed, actions):
    trace = [game.reset(seed=seed)]
    for action in actions:
        trace.append(game.step(action))
    return trace


def test_protocol_endpoints(server):
    client = WebShopClient(server.url)
    assert client.ping()
    env_idx = client.create()
    page = client.reset(env_idx, 0)
    assert page.startswith("WebShop [SEP] Instruction: [SEP] ") and client.observation(env_idx) == page
    assert client.instruction_text(env_idx) in page
    assert client.available_actions(env_idx) == {"has_search_bar": True, "clickables": ["search"]}
    state, reward, done = client.step(env_idx, "search[green tea]")
    assert state.startswith("Instruction: [SEP] ") and (reward, done) == (0.0, False)
    assert client.step(env_idx, "click[nothing here]") == (state, 0.0, False)
    with urllib.request.urlopen(f"{server.url}/list_envs", timeout=5) as answer:
        assert env_idx in json.load(answer)
    assert client.reset(env_idx, None).startswith("WebShop [SEP]")  # no session id: the server draws a goal
    assert client.close_env(env_idx) is True and client.close_env(env_idx) is False
    with pytest.raises(WebShopServerError, match="HTTP 404"):
        client.step(env_idx, "search[tea]")
    client.close()


def test_http_game_matches_local_game(server):
    local, remote = WebShopGame(), WebShopGame(backend="http", base_url=server.url)
    for seed in (0, 1, 777):
        actions = oracle_actions(seed)
        assert play(remote, seed, actions) == play(local, seed, actions)
    remote.close()


def test_whole_episode_through_the_agent_wrapper(server):
    local = LLMAgentEnv(WebShopGame(), **BUDGET)
    remote = LLMAgentEnv(WebShopGame(backend="http", base_url=server.url), **BUDGET)
    assert local.reset(seed=3) == remote.reset(seed=3)
    done = False
    while not done:
        reply = oracle_reply(local)
        out_local, out_remote = local.step(reply), remote.step(reply)
        assert out_remote == out_local
        done = out_local[2]
    assert out_local[4]["success"] and out_local[1] == 1.0
    remote.close()


def test_eight_envs_share_one_server_concurrently(server):
    seeds = list(range(8))
    plans = {seed: oracle_actions(seed) for seed in seeds}
    expected = {seed: play(WebShopGame(), seed, plans[seed]) for seed in seeds}

    def run(seed):
        game = WebShopGame(backend="http", base_url=server.url)
        try:
            return play(game, seed, plans[seed])
        finally:
            game.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = dict(zip(seeds, pool.map(run, seeds), strict=True))
    assert results == expected


def test_server_rejects_bad_requests(server):
    def post(path, body):
        request = urllib.request.Request(server.url + path, data=body, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return answer.status, json.load(answer)
        except urllib.error.HTTPError as err:
            return err.code, json.load(err)

    env_idx = WebShopClient(server.url).create()
    assert post("/step", b'{"env_idx": "a", "action": "x"}')[0] == 422
    assert post("/step", b"{not json")[0] == 422
    assert post("/step", json.dumps({"env_idx": env_idx, "action": 5}).encode())[0] == 422
    assert post("/reset", json.dumps({"env_idx": env_idx, "session_id": 10**9}).encode())[0] == 422
    assert post("/reset", json.dumps({"env_idx": 10**9, "session_id": 0}).encode())[0] == 404
    status, answer = post("/nowhere", b"{}")
    assert status == 404 and "detail" in answer
    with serve_in_thread(max_envs=1) as small:
        client = WebShopClient(small.url, retries=0)
        client.create()
        with pytest.raises(WebShopServerError, match="HTTP 503"):
            client.create()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keywords=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60),
       seed=st.integers(0, 499))
def test_odd_searches_behave_the_same_over_http(server, keywords, seed):
    local, remote = WebShopGame(), WebShopGame(backend="http", base_url=server.url)
    try:
        assert remote.reset(seed=seed) == local.reset(seed=seed)
        assert remote.step(f"search[{keywords}]") == local.step(f"search[{keywords}]")
    finally:
        remote.close()


def test_server_survives_garbage_requests(server):
    port = server.server_address[1]
    for garbage in (b"GARBAGE\r\n\r\n", b"POST /step HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
                    b"\x00\xff" * 100, b"GET /observation?env_idx=abc HTTP/1.1\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(garbage)
            conn.shutdown(socket.SHUT_WR)
            answer = conn.recv(4096)
        assert answer and b"200 OK" not in answer and any(code in answer for code in (b"400", b"413", b"422"))
    assert WebShopClient(server.url).ping()


def test_server_killed_mid_episode_gives_a_clear_error():
    proc = subprocess.Popen([sys.executable, "-m", "agentgym_bench.cli", "webshop-serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert match, f"server did not start: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        game = WebShopGame(backend="http", base_url=match.group(0), timeout=2.0, retries=1)
        game.reset(seed=0)
        assert game.step("search[shoes]")[4]["action_is_valid"]
        proc.kill()
        proc.wait(timeout=30)
        outcome = {}

        def attempt():
            try:
                game.step("click[next >]")
            except WebShopServerError as err:
                outcome["error"] = err

        thread = threading.Thread(target=attempt, daemon=True)
        thread.start()
        thread.join(timeout=60)
        assert not thread.is_alive(), "step() hung after the server died"
        assert match.group(0) in str(outcome["error"])
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


def test_unreachable_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    game = WebShopGame(backend="http", base_url=f"http://127.0.0.1:{port}", timeout=1.0, retries=1)
    with pytest.raises(WebShopServerError, match="connection refused"):
        game.reset(seed=0)
    game.close()


def test_silent_server_times_out():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        client = WebShopClient(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.3, retries=1, backoff=0.0)
        with pytest.raises(WebShopServerError, match="no complete answer within 0.3 s"):
            client.create()
        client.close()


class _Liar(BaseHTTPRequestHandler):
    """Answers every request with the server's ``reply``: ``(status, body)`` or ``"truncated"``."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        self._answer()

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer()

    def _answer(self):
        reply = self.server.reply
        if reply == "truncated":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b'{"state": "')
            self.close_connection = True
            return
        status, body = reply
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _LiarServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # clients hang up on purpose (oversized answers)


@pytest.fixture(scope="module")
def liar():
    srv = _LiarServer(("127.0.0.1", 0), _Liar)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


MALFORMED = [
    ("create", (200, b"not json"), WebShopProtocolError, "not JSON"),
    ("create", (200, b"\xff\xfe\x00"), WebShopProtocolError, "not JSON"),
    ("create", (200, b'"abc"'), WebShopProtocolError, "integer env id"),
    ("create", (200, b"true"), WebShopProtocolError, "integer env id"),
    ("reset", (200, b'{"x": 1}'), WebShopProtocolError, "observation, null"),
    ("reset", (200, b'[1, null]'), WebShopProtocolError, "observation, null"),
    ("step", (200, b'{"state": 1, "reward": 0, "done": false}'), WebShopProtocolError, "state"),
    ("step", (200, b'{"state": "s", "reward": NaN, "done": false}'), WebShopProtocolError, "reward"),
    ("step", (200, b'{"state": "s", "reward": "1", "done": false}'), WebShopProtocolError, "reward"),
    ("step", (200, b'{"state": "s", "reward": 0, "done": "no"}'), WebShopProtocolError, "done"),
    ("step", (200, b"[]"), WebShopProtocolError, "state"),
    ("available_actions", (200, b'{"has_search_bar": true, "clickables": [1]}'), WebShopProtocolError, "clickables"),
    ("available_actions", (200, b'{"clickables": []}'), WebShopProtocolError, "has_search_bar"),
    ("observation", (200, b"null"), WebShopProtocolError, "a string"),
    ("step", (500, b"<html>Internal Server Error</html>"), WebShopServerError, "HTTP 500"),
    ("step", "truncated", WebShopServerError, "connection failed"),
    ("observation", (200, b'"' + b"x" * (9 << 20) + b'"'), WebShopProtocolError, "answer over"),
]


@pytest.mark.parametrize("call,reply,error,message", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_answers_raise_clear_errors(liar, call, reply, error, message):
    liar.reply = reply
    client = WebShopClient(f"http://127.0.0.1:{liar.server_address[1]}", timeout=5.0, retries=0)
    calls = {"create": lambda: client.create(), "reset": lambda: client.reset(0, 1),
             "step": lambda: client.step(0, "search[x]"), "observation": lambda: client.observation(0),
             "available_actions": lambda: client.available_actions(0)}
    with pytest.raises(error, match=re.escape(message)) as raised:
        calls[call]()
    assert client.base_url in str(raised.value), "the error must name the full URL"
    client.close()


def test_game_reports_a_lying_server(liar):
    liar.reply = (200, b'"just a string"')
    url = f"http://127.0.0.1:{liar.server_address[1]}"
    game = WebShopGame(backend="http", base_url=url, retries=0)
    with pytest.raises(WebShopProtocolError, match=re.escape(f"POST {url}/create")):
        game.reset(seed=0)


class _Dripper(BaseHTTPRequestHandler):
    """Sends the status line and headers, then the body one byte every ``server.interval`` s (for at most 10 s)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline:
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(self.server.interval)
        except OSError:
            pass  # the client hung up, as it should
        self.close_connection = True


@pytest.fixture
def dripper():
    srv = _LiarServer(("127.0.0.1", 0), _Dripper)
    srv.interval = 0.1
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("retries", [0, 1])
def test_a_dripping_server_is_cut_off_within_the_budget(dripper, retries):
    url = f"http://127.0.0.1:{dripper.server_address[1]}"
    client = WebShopClient(url, timeout=0.5, retries=retries, backoff=0.05)
    assert client.budget == pytest.approx((retries + 1) * 0.5 + 0.05 * (2**retries - 1))
    started = time.monotonic()
    with pytest.raises(WebShopServerError, match=re.escape(f"POST {url}/create")):
        client.create()
    assert time.monotonic() - started < client.budget + 1.0
    client.close()


def test_a_dripping_server_is_cut_off_during_reset(dripper):
    game = WebShopGame(backend="http", base_url=f"http://127.0.0.1:{dripper.server_address[1]}", timeout=0.5,
                       retries=1)
    started = time.monotonic()
    with pytest.raises(WebShopServerError, match="no complete answer within 0.5 s"):
        game.reset(seed=0)
    assert time.monotonic() - started < game.backend.client.budget + 1.0
    game.close()
