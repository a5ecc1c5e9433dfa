"""Agent-env throughput: our ``AgentSokoban-v0`` against GEM's ``game:Sokoban-v0-easy``, side by side.

One *step* is what an RL rollout pays per model reply: parse a model-style reply, step the game, and produce the
text the model reads next. Resets are included: the clock runs over whole episodes, ``reset`` to the end.

Both envs get the same room size, box count and turn limit (read from GEM's registry), one action per reply,
replies drawn uniformly from the four moves with a fixed seed (the same move sequence on both sides), and episode
``i`` is reset with seed ``seed + i``. Reply formats are each env's own:

- ours: ``<think>...</think><answer>Up</answer>``, through ``gym.make("AgentSokoban-v0", ...)`` (parse + game +
  prompt template + sanitising is all inside ``step``);
- GEM: ``<think>...</think> My move: \\boxed{up}.``, through ``gem.make("game:Sokoban-v0-easy")``; its ``step``
  parses and renders the board into ``info["suffix"]``; the next observation text is ``obs + "\\n" + suffix``
  (what GEM's ``ObservationWrapper`` does for the current turn, without its history).

Ours runs in this process (the project ``.venv``); GEM runs in a subprocess with the GEM venv's python executing
this same file with ``--worker gem`` (so both sides time the identical loop, after 10 untimed warm-up episodes).
Rounds alternate ours / GEM. The report gives per-round numbers, each side's median steps/s by wall clock and by
process CPU time (the machine may be shared; CPU time is less sensitive to that), and the ratio three ways: of the
wall medians, of the CPU medians, and the median of the per-round wall ratios. The target verdict uses the lowest.

Set-up for GEM (a separate venv keeps gem-llm's pinned dependencies -- reasoning-gym, nltk, math-verify ... -- out
of the project venv)::

    python3 -m venv benchmarks/.venv-gem && benchmarks/.venv-gem/bin/pip install gem-llm

Run::

    .venv/bin/python benchmarks/agent_env_throughput.py [--episodes 300] [--rounds 3] [--seed 0]

``--resets`` (no GEM needed) times only ``reset`` of the agent envs whose resets reject draws, with the suites' own
env kwargs and seeds (:data:`RESET_ENTRIES` of :data:`RESET_SUITES`): per entry and round, training seeds (10,000
on, as many as the suite entry has episodes; never remembered), then for each suite the held-out seeds with the
accepted-draw cache off (``CACHE.resize(0)``: every draw paid, as before the cache), cold (emptied, first pass over
the seeds) and warm (second pass), one env per entry, the cache emptied before each pass that needs it. It prints
median ms per reset (wall and process CPU) and draws per reset (``agentgym_bench.envs.draw_cache`` counters), and
the ratios warm/cold and warm/training::

    .venv/bin/python benchmarks/agent_env_throughput.py --resets [--rounds 3] [--episodes N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

GEM_ID = "game:Sokoban-v0-easy"
DEFAULT_GEM_PYTHON = Path(__file__).resolve().parent / ".venv-gem" / "bin" / "python"
THINK = "The box is below me and the target is on the left, so I walk around the box before pushing it."
MOVES = ("Up", "Down", "Left", "Right")
WARMUP_EPISODES = 10


def run_episodes(env: Any, replies: list[str], observe: Callable[[str, dict], str], episodes: int, seed: int,
                 max_steps: int) -> dict[str, float]:
    """Play ``episodes`` episodes with replies picked by a seeded RNG; time everything from the first reset.

    Returns steps, episodes, total wall seconds, this process's CPU seconds over the same span (less sensitive to
    other processes sharing the machine) and the wall seconds spent inside ``reset`` (a breakdown only).
    """
    rng = random.Random(seed)
    picks = [rng.randrange(len(replies)) for _ in range(episodes * max_steps)]
    clock = time.perf_counter
    steps = 0
    reset_seconds = 0.0
    cpu_start = time.process_time()
    start = clock()
    for episode in range(episodes):
        t0 = clock()
        obs, info = env.reset(seed=seed + episode)
        text = observe(obs, info)
        reset_seconds += clock() - t0
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(replies[picks[steps]])
            text = observe(obs, info)
            steps += 1
            done = terminated or truncated
    seconds = clock() - start
    cpu_seconds = time.process_time() - cpu_start
    assert text  # the last observation was produced
    return {"steps": steps, "episodes": episodes, "seconds": seconds, "cpu_seconds": cpu_seconds,
            "reset_seconds": reset_seconds}


# -- GEM side (runs under the GEM venv's python) -----------------------------------------------------------------

def _quiet_import_gem() -> Any:
    import logging

    import gem  # configures logging at INFO and imports reasoning_gym

    logging.getLogger().setLevel(logging.WARNING)
    return gem


def gem_settings() -> dict[str, Any]:
    """GEM's registered keyword arguments for ``GEM_ID`` (room size, boxes, turns)."""
    import importlib.metadata

    _quiet_import_gem()
    from gem.envs.registration import ENV_REGISTRY

    kwargs = dict(ENV_REGISTRY[GEM_ID].kwargs)
    return {"dim_room": list(kwargs["dim_room"]), "num_boxes": kwargs["num_boxes"], "max_turns": kwargs["max_turns"],
            "gem_version": importlib.metadata.version("gem-llm")}


def measure_gem(episodes: int, seed: int) -> dict[str, float]:
    gem = _quiet_import_gem()
    env = gem.make(GEM_ID)
    replies = [f"<think>{THINK}</think> My move: \\boxed{{{m.lower()}}}." for m in MOVES]

    def observe(obs: str, info: dict) -> str:
        return (obs if obs.endswith("\n") else obs + "\n") + info["suffix"]

    run_episodes(env, replies, observe, WARMUP_EPISODES, seed + 10**6, env.max_turns)
    return run_episodes(env, replies, observe, episodes, seed, env.max_turns)


# -- our side (runs in this process, project venv) ---------------------------------------------------------------

def make_ours(settings: dict[str, Any]) -> Any:
    import gymnasium as gym

    import agentgym_bench  # noqa: F401  (registers the ids)

    turns = settings["max_turns"]
    return gym.make("AgentSokoban-v0", dim_room=tuple(settings["dim_room"]), num_boxes=settings["num_boxes"],
                    max_turns=turns, max_actions_per_turn=1, max_actions_per_episode=turns)


def measure_ours(env: Any, settings: dict[str, Any], episodes: int, seed: int) -> dict[str, float]:
    replies = [f"<think>{THINK}</think><answer>{m}</answer>" for m in MOVES]

    def observe(obs: str, info: dict) -> str:
        return obs

    run_episodes(env, replies, observe, WARMUP_EPISODES, seed + 10**6, settings["max_turns"])
    return run_episodes(env, replies, observe, episodes, seed, settings["max_turns"])


# -- held-out resets: cold and warm accepted-draw cache (project venv only) ------------------------------------------

RESET_SUITES = ("agentgym-v2-validation", "agentgym-v2")
RESET_ENTRIES = ("sokoban-6x6", "sokoban-8x8-2box", "frozenlake", "frozenlake-noslip")
"""Suite entries whose resets reject draws (Bargain's deals do too, in the two-player suites: not timed here)."""


def time_resets(env: Any, seeds: range) -> dict[str, float]:
    """Reset ``env`` on each seed in order: ms per reset (wall, process CPU) and draws per reset."""
    from agentgym_bench.envs.draw_cache import CACHE

    draws = CACHE.stats()["draws"]
    cpu, wall = time.process_time(), time.perf_counter()
    for seed in seeds:
        env.reset(seed=seed)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = len(seeds)
    return {"ms": 1e3 * wall / n, "cpu_ms": 1e3 * cpu / n, "draws": (CACHE.stats()["draws"] - draws) / n}


def measure_resets(rounds: int, episodes: int | None) -> None:
    import gymnasium as gym

    import agentgym_bench  # noqa: F401  (registers the ids)
    from agentgym_bench.benchmark.suites import load_suite
    from agentgym_bench.envs.draw_cache import CACHE
    from agentgym_bench.seeds import TRAIN_SEED_START

    suites = {name: {e.name: e for e in load_suite(name).entries} for name in RESET_SUITES}
    bound = CACHE.max_entries
    print(f"reset only, agent envs through gym.make with each suite entry's kwargs; {rounds} rounds, medians; "
          f"cache bound {bound} keys\n")
    print(f"{'entry':<18} {'seeds':<34} {'cache':<6} {'ms/reset':>9} {'cpu ms':>7} {'draws':>6}")
    for entry_name in RESET_ENTRIES:
        entries = {suite: suites[suite][entry_name] for suite in RESET_SUITES}
        first = entries[RESET_SUITES[0]]
        assert all(e.make_kwargs() == first.make_kwargs() for e in entries.values()), entry_name
        n = first.episodes if episodes is None else min(episodes, first.episodes)
        seeds = {"training": range(TRAIN_SEED_START, TRAIN_SEED_START + n),
                 **{suite: range(e.seed_start, e.seed_start + n) for suite, e in entries.items()}}
        env = gym.make(first.env_id, **first.make_kwargs())
        for seed in range(TRAIN_SEED_START + 10**6, TRAIN_SEED_START + 10**6 + WARMUP_EPISODES):
            env.reset(seed=seed)
        runs: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _ in range(rounds):
            runs.setdefault(("training", "-"), []).append(time_resets(env, seeds["training"]))
            for suite in RESET_SUITES:
                CACHE.resize(0)
                runs.setdefault((suite, "off"), []).append(time_resets(env, seeds[suite]))
                CACHE.resize(bound)
                CACHE.clear()
                runs.setdefault((suite, "cold"), []).append(time_resets(env, seeds[suite]))
                runs.setdefault((suite, "warm"), []).append(time_resets(env, seeds[suite]))
        med = {key: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for key, rows in runs.items()}
        for (where, cache), m in med.items():
            label = f"{where} {seeds[where].start}..{seeds[where].stop - 1}"
            print(f"{entry_name:<18} {label:<34} {cache:<6} {m['ms']:>9.3f} {m['cpu_ms']:>7.3f} {m['draws']:>6.2f}")
        train = med["training", "-"]
        for suite in RESET_SUITES:
            cold, warm = med[suite, "cold"], med[suite, "warm"]
            print(f"{'':<18} {suite}: warm/cold {warm['ms'] / cold['ms']:.2f} wall, "
                  f"{warm['cpu_ms'] / cold['cpu_ms']:.2f} CPU; warm/training {warm['ms'] / train['ms']:.2f} wall, "
                  f"{warm['cpu_ms'] / train['cpu_ms']:.2f} CPU")
        print()
    CACHE.clear()


# -- driver ------------------------------------------------------------------------------------------------------

def run_gem_worker(python: Path, *args: str) -> dict[str, Any]:
    out = subprocess.run([str(python), __file__, "--worker", *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"GEM worker failed ({python}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarize(result: dict[str, float]) -> dict[str, float]:
    s, n, e = result["seconds"], result["steps"], result["episodes"]
    step_seconds = s - result["reset_seconds"]
    return {"steps_per_s": n / s, "cpu_steps_per_s": n / result["cpu_seconds"], "episodes_per_s": e / s,
            "steps_per_episode": n / e,
            "reset_ms": 1e3 * result["reset_seconds"] / e, "step_us": 1e6 * step_seconds / n}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Steps/s of our AgentSokoban-v0 vs GEM's game:Sokoban-v0-easy (same room, boxes, turn limit). "
                    "A step = parse a reply + env step + next observation text; resets included.")
    parser.add_argument("--episodes", type=int, default=None,
                        help="timed episodes per run and side (default 300); with --resets, seeds per entry and "
                        "pass (default the suite entry's episodes, 400)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds; each round times ours then GEM (default 3)")
    # agentgym_bench.seeds.TRAIN_SEED_START, written out: the GEM worker runs this file without the package
    parser.add_argument("--seed", type=int, default=10_000,
                        help="episode i is reset with seed+i; also seeds the reply RNG (default %(default)s: training "
                        "seeds, what training plays; 0: validation seeds, where a reset draws rooms until one is "
                        "of the validation split)")
    parser.add_argument("--gem-python", type=Path, default=DEFAULT_GEM_PYTHON,
                        help=f"python of the venv with gem-llm installed (default {DEFAULT_GEM_PYTHON})")
    parser.add_argument("--resets", action="store_true",
                        help="time only resets of the suites' rejecting entries: training seeds, then held-out "
                        "seeds with the accepted-draw cache off, cold and warm (no GEM; --episodes caps the seeds "
                        "per entry, default all of the suite's)")
    parser.add_argument("--worker", choices=["gem", "gem-settings"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if (args.episodes is not None and args.episodes < 1) or args.rounds < 1:
        parser.error("--episodes and --rounds must be positive")
    if args.resets:
        measure_resets(args.rounds, args.episodes)
        return
    if args.episodes is None:
        args.episodes = 300

    if args.worker == "gem-settings":
        print(json.dumps(gem_settings()))
        return
    if args.worker == "gem":
        print(json.dumps(measure_gem(args.episodes, args.seed)))
        return

    if not args.gem_python.exists():
        parser.error(f"--gem-python {args.gem_python} does not exist; see the module docstring for the set-up")
    settings = run_gem_worker(args.gem_python, "gem-settings")
    ours_env = make_ours(settings)
    print(f"GEM {GEM_ID} (gem-llm {settings['gem_version']}): dim_room={tuple(settings['dim_room'])} "
          f"num_boxes={settings['num_boxes']} max_turns={settings['max_turns']}")
    print(f"ours AgentSokoban-v0 with the same dim_room/num_boxes, max_turns={settings['max_turns']}, "
          f"1 action per turn, {settings['max_turns']} actions per episode")
    print(f"{args.episodes} episodes per run, seeds {args.seed}..{args.seed + args.episodes - 1}, "
          f"{args.rounds} alternating rounds\n")

    print(f"{'round':>5} {'side':<5} {'steps/s':>9} {'cpu st/s':>9} {'episodes/s':>10} {'steps/ep':>8} "
          f"{'reset ms':>9} {'step us':>8}")
    rows: dict[str, list[dict[str, float]]] = {"ours": [], "gem": []}
    for r in range(1, args.rounds + 1):
        for side in ("ours", "gem"):
            if side == "ours":
                result = measure_ours(ours_env, settings, args.episodes, args.seed)
            else:
                result = run_gem_worker(args.gem_python, "gem", "--episodes", str(args.episodes),
                                        "--seed", str(args.seed))
            row = summarize(result)
            rows[side].append(row)
            print(f"{r:>5} {side:<5} {row['steps_per_s']:>9.0f} {row['cpu_steps_per_s']:>9.0f} "
                  f"{row['episodes_per_s']:>10.1f} "
                  f"{row['steps_per_episode']:>8.2f} {row['reset_ms']:>9.2f} {row['step_us']:>8.1f}")

    print("\nmedians")
    med = {side: {k: statistics.median(row[k] for row in rows[side]) for k in rows[side][0]} for side in rows}
    for side in ("ours", "gem"):
        m = med[side]
        print(f"  {side:<5} {m['steps_per_s']:>9.0f} steps/s  {m['cpu_steps_per_s']:>9.0f} steps/cpu-s  "
              f"{m['episodes_per_s']:>8.1f} episodes/s  "
              f"{m['steps_per_episode']:.2f} steps/episode  reset {m['reset_ms']:.2f} ms  step {m['step_us']:.1f} us")
    ratio = med["ours"]["steps_per_s"] / med["gem"]["steps_per_s"]
    cpu_ratio = med["ours"]["cpu_steps_per_s"] / med["gem"]["cpu_steps_per_s"]
    per_round = [o["steps_per_s"] / g["steps_per_s"] for o, g in zip(rows["ours"], rows["gem"], strict=True)]
    print(f"\nratio ours/GEM, median steps/s: {ratio:.1f}x (wall), {cpu_ratio:.1f}x (CPU time); "
          f"per round (wall): " + ", ".join(f"{x:.1f}x" for x in per_round)
          + f", median {statistics.median(per_round):.1f}x")
    print(f"episodes/s ratio {med['ours']['episodes_per_s'] / med['gem']['episodes_per_s']:.1f}x; "
          f"per-step time without resets, GEM/ours: {med['gem']['step_us'] / med['ours']['step_us']:.1f}x")
    worst = min(ratio, cpu_ratio, statistics.median(per_round))
    print(f"target >= 10x: {'met' if worst >= 10 else 'missed'} (lowest of the three ratios above: {worst:.1f}x)")


if __name__ == "__main__":
    main()
