"""The pinned client: openenv-core 0.3.0 (the distribution our `openenv` extra required before it moved to `openenv`
0.10) plays episodes on our server, which runs on openenv 0.10. Both install the same `openenv` package, so 0.3.0's
files run in a subprocess with them first on sys.path (its dependencies are a subset of 0.10's, already here): our
`AgentEnvClient` built on 0.3's `EnvClient`, 0.3's `GenericEnvClient`, and a split reset. The files come from
$AGENTGYM_OPENENV_CORE_DIR (a folder with the unpacked wheel) or a `pip download` of the wheel; offline, the test is
skipped with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("openenv.core", reason="the OpenEnv route needs openenv: pip install -e '.[openenv]'")

from agentgym_bench.adapters.openenv import SPLIT_SEEDS, make_app  # noqa: E402
from agentgym_bench.http_body import ServerLimits  # noqa: E402
from tests.adapters.conftest import serving  # noqa: E402
from tests.adapters.episodes import native_episode, scripted_replies  # noqa: E402

PINNED = "openenv-core==0.3.0"
REPO = Path(__file__).resolve().parents[2]

CLIENT = """
import json, sys, warnings
from importlib import metadata
import openenv.core
assert openenv.core.__file__.startswith(sys.argv[1]), openenv.core.__file__
from agentgym_bench.adapters.openenv import AgentEnvClient, make_app
from agentgym_bench.errors import UserError
from openenv.core.generic_client import GenericEnvClient

url, plan = sys.argv[2], json.loads(sys.argv[3])
out = {"version": metadata.version("openenv-core"), "episode": [], "split": []}
def row(r):
    o = r.observation
    return [o.text, r.reward, r.done, o.truncated, o.info]
with AgentEnvClient(url).sync() as env:
    out["episode"].append(row(env.reset(seed=plan["seed"], env_id=plan["env_id"])))
    out["episode"] += [row(env.step(reply)) for reply in plan["replies"]]
    out["split"].append(row(env.reset(split="test", index=plan["index"], env_id=plan["env_id"])))
    state = env.state()
    out["state"] = [state.seed, state.split, state.task_index]
with GenericEnvClient(url).sync() as env:
    first = env.reset(seed=plan["seed"], env_id=plan["env_id"])
    out["generic"] = [first.observation["text"], env.step({"reply": plan["replies"][0]}).reward]
try:
    make_app(["AgentBandit-v0"])
except UserError as e:
    out["server_error"] = str(e)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import openenv_core  # noqa: F401
out["deprecation"] = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
print(json.dumps(out))
"""


def as_rows(episode: list[tuple]) -> list[list]:
    """``native_episode``'s steps as the client script writes them: ``[text, reward, done, truncated, info]``."""
    return json.loads(json.dumps([[o, r, t or u, u, i] for o, r, t, u, i in episode]))


@pytest.fixture(scope="module")
def pinned_openenv_core(tmp_path_factory) -> Path:
    """A folder with openenv-core 0.3.0's files (its `openenv` and `openenv_core` packages and dist-info)."""
    given = os.environ.get("AGENTGYM_OPENENV_CORE_DIR")
    if given:
        return Path(given)
    wheels = tmp_path_factory.mktemp("wheel")
    run = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
                          "-d", str(wheels), PINNED], capture_output=True, text=True, timeout=180)
    found = sorted(wheels.glob("openenv_core-0.3.0-*.whl"))
    if run.returncode or not found:
        pytest.skip(f"cannot download {PINNED} (offline?): {run.stderr.strip()[-300:]}")
    folder = tmp_path_factory.mktemp("openenv-core-0.3.0")
    zipfile.ZipFile(found[0]).extractall(folder)
    return folder


def test_the_pinned_openenv_core_client_plays_on_the_new_server(pinned_openenv_core):
    env_id, seed, index = "AgentSokoban-v0", 11, 4
    # A lone surrogate ("\udcff", in one of the garbage replies) ends an OpenEnv session whichever client sends it:
    # the server cannot write the observation that echoes it (docs/integrations.md). Here, valid text only.
    replies = [r.encode("utf-8", "replace").decode() for r in scripted_replies(env_id, seed, rng_seed=seed)]
    app = make_app([env_id, "AgentBandit-v0"], limits=ServerLimits(max_sessions=4, session_ttl=60))
    with serving(app) as url:
        path = os.pathsep.join([str(pinned_openenv_core), str(REPO), os.environ.get("PYTHONPATH", "")])
        plan = json.dumps({"env_id": env_id, "seed": seed, "replies": replies, "index": index})
        run = subprocess.run([sys.executable, "-c", CLIENT, str(pinned_openenv_core), url, plan], capture_output=True,
                             text=True, timeout=300, env={**os.environ, "PYTHONPATH": path})
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["version"] == "0.3.0"
    expected = native_episode(env_id, seed, replies)
    assert out["episode"] == as_rows(expected)
    test_seed = SPLIT_SEEDS["test"][index]
    assert out["split"] == as_rows(native_episode(env_id, test_seed, []))
    assert out["state"] == [test_seed, "test", index]
    assert out["generic"] == [expected[0][0], expected[1][1]]
    assert "openenv >= 0.10" in out["server_error"]  # 0.3 runs the client, not our server
    assert out["deprecation"] == ["openenv_core is deprecated; import from openenv.core instead."]
