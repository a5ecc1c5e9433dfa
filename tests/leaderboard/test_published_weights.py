"""Published weights, end to end: a model folder at ``leaderboards/<board>/models/<slug>/`` of a repository is
recorded by its path relative to the repository root and its hash, submitted to that board, and reproduced from a
copy of the repository elsewhere (a fresh clone): from the recorded weights, with ``--model`` pointing at the same
weights and at other ones. A published board refuses a model named by a machine path, except a file already on it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from agentgym_bench.benchmark.results import loads
from agentgym_bench.cli import main
from agentgym_bench.rollout.specs import model_sha256
from tests.leaderboard.conftest import tree_digest

MODEL = "leaderboards/tiny/models/default-model"


def identical_share(out: str) -> float:
    """The overall share of identical replies that ``reproduce`` printed, in percent."""
    return float(re.search(r"replies: \d+/\d+ \(([\d.]+)%\) identical", out).group(1))


@pytest.fixture(scope="module")
def clone(tmp_path_factory, suite_file) -> Path:
    """A repository with the default model published beside its board, evaluated (from another folder), submitted,
    then copied elsewhere with the original removed: only the copy's weights exist."""
    tmp = tmp_path_factory.mktemp("published")
    repo = tmp / "repo"
    assert main(["init-model", "--path", str(repo / MODEL), "--seed", "0"]) == 0
    results = repo / "results.json.gz"
    assert main(["eval", "--policy", f"hf:{repo / MODEL}", "--suite", str(suite_file), "--prompt", "compact",
                 "--history", "0", "--max-new-tokens", "8", "--seed", "0", "--out", str(results)]) == 0
    assert main(["submit", str(results), "--name", "default model", "--board", str(repo / "leaderboards" / "tiny"),
                 "--suite", str(suite_file)]) == 0
    shutil.copytree(repo, tmp / "clone")
    shutil.rmtree(repo)
    return tmp / "clone"


def test_eval_records_the_repository_relative_path_and_the_weights_hash(clone):
    policy = loads((clone / "results.json.gz").read_bytes()).metadata["policy"]
    assert policy["model"] == MODEL
    assert policy["model_sha256"] == model_sha256(clone / MODEL)
    record = json.loads((clone / "leaderboards" / "tiny" / "board.json").read_text())["submissions"][0]
    assert record["model"] == MODEL and record["mark"] == "reproduced", record["regeneration"]


def test_reproduce_from_the_clone_with_the_recorded_same_and_other_weights(clone, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # anywhere: the path resolves against the board's repository, not here
    board = str(clone / "leaderboards" / "tiny")
    capsys.readouterr()
    assert main(["reproduce", "default model", "--board", board, "--sample", "3"]) == 0
    out = capsys.readouterr().out
    assert f"weights {clone / MODEL}: sha256 {model_sha256(clone / MODEL)}, the recorded one" in out
    assert "the first 3 seeds of every entry: 6 of 20 episodes" in out
    assert identical_share(out) == 100.0 and "scores agree: 2 of 2 entries and the suite score" in out

    same = tmp_path / "same"
    shutil.copytree(clone / MODEL, same)
    assert main(["reproduce", "default model", "--board", board, "--sample", "3", "--model", str(same)]) == 0
    out = capsys.readouterr().out
    assert f"--model {same}: sha256 {model_sha256(same)}, the recorded one" in out
    assert identical_share(out) == 100.0

    other = tmp_path / "other"
    assert main(["init-model", "--path", str(other), "--seed", "1"]) == 0
    capsys.readouterr()
    code = main(["reproduce", "default model", "--board", board, "--sample", "3", "--model", str(other)])
    out = capsys.readouterr().out
    assert code in (0, 1)  # untrained models can score alike; their replies cannot be alike
    assert f"other weights than the recorded {model_sha256(clone / MODEL)}" in out
    assert identical_share(out) < 50.0


def test_a_copy_of_the_board_outside_any_repository_plays_its_own_published_weights(clone, tmp_path, monkeypatch,
                                                                                     capsys):
    board = tmp_path / "copy"
    shutil.copytree(clone / "leaderboards" / "tiny", board)
    monkeypatch.chdir(tmp_path)  # no leaderboards/ here or above: the recorded path resolves nowhere
    capsys.readouterr()
    assert main(["reproduce", "default model", "--board", str(board), "--sample", "1"]) == 0
    out = capsys.readouterr().out
    own = board / "models" / "default-model"
    assert f"weights {own}: sha256 {model_sha256(clone / MODEL)}, the recorded one" in out
    assert identical_share(out) == 100.0


def test_changed_weights_at_the_recorded_path_are_an_error_without_model(clone, tmp_path, capsys):
    board = tmp_path / "repo" / "leaderboards" / "tiny"
    shutil.copytree(clone / "leaderboards" / "tiny", board)
    assert main(["init-model", "--path", str(tmp_path / "repo" / MODEL), "--seed", "2", "--overwrite"]) == 0
    capsys.readouterr()
    assert main(["reproduce", "default model", "--board", str(board), "--sample", "1"]) == 2
    assert "are not the ones the submission recorded (model_sha256 " in capsys.readouterr().err
    shutil.rmtree(tmp_path / "repo" / MODEL)
    assert main(["reproduce", "default model", "--board", str(board), "--sample", "1"]) == 2
    assert f"model '{MODEL}' is not on this machine" in capsys.readouterr().err


def test_a_published_board_refuses_machine_paths_but_keeps_its_archive(clone, tmp_path, suite_file, hf_bytes,
                                                                       capsys):
    """hf_bytes names its model by an absolute path (a folder outside any repository). A private board takes it;
    moved into a repository's leaderboards/ it is an archived entry: re-submitting those bytes and re-rendering
    work, a new file naming a machine path is refused and nothing changes."""
    path = tmp_path / "absolute.json.gz"
    path.write_bytes(hf_bytes)
    assert loads(hf_bytes).metadata["policy"]["model"].startswith("/")
    published = clone / "leaderboards" / "tiny"
    before = tree_digest(published)
    assert main(["submit", str(path), "--name", "absolute", "--board", str(published), "--no-regenerate"]) == 2
    assert "metadata.policy.model '/" in capsys.readouterr().err
    assert main(["submit", str(path), "--name", "absolute", "--board", str(published), "--check"]) == 2
    assert tree_digest(published) == before

    private = tmp_path / "private"
    assert main(["submit", str(path), "--name", "absolute", "--board", str(private), "--suite", str(suite_file),
                 "--no-regenerate"]) == 0
    archive = tmp_path / "repo" / "leaderboards" / "archive"
    shutil.copytree(private, archive)
    assert main(["submit", str(path), "--name", "absolute", "--board", str(archive), "--no-regenerate",
                 "--replace"]) == 0
    assert main(["board", "--board", str(archive)]) == 0
    relabelled = tmp_path / "other.json.gz"
    data = loads(hf_bytes)
    data.metadata["policy"]["model"] = "~/models/mine"
    from agentgym_bench.benchmark.results import dumps

    relabelled.write_bytes(dumps(data))
    before = tree_digest(archive)
    assert main(["submit", str(relabelled), "--name", "other", "--board", str(archive), "--no-regenerate"]) == 2
    assert "metadata.policy.model '~/models/mine' is a path on the machine" in capsys.readouterr().err
    assert tree_digest(archive) == before


def test_a_file_naming_a_published_model_with_other_weights_is_refused(clone, tmp_path, capsys):
    """The file names the board's published folder but records another weights hash: it cannot stand beside the
    published model's name as *replayed*; it must name the folder of the weights it evaluated."""
    import gzip

    data = json.loads(gzip.decompress((clone / "results.json.gz").read_bytes()))
    data["metadata"]["policy"]["model_sha256"] = "0" * 64
    path = tmp_path / "other-weights.json.gz"
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    board = clone / "leaderboards" / "tiny"
    before = tree_digest(board)
    capsys.readouterr()
    assert main(["submit", str(path), "--name", "other weights", "--board", str(board), "--check"]) == 2
    assert f"metadata.policy names a model this repository's boards publish (model {MODEL}); such a file " \
           "must be an hf evaluation of that model's folder" in capsys.readouterr().err
    assert tree_digest(board) == before


@pytest.mark.parametrize("change", ["vllm", "missing folder", "endpoint with another hash", "endpoint with its hash",
                                    "no name, its hash", "an empty name, its hash"])
def test_only_an_hf_file_of_a_published_folder_may_name_it(clone, tmp_path, capsys, change):
    """The second audit of 2026-12-01: another policy's replies stood *replayed* beside the published model's name
    (kind vllm; an hf file naming a folder inside it that does not exist) or its hash and training (an endpoint)."""
    import gzip

    data = json.loads(gzip.decompress((clone / "results.json.gz").read_bytes()))
    policy = data["metadata"]["policy"]
    if change == "vllm":
        policy["kind"] = "vllm"
    elif change == "missing folder":
        policy["model"] = f"{MODEL}/actor"
    elif change == "endpoint with another hash":
        policy.update(kind="openai", model_sha256="1" * 64)
    elif change.startswith(("no name", "an empty name")):  # the third audit (2026-12-02): no name, no check
        policy["model"] = None if change.startswith("no name") else ""
    else:
        policy.update(kind="openai", model="frontier-model")
    for episode in (ep for entry in data["entries"] for ep in entry["episodes"]):
        for turn in episode["turns"]:
            turn.pop("token_ids", None) if change.startswith(("endpoint", "no name", "an empty")) else None
    path = tmp_path / "named.json.gz"
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    capsys.readouterr()
    assert main(["submit", str(path), "--name", "named", "--board", str(clone / "leaderboards" / "tiny"),
                 "--check"]) == 2
    err = capsys.readouterr().err
    assert "metadata.policy names a model this repository's boards publish" in err
    assert ("serve it with --name NAME" in err) is (policy["kind"] != "hf")  # how an endpoint's file gets its own


def test_an_outside_teams_folder_not_yet_published_stays_replayed(clone, suite):
    """The pull-request flow: a team's file names the folder its weights will have on the board; until the
    maintainers add them it is replayed, not refused (it names no published model and claims no published hash)."""
    import gzip

    from agentgym_bench.leaderboard.verify import REPLAYED, verify

    data = json.loads(gzip.decompress((clone / "results.json.gz").read_bytes()))
    data["metadata"]["policy"].update(model="leaderboards/tiny/models/team-x", model_sha256="2" * 64)
    verified = verify(gzip.compress(json.dumps(data).encode()), suite, root=clone,
                      board=clone / "leaderboards" / "tiny")
    assert verified.mark == REPLAYED
    assert verified.regeneration == "model leaderboards/tiny/models/team-x is not on this machine"


def test_a_published_board_takes_one_sampling_seed(clone, tmp_path, suite_file, capsys):
    """Entries of one model differ by a few thousandths between sampling seeds, so a published board takes eval's
    default seed, 0, only: the published model evaluated under seed 1 is refused there (submitted or checked,
    nothing written) and taken by a private board."""
    path = tmp_path / "seed1.json.gz"
    assert main(["eval", "--policy", f"hf:{clone / MODEL}", "--suite", str(suite_file), "--prompt", "compact",
                 "--history", "0", "--max-new-tokens", "8", "--seed", "1", "--out", str(path)]) == 0
    published = clone / "leaderboards" / "tiny"
    before = tree_digest(published)
    for extra in ([], ["--check"]):
        assert main(["submit", str(path), "--name", "seed one", "--board", str(published), *extra]) == 2
        assert "metadata.policy.sampling.seed is 1; board" in capsys.readouterr().err
    assert tree_digest(published) == before
    assert main(["submit", str(path), "--name", "seed one", "--board", str(tmp_path / "private"), "--suite",
                 str(suite_file), "--no-regenerate"]) == 0


def test_a_sibling_boards_published_model_is_re_generated_or_refused(clone, suite):
    """The third audit (2026-12-02): a two-player board's file named the single-agent board's published model, its
    hash and training, unkeyed and without token ids, and stood *replayed* ("not in this board's models/ folder").
    A model published with one board of the repository is published for all of them: a sibling board re-generates
    an honest file of it, and refuses one that could not be re-generated."""
    import gzip

    from agentgym_bench.benchmark.results import ResultsError
    from agentgym_bench.leaderboard.verify import REPRODUCED, verify

    sibling = clone / "leaderboards" / "sibling"
    sibling.mkdir()
    honest = (clone / "results.json.gz").read_bytes()
    assert verify(honest, suite, root=clone, board=sibling).mark == REPRODUCED
    data = json.loads(gzip.decompress(honest))
    data["metadata"]["policy"]["sampling"]["keyed"] = False
    for episode in (ep for entry in data["entries"] for ep in entry["episodes"]):
        for turn in episode["turns"]:
            turn.pop("token_ids", None)
    with pytest.raises(ResultsError, match="metadata.policy.sampling.keyed is false, but eval samples a model with "
                                           "keyed draws"):
        verify(gzip.compress(json.dumps(data).encode()), suite, root=clone, board=sibling)
