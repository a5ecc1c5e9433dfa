"""``agentgym-bench eval --policy openai:...`` end to end against ``agentgym-bench serve``'s server on loopback."""

import json
import re

import gymnasium as gym

from agentgym_bench.benchmark.results import read_results
from agentgym_bench.benchmark.suites import suite_to_dict
from agentgym_bench.cli import main
from agentgym_bench.serving.chat import ChatServer
from tests.benchmark.conftest import suite_of


def test_eval_against_a_local_openai_compatible_server(model_and_tokenizer, tmp_path, capsys):
    model, tokenizer = model_and_tokenizer
    suite_file = tmp_path / "suite.json"
    suite_file.write_text(json.dumps(suite_to_dict(suite_of(["frozenlake", "bandit"], 4))))
    out = tmp_path / "r.json.gz"
    with ChatServer(model, tokenizer, model_name="tiny") as server:
        code = main(["eval", "--policy", f"openai:tiny@{server.base_url}", "--suite", str(suite_file),
                     "--prompt", "compact", "--history", "0", "--max-new-tokens", "8", "--timeout", "30",
                     "--max-concurrency", "4", "--out", str(out)])
    assert code == 0
    results = read_results(out)
    assert results.metadata["policy"]["kind"] == "openai" and results.metadata["policy"]["model"] == "tiny"
    turns = [t for e in results.entries for ep in e.episodes for t in ep.turns]
    assert len(turns) == results.metadata["compute"]["env_steps"] >= 8
    generated = results.metadata["compute"]["generated_tokens"]
    assert generated is not None and generated > 0  # what the endpoint reported in usage
    printed = capsys.readouterr().out
    assert "wrote" in printed and f"--name NAME --board BOARD --suite {suite_file}" in printed  # a file's suite
    budget = re.search(r"the endpoint: at most ([\d,]+) requests .* and ([\d,]+) reply tokens; first prompts "
                       r"(\d+)-(\d+) tokens", printed)
    assert budget is not None, printed  # what the run may ask of the endpoint, said before it is asked
    requests = int(budget[1].replace(",", ""))
    turn_budgets = {e.name: gym.make(e.env_id).unwrapped.max_turns for e in results.entries}
    assert requests == sum(len(e.episodes) * turn_budgets[e.name] for e in results.entries) >= len(turns)
    assert int(budget[2].replace(",", "")) == 8 * requests and 0 < int(budget[3]) <= int(budget[4])
