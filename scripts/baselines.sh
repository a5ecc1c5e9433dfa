#!/usr/bin/env bash
# Set up ./.venv and run the main job on CPU: `agentgym-bench baselines` (about three hours on 2 cores).
#   the oracle and a random agent; the small local default model warm-started on oracle demonstrations; StarPO,
#   StarPO-S and GiGPO from that warm start; each evaluated on the held-out test suite agentgym-v1, verified and put
#   on your own leaderboard (runs/baselines-reference/leaderboard/index.html), then compared with the committed board.
# The warm-started model goes where every command looks for it: $AGENTGYM_BENCH_HOME/models/warmstart
# (AGENTGYM_BENCH_HOME defaults to ~/.cache/agentgym-bench). Extra arguments go to `agentgym-bench baselines`
# (e.g. --recipe smoke, --jobs 1; see `agentgym-bench baselines --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/agentgym-bench baselines "$@"
