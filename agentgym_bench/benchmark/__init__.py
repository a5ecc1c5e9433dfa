"""Benchmark suites, evaluation, statistics and the results file: the one place where episodes are scored.

- :mod:`.suites`: versioned suites (env ids, kwargs, prompts allowed, held-out test seeds) as bundled data files;
- :mod:`.evaluate`: ``evaluate(policy, suite, ...) -> Results``;
- :mod:`.results`: the results file (JSON Schema, gzip, limits) and per-entry summaries;
- :mod:`.stats`: Wilson intervals, means, stratified bootstrap, paired comparisons — pure functions.
"""
