import json

from agentgym_bench.benchmark.suites import Suite, load_suite, parse_suite


def suite_of(names: list[str] | None, episodes: int, suite: str = "agentgym-v2") -> Suite:
    """The bundled suite cut to the named entries (all if None) and the first ``episodes`` seeds of each."""
    full = load_suite(suite)
    data = {"name": full.name, "version": full.version, "split": full.split, "seed_start": full.seed_start,
            "entries": [{"name": e.name, "env_id": e.env_id, "env_kwargs": e.env_kwargs, "prompts": list(e.prompts),
                         "episodes": episodes, "oracle_success": e.oracle_success}
                        for e in full.entries if names is None or e.name in names]}
    return parse_suite(json.loads(json.dumps(data)))
