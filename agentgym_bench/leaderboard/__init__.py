"""The verified leaderboards: what may go on a board, and what a board shows.

- ``verify.py``: a results file verified before it goes on a board: checks, replay of every episode, re-generation
  of the replies;
- ``board.py``: a board's folder: the accepted results files, their index, and what is rendered from them;
- ``render.py``: what a board shows: the Markdown table, the PNG chart, the HTML page and its transcripts;
- ``weights.py``: published weights: each model entry's weights, shipped beside its board.
"""
