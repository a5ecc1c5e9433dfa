"""Benchmark suites, evaluation and the results file: the one place where episodes are scored (with the statistics
of ``agentgym_bench.stats``, which every layer shares).

- ``suites.py``: versioned suites (env ids, kwargs, prompts allowed, held-out test seeds) as bundled data files;
- ``data/``: those files, ``<name>.json``;
- ``evaluate.py``: ``evaluate(policy, suite, ...) -> Results``;
- ``matches.py``: the match entries of two-player suites: who plays, how a match is keyed, match records;
- ``results.py``: the results file (JSON Schema, gzip, limits) and per-entry summaries;
- ``overlap.py``: how much of a suite's test content also occurs in training and validation episodes;
- ``provenance.py``: where a model came from: a results file's trainer and training-compute records.
"""
