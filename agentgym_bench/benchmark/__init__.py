"""Benchmark suites, evaluation and the results file: the one place where episodes are scored (with the statistics
of ``agentgym_bench.stats``, which every layer shares).

- ``suites.py``: versioned suites (env ids, kwargs, prompts allowed, held-out test seeds) as bundled data files;
- ``data/``: those files, ``<name>.json``;
- ``kinds.py``: an entry's kind in one home: the ``Kind`` protocol that both kinds answer (play and record, replay,
  the replies a re-generation reproduces, the scored outcome and its interval, the paired test, the options),
  ``kind_of``, and the checks every recorded file passes: its entries and seeds are the suite's (``check_entries``),
  and it replays (``replay_entry``);
- ``episodes.py``: the episode kind: single-agent episodes, played in batches (``play_episodes``, which the trainers
  play through too), recorded, replayed;
- ``matches.py``: the match kind of two-player suites: who plays, how a match is keyed, match records, their replay;
- ``replay.py``: what replay and re-generation share across kinds: the texts replay recovers, the moves to
  re-generate, the mismatch errors;
- ``evaluate.py``: ``evaluate_suite(policy, suite, ...) -> Results`` and ``evaluate_by_entry``, and the probe of an
  endpoint with each entry's first prompt before a run;
- ``resume.py``: resuming a run from its kept entries (``OUT.partial``), checked against the run's settings and by
  replay first;
- ``results.py``: the results file (JSON Schema, gzip, limits);
- ``scores.py``: per-entry summaries and the suite score, recomputed from a results file's episodes;
- ``overlap.py``: how much of a suite's test content also occurs in training and validation episodes;
- ``provenance.py``: where a model came from: a results file's trainer and training-compute records.
"""
