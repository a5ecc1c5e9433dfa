"""The verified leaderboards: what may go on a board, and what a board shows.

- ``verify.py``: a results file verified before it goes on a board: checks, replay of every entry (as its kind
  replays it, re-generating a model-free policy's replies), and ``verify``, which runs them all;
- ``regenerate.py``: re-generation of a local model's replies from its weights, in the evaluation's batches, and its
  cost cap;
- ``board.py``: a board's folder: the accepted results files, their index, and what is rendered from them;
- ``folder.py``: a board folder's files: the names it writes, the gate against links, its lock, and the
  all-or-nothing rename of a write into place (put back if stopped part way);
- ``render.py``: what a board shows: the Markdown table, the PNG chart, the HTML page and its transcripts;
- ``weights.py``: published weights: each model entry's weights, shipped beside its board;
- ``reproduction.py``: a submission re-run (``agentgym-bench reproduce``) and its agreement with the record;
- ``main_job.py``: the main job (``agentgym-bench baselines``): its recipes, its plan of steps, the runner that runs
  them on the cores it is given, and its training report;
- ``comparison.py``: a board read against others, as the main job reports it: each entry against the committed
  board's entry of the same name, and each trained entry against the entry it started from.
"""
