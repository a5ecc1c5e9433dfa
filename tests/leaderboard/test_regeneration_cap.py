"""Check 7's cost cap (issues 51, 58): re-generating a local model's replies costs what its evaluation's generation
cost, so a file whose first turns alone are above the cap (parameters read from the weight files' headers, prompt
tokens from the replayed episodes' opening prompts, nothing from the file's own claims) stays *replayed*, saying why
on the board, and re-generation stops once its metered work passes the cap."""

from __future__ import annotations

import json
import struct

import pytest

from agentgym_bench.benchmark.kinds import replay_entry
from agentgym_bench.benchmark.results import ResultsError, loads
from agentgym_bench.cli import main
from agentgym_bench.leaderboard.regenerate import parameter_count, prompt_tokens
from agentgym_bench.leaderboard.verify import REPLAYED, REPRODUCED, verify
from agentgym_bench.rollout.hf import load_tokenizer
from tests.leaderboard.test_verify import edit


def first_turns(raw: bytes, suite, folder) -> tuple[float, int]:
    """``(FLOPs, tokens)`` of the opening prompts of ``raw``'s episodes under the model in ``folder``."""
    results = loads(raw)
    texts = {e.name: replay_entry(e, keep={ep.seed for ep in e.episodes}) for e in results.entries}
    tokens = prompt_tokens(results, suite, texts, load_tokenizer(folder)[0], first_turns=True)
    return 2.0 * parameter_count(folder) * tokens, tokens


def test_parameters_are_read_from_the_safetensors_header(models, model_and_tokenizer):
    model, _ = model_and_tokenizer
    assert parameter_count(models[0]) == sum(p.numel() for p in model.parameters()) > 10**6


def test_other_weight_files_and_unreadable_headers_count_as_16_bit_weights(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0" * 1000)
    (tmp_path / "bad.safetensors").write_bytes(struct.pack("<Q", 2**62) + b"{}" + b"\0" * 98)  # header past the end
    negative = json.dumps({"a": {"dtype": "F32", "shape": [-1, 10**6], "data_offsets": [0, 4]}}).encode()
    (tmp_path / "negative.safetensors").write_bytes(struct.pack("<Q", len(negative)) + negative + b"\0" * 4)
    header = json.dumps({"a": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
                         "__metadata__": {"format": "pt"}}).encode()
    (tmp_path / "good.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 48)
    size = (tmp_path / "negative.safetensors").stat().st_size
    assert parameter_count(tmp_path) == 500 + 54 + size // 2 + 12


@pytest.mark.parametrize("claim", [{"dtype": "F32", "shape": [10**6, 10**6], "data_offsets": [0, 0]},
                                   {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 4800]}])
def test_a_header_claiming_more_than_its_bytes_hold_counts_as_its_size(tmp_path, claim):
    """A trillion parameters in no data, or data past the file's end: not believed, so a file dropped into a
    published model's folder cannot push every file naming that model over the re-generation cap."""
    header = json.dumps({"a": claim}).encode()
    path = tmp_path / "pad.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 48)
    assert parameter_count(tmp_path) == path.stat().st_size // 2


def test_a_model_file_over_the_cap_stays_replayed_and_says_why(suite, hf_bytes, models):
    """The default model's file on the tiny suite, with the cap set just below its first turns' cost: not
    re-generated, marked replayed with the estimate; just above it, re-generation starts and stops after the first
    call, whose replies cost more; with room for all, re-generated in full. The file's own token counts play no
    part: they must be what its prompts and replies hold, or the file is refused."""
    flops, tokens = first_turns(hf_bytes, suite, models[0])
    parameters = parameter_count(models[0])
    assert flops == 2.0 * parameters * tokens and tokens > 200
    verified = verify(hf_bytes, suite, regeneration_cap=flops * 0.99)
    assert verified.mark == REPLAYED
    assert verified.regeneration == (
        f"not re-generated here: a model of {parameters:,} parameters reading the {tokens:,} prompt tokens of the "
        f"first turns alone is about {flops:.1e} FLOPs, above this verifier's re-generation cap of {flops * 0.99:.1e} "
        "(submit --regeneration-cap); re-generate it with `agentgym-bench reproduce` on a GPU")
    for field, refusal in (("prompt_tokens", "the prompts of the file's replies hold"),
                           ("generated_tokens", "the file's episodes count")):
        with pytest.raises(ResultsError, match=rf"metadata.compute.{field} is 1, but {refusal} "):
            verify(edit(hf_bytes, lambda d, f=field: d["metadata"]["compute"].update({f: 1})), suite,
                   regeneration_cap=flops * 0.99)
    stopped = verify(hf_bytes, suite, regeneration_cap=flops * 1.0001)
    assert stopped.mark == REPLAYED
    assert stopped.regeneration.startswith("re-generation stopped at this verifier's cap of "), stopped.regeneration
    assert "after 1 of " in stopped.regeneration and "all identical" in stopped.regeneration
    assert verify(hf_bytes, suite, regeneration_cap=flops * 100).mark == REPRODUCED


def test_submit_takes_the_cap_and_the_board_shows_the_reason(tmp_path, suite_file, hf_bytes):
    path = tmp_path / "hf.json.gz"
    path.write_bytes(hf_bytes)
    board = tmp_path / "board"
    base = ["submit", str(path), "--name", "small model", "--board", str(board), "--suite", str(suite_file)]
    assert main([*base, "--regeneration-cap", "1e6"]) == 0
    [record] = json.loads((board / "board.json").read_text())["submissions"]
    assert record["mark"] == REPLAYED and record["regeneration"].startswith("not re-generated here: a model of ")
    readme = (board / "README.md").read_text()
    assert "above this verifier's re-generation cap of 1\\.0e+06" in readme, readme
    for bad in ("0", "-1", "nan", "lots"):
        with pytest.raises(SystemExit):
            main([*base, "--replace", "--regeneration-cap", bad])
