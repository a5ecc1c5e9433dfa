"""What a file claims is bound (the verifier's audit of 2026-12-01): each attack written as it was made, refused with
one line naming what is wrong and the board left as it was, beside the honest file that passes.

- a model-free policy's sampling is the policy's: an unkeyed random file drew one stream in the file's episode order,
  which the file could arrange (0.750 against random's 0.244, marked *reproduced*);
- successes beyond any policy's reach: moves searched against the seeds' slips replay (400 of 400 slippery games
  against a ceiling of 0.473, ranked above the oracle);
- the evaluation's counted cost (episodes, env steps, generated tokens);
- a copy whose token ids were dropped is still a copy;
- one set of weights has one training record;
- a model-free file claims no model, weights, training or sampling but its seed (the red team of 2026-12-02: a
  *reproduced* random file showed itself as "Qwen2.5-72B StarPO", or squatted another team's weights hash so that
  their real file was refused as a relabelling).
"""

from __future__ import annotations

import copy
import json
import re

import gymnasium as gym
import pytest

import agentgym_bench  # noqa: F401 - registers the envs
from agentgym_bench.agent.parsing import format_reply
from agentgym_bench.agent.policies import agent_env
from agentgym_bench.benchmark.results import ResultsError, loads
from agentgym_bench.benchmark.suites import load_suite
from agentgym_bench.leaderboard.verify import REPLAYED, REPRODUCED, verify
from agentgym_bench.rollout.policy import Generation
from agentgym_bench.rollout.specs import Sampling, policy_record
from agentgym_bench.stats import most_successes
from tests.leaderboard.conftest import TINY_SUITE, TRAINER, play, tree_digest
from tests.leaderboard.test_board import board, cli_submit  # noqa: F401 - the board fixture
from tests.leaderboard.test_verify import edit

SLIPPERY_EPISODES = 40
MOVES = ("Left", "Down", "Right", "Up")


def test_a_model_free_policys_file_cannot_choose_how_it_samples(suite, random_bytes, oracle_bytes):
    """The audit's random file: unkeyed, its episodes in an order that put the one stream's draws on lucky moves.
    Whatever the order, ``keyed`` is not the file's to choose (random samples keyed; the oracle draws nothing)."""
    def unkeyed_and_reordered(d):
        d["metadata"]["policy"]["sampling"]["keyed"] = False
        for entry in d["entries"]:
            entry["episodes"].reverse()

    with pytest.raises(ResultsError, match=r"^metadata.policy.sampling.keyed is false, but the random policy samples "
                                           r"with keyed draws \(eval records true\)"):
        verify(edit(random_bytes, unkeyed_and_reordered), suite)
    with pytest.raises(ResultsError, match=r"^metadata.policy.sampling.keyed is true, but the oracle policy draws "
                                           r"nothing \(eval records false\)"):
        verify(edit(oracle_bytes, lambda d: d["metadata"]["policy"]["sampling"].update(keyed=True)), suite)
    assert verify(random_bytes, suite).mark == verify(oracle_bytes, suite).mark == REPRODUCED


@pytest.mark.parametrize("field_path, value", [
    ("policy.model", "Qwen/Qwen2.5-72B-Instruct"), ("policy.model_sha256", "01f70a9b" * 8),
    ("trainer", TRAINER), ("compute.training", {"gpu_hours": 5000}), ("policy.sampling.temperature", 0.0),
    ("policy.sampling.top_p", 0.5), ("policy.sampling.max_new_tokens", 4096)])
def test_a_model_free_file_claims_no_model_weights_training_or_sampling(suite, random_bytes, field_path, value):
    def claim(d):
        *parents, last = ["metadata", *field_path.split(".")]
        target = d
        for key in parents:
            target = target[key]
        target[last] = value

    with pytest.raises(ResultsError, match=rf"^metadata.{re.escape(field_path)} is .*, but the random policy has no "
                                           r"model, weights, training or sampling setting but its seed, and eval "
                                           r"records (null|[0-9.]+) there"):
        verify(edit(random_bytes, claim), suite)


def _reaching(game, moves: int, dead: set) -> list[str] | None:
    """Moves that reach the goal from ``game`` through the slips its own generator will draw, or ``None``."""
    if moves == 0 or (game.pos, moves) in dead:
        return None
    for move in MOVES:
        after = copy.deepcopy(game)
        after.step(move)
        if after.tile == "G":
            return [move]
        rest = None if after.tile == "H" else _reaching(after, moves - 1, dead)
        if rest is not None:
            return [move, *rest]
    dead.add((game.pos, moves))  # the draws ahead depend only on the moves made so far
    return None


class SlipPeeker:
    """A cheat: each turn it copies the live env's game, random generator and all, and sends the first moves of a
    sequence that reaches the goal through the slips the episode's seed will draw. An endpoint could answer so."""

    def generate(self, conversations, envs=None, keys=None):
        replies = []
        for env in map(agent_env, envs):
            plan = _reaching(copy.deepcopy(env.game.unwrapped), env.actions_left, set()) or ["Left"]
            replies.append(Generation(env.write_reply(plan[:env.max_actions_per_turn])))
        return replies


@pytest.fixture(scope="module")
def slippery(tmp_path_factory):
    """A suite of one slippery FrozenLake entry, its ceiling the oracle's exact success probability on its maps."""
    seeds = range(1_000_000_000, 1_000_000_000 + SLIPPERY_EPISODES)
    env = gym.make("AgentFrozenLake-v0")
    values = []
    for seed in seeds:
        env.reset(seed=seed)
        inner = agent_env(env)
        values.append(inner.game.unwrapped.oracle_value(inner.turns_left, inner.actions_left,
                                                         inner.max_actions_per_turn))
    spec = {"name": "slippery", "version": 1, "split": "test", "seed_start": seeds[0], "description": "one lake",
            "entries": [{"name": "frozenlake", "env_id": "AgentFrozenLake-v0", "env_kwargs": {},
                         "prompts": ["ragen", "compact"], "episodes": SLIPPERY_EPISODES,
                         "oracle_success": sum(values) / len(values)}]}
    path = tmp_path_factory.mktemp("slippery") / "slippery.json"
    path.write_text(json.dumps(spec))
    return load_suite(str(path)), path


def test_moves_searched_against_the_seeded_slips_are_refused(slippery, tmp_path):
    from agentgym_bench.benchmark.evaluate import evaluate_suite
    from agentgym_bench.benchmark.results import dumps

    suite, suite_file = slippery
    record = {**policy_record("openai", Sampling(), keyed=True), "model": "peeker"}
    forged = dumps(evaluate_suite(SlipPeeker(), suite, record))
    [entry] = loads(forged).entries
    wins, ceiling = sum(ep.success for ep in entry.episodes), suite.entries[0].oracle_success
    most = most_successes(ceiling, SLIPPERY_EPISODES, 1e-6)
    assert ceiling < 0.6 and wins > most, (wins, most, ceiling)
    with pytest.raises(ResultsError, match=rf"^entry frozenlake: {wins} successes in {SLIPPERY_EPISODES} episodes, "
                                           rf"where the optimal policy's success probability is {ceiling:.3f}: more "
                                           rf"than {most} has a chance below 1e-06"):
        verify(forged, suite)
    honest = play("oracle", suite)
    assert verify(honest, suite).mark == REPRODUCED
    path, board_folder = tmp_path / "peeker.json.gz", tmp_path / "board"
    (tmp_path / "oracle.json.gz").write_bytes(honest)
    assert cli_submit(tmp_path / "oracle.json.gz", "oracle", board_folder, suite_file) == 0
    before = tree_digest(board_folder)
    path.write_bytes(forged)
    assert cli_submit(path, "peeker", board_folder, suite_file) != 0
    assert tree_digest(board_folder) == before


@pytest.mark.parametrize("field,value", [("episodes", 1), ("env_steps", 1), ("generated_tokens", 0)])
def test_the_counted_cost_is_the_files_own(suite, random_bytes, field, value):
    """Episodes and env steps are counted from the episodes; a model-free policy generates no tokens (it writes
    text); the wall time stays the file's report."""
    with pytest.raises(ResultsError, match=rf"^metadata.compute.{field} is {value}, but the file's episodes count "):
        verify(edit(random_bytes, lambda d: d["metadata"]["compute"].update({field: value})), suite)
    fast = verify(edit(random_bytes, lambda d: d["metadata"]["compute"].update(wall_time_s=0.0)), suite)
    assert fast.mark == REPRODUCED and fast.results.metadata["compute"]["wall_time_s"] == 0.0


def _unpublished(d):
    """A model file made to name weights that are not here, so that it can only be replayed."""
    d["metadata"]["policy"]["model"] = "elsewhere/model"


def test_a_copy_without_some_token_ids_is_still_a_copy(board, tmp_path, suite, suite_file, hf_bytes):  # noqa: F811
    original = tmp_path / "model.json.gz"
    original.write_bytes(edit(hf_bytes, _unpublished))
    assert cli_submit(original, "a model", board, suite_file) == 0
    before = tree_digest(board)

    def dropped(d):
        _unpublished(d)
        turn = d["entries"][1]["episodes"][0]["turns"][0]
        d["metadata"]["compute"]["generated_tokens"] = None  # no longer counted from the replies
        del turn["token_ids"]

    copy_path = tmp_path / "copy.json.gz"
    copy_path.write_bytes(edit(hf_bytes, dropped))
    assert verify(copy_path.read_bytes(), suite).mark == REPLAYED  # it passes every check of a file
    assert cli_submit(copy_path, "not a copy", board, suite_file) != 0
    assert tree_digest(board) == before


def test_one_set_of_weights_has_one_training_record(board, tmp_path, suite, suite_file, models, capsys):  # noqa: F811
    """Two evaluations of the same weights (sampling seeds 3 and 4): the second may not relabel the first's
    training, and one that reports none is accepted as not reported."""
    def evaluated(seed: int, trainer) -> bytes:
        return play(f"hf:{models[0]}", suite, sampling=Sampling(max_new_tokens=16, seed=seed), prompt="compact",
                    history=0, trainer=trainer)

    first = tmp_path / "first.json.gz"
    first.write_bytes(evaluated(3, TRAINER))
    assert cli_submit(first, "trained", board, suite_file) == 0
    before = tree_digest(board)
    relabelled = tmp_path / "relabelled.json.gz"
    relabelled.write_bytes(evaluated(4, {**TRAINER, "algorithm": "zero-shot-rl"}))
    for check in ((), ("--check",)):
        capsys.readouterr()
        assert cli_submit(relabelled, "relabelled", board, suite_file, *check) != 0
        assert "are on this board as submission 'trained', whose metadata.trainer differs" in capsys.readouterr().err
    assert tree_digest(board) == before
    unreported = tmp_path / "unreported.json.gz"
    unreported.write_bytes(evaluated(4, None))
    assert cli_submit(unreported, "unreported", board, suite_file) == 0


def test_a_replayed_files_claim_of_a_hash_blocks_nobody(board, tmp_path, suite, suite_file, models,  # noqa: F811
                                                        random_bytes):
    """A file that is only replayed (an endpoint's) claims some weights' hash with a made-up training first; the
    weights' honest, re-generated file is still accepted: only a re-generated entry binds a hash to weights."""
    from agentgym_bench.rollout.specs import model_sha256

    def claim(d):
        d["metadata"]["policy"].update(kind="openai", model="frontier-model", model_sha256=model_sha256(models[0]))
        d["metadata"]["trainer"] = {**TRAINER, "algorithm": "zero-shot-rl"}

    squatter = tmp_path / "squatter.json.gz"
    squatter.write_bytes(edit(random_bytes, claim))
    assert cli_submit(squatter, "squatter", board, suite_file) == 0
    honest = tmp_path / "honest.json.gz"
    honest.write_bytes(play(f"hf:{models[0]}", suite, sampling=Sampling(max_new_tokens=16, seed=3), prompt="compact",
                            history=0, trainer=TRAINER))
    assert cli_submit(honest, "honest", board, suite_file) == 0


def test_reproduced_rows_rank_above_replayed_ones(tmp_path, suite_file, random_bytes, oracle_bytes):
    """An endpoint's file holding the oracle's moves scores what the oracle scores, and ranks below the re-generated
    random policy: nothing ties its replies to the policy it names."""
    folder = tmp_path / "board"
    def endpoint(d):
        d["metadata"]["policy"].update(kind="openai", model="frontier-model")
        d["metadata"]["policy"]["sampling"]["keyed"] = True  # as eval records it for every model

    for name, raw in (("random", random_bytes), ("frontier", edit(oracle_bytes, endpoint))):
        path = tmp_path / f"{name}.json.gz"
        path.write_bytes(raw)
        assert cli_submit(path, name, folder, suite_file) == 0
    records = json.loads((folder / "board.json").read_text())["submissions"]
    assert [(r["name"], r["mark"]) for r in records] == [("random", REPRODUCED), ("frontier", REPLAYED)]
    assert records[1]["summary"]["score"][0] > records[0]["summary"]["score"][0]
    rows = [line for line in (folder / "README.md").read_text().splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[0:2] for row in rows] == [["| 1", "random"], ["| 2", "frontier"]]


class DemandPeeker:
    """A cheat against the random bargainer: it recomputes the opponent's keyed demands for every round of the match
    (as the verifier re-generates them) and waits, demanding the whole pool, until the round whose demand leaves it
    the most, then demands exactly the rest. An endpoint could answer so."""

    def generate(self, conversations, envs=None, keys=None):
        import numpy as np

        from agentgym_bench.benchmark.matches import OPPONENT_SEED
        from agentgym_bench.multiagent import bargain_rules as rules
        from agentgym_bench.rollout.policy import key_seed

        replies = []
        for seat, (tag, seed, index, _) in zip(envs, keys, strict=True):
            env = seat.env.unwrapped
            counts, mine = env.counts, env.values[seat.agent]
            draws = [np.random.default_rng(key_seed(OPPONENT_SEED, (tag, seed, 1 - index, r)))
                     for r in range(env.max_rounds)]  # the opponent's generator of each round
            rest = [tuple(c - int(rng.integers(0, c + 1)) for c in counts) for rng in draws]
            now = len(env.history)
            best = max(range(now, env.max_rounds), key=lambda r: (rules.value(rest[r], mine), -r))
            demand = rest[now] if best == now else counts
            replies.append(Generation(format_reply([" ".join(map(str, demand))], enable_think=True)))
        return replies


def test_bargain_moves_searched_against_the_random_demands_are_refused(tmp_path, monkeypatch):
    """The random bargainer's demands are fixed by the suite's keys, so a file can wait for the round whose demand
    leaves the most and replay; its mean payoff is out of reach of any policy that sees only its own values (the
    exact ceiling, about 0.6), and check 4 refuses it. Without that check it would pass as replayed."""
    from agentgym_bench.benchmark.evaluate import evaluate_suite
    from agentgym_bench.benchmark.results import dumps
    from agentgym_bench.benchmark.suites import match_ceiling
    from agentgym_bench.leaderboard import verify as verification
    from tests.leaderboard.test_matches_board import play as play_matches

    spec = load_suite("agentgym-ma-v2").entry("bargain-vs-random")
    data = {"name": "peek-ma", "version": 1, "split": "test", "seed_start": spec.seed_start, "description": "random",
            "entries": [{"name": spec.name, "env_id": spec.env_id, "env_kwargs": spec.env_kwargs,
                         "opponent": "random", "episodes": 200}]}
    (tmp_path / "peek-ma.json").write_text(json.dumps(data))
    suite = load_suite(str(tmp_path / "peek-ma.json"))
    record = {**policy_record("openai", Sampling(), keyed=True), "model": "peeker"}
    forged = dumps(evaluate_suite(DemandPeeker(), suite, record))
    [entry] = loads(forged).entries
    mean, ceiling = sum(ep.return_ for ep in entry.episodes) / 200, match_ceiling(suite.entries[0])
    bound = (most_successes(ceiling, 200, 1e-6) + 1) / 200
    assert 0.55 < ceiling < 0.65 and mean >= bound, (mean, bound, ceiling)
    with pytest.raises(ResultsError, match=rf"^entry bargain-vs-random: mean payoff {mean:.3f} over 200 matches, "
                                           rf"where the most a policy that sees only its own values can expect "
                                           rf"against the random opponent is {ceiling:.3f}: a mean of {bound:.3f}"):
        verify(forged, suite)
    assert verify(play_matches("scripted", suite), suite).mark == REPRODUCED
    monkeypatch.setattr(verification, "check_within_reach", lambda results, suite: None)
    assert verify(forged, suite).mark == REPLAYED  # the check is what refuses it: without it the file replays


def _set(path: str, value):
    """A change that sets the field at ``path`` (``a.b[0].c``) of a results file's JSON to ``value``."""
    def change(d):
        *parents, last = path.replace("[", ".[").split(".")
        for part in parents:
            d = d[int(part[1:-1])] if part.startswith("[") else d[part]
        d[int(last[1:-1]) if last.startswith("[") else last] = value(d[int(last[1:-1]) if last.startswith("[")
                                                                      else last]) if callable(value) else value
    return change


@pytest.mark.parametrize(("fixture", "path", "value", "said"), [
    ("random_bytes", "entries[0].episodes[0].seed", float, "entries[0].episodes[0].seed is a number, not an integer"),
    ("random_bytes", "metadata.policy.sampling.seed", float, "metadata.policy.sampling.seed is a number, not an "
                                                              "integer"),
    ("hf_bytes", "metadata.policy.history", float, "metadata.policy.history is a number, not an integer or null"),
    ("random_bytes", "metadata.policy.sampling.seed", -1, "metadata.policy.sampling.seed: -1 is less than the "
                                                          "minimum of 0"),
    ("hf_bytes", "metadata.policy.sampling.seed", 2**64, "metadata.policy.sampling.seed: 18446744073709551616 is "
                                                         "greater than the maximum"),
    ("hf_bytes", "entries[0].episodes[0].turns[0].token_ids", lambda ids: [float(ids[0]), *ids[1:]],
     "entries[0].episodes[0].turns[0].token_ids[0] is a number, not an integer"),
])
def test_numbers_of_the_wrong_type_are_refused_in_one_line(request, suite, fixture, path, value, said):
    """The third audit (2026-12-02): ``2.0`` passes JSON Schema's ``integer`` and Python's ``==``, and then crashed
    the verifier where a seed, a history window or a token id must be an int (gymnasium's seed check, numpy's and
    torch's generators, the tokenizer); so did a negative or a 65-bit sampling seed. Each is refused, naming the
    field, before anything runs."""
    with pytest.raises(ResultsError, match=f"^results file: field {re.escape(said)}"):
        verify(edit(request.getfixturevalue(fixture), _set(path, value)), suite)


def test_fixed_env_kwargs_are_the_suites_in_type_too(tmp_path):
    """A suite's fixed ``max_turns: 3`` recorded as ``3.0`` (equal in Python) reached the env, which raised; ``1`` for
    ``true`` likewise. The recorded keywords must be the suite's as JSON writes them."""
    spec = {**TINY_SUITE, "entries": [{**TINY_SUITE["entries"][1], "env_kwargs": {"max_turns": 3}}]}
    (tmp_path / "fixed.json").write_text(json.dumps(spec))
    fixed = load_suite(str(tmp_path / "fixed.json"))
    honest = play("random", fixed)
    assert verify(honest, fixed).mark == REPRODUCED
    with pytest.raises(ResultsError, match=r"^entry sokoban-6x6: env_kwargs \{\"max_turns\": 3.0\} differ from the "
                                           r"suite's fixed \{\"max_turns\": 3\}"):
        verify(edit(honest, _set("entries[0].env_kwargs.max_turns", 3.0)), fixed)


def test_the_reach_bound_takes_exactly_its_most_successes_and_refuses_one_more(slippery):
    """check_within_reach's bound is exact: ``most`` successes pass, ``most + 1`` are refused (its episodes' success
    flags set here; replay, which would refuse them, is another check)."""
    from dataclasses import replace

    from agentgym_bench.leaderboard.verify import check_within_reach

    suite, _ = slippery
    results = loads(play("random", suite))
    [entry] = results.entries
    most = most_successes(suite.entries[0].oracle_success, len(entry.episodes), 1e-6)

    def with_successes(k: int):
        episodes = [replace(ep, success=i < k) for i, ep in enumerate(entry.episodes)]
        return replace(results, entries=[replace(entry, episodes=episodes)])

    check_within_reach(with_successes(most), suite)
    with pytest.raises(ResultsError, match=rf"^entry frozenlake: {most + 1} successes in "):
        check_within_reach(with_successes(most + 1), suite)
