#!/usr/bin/env bash
# Set up ./.venv and run the main job on CPU: `agentgym-bench baselines` (about 16 minutes on 2 cores).
#   From the published checkpoint (the committed board's "default model + SFT" weights, hash-checked): StarPO,
#   StarPO-S and GiGPO trained from it; those, the checkpoint, the oracle and a random agent evaluated on the
#   held-out test suite agentgym-v2, verified and put on your own leaderboard
#   (runs/baselines-reference/leaderboard/index.html), then compared with the committed board, per env.
# --from-scratch makes the checkpoint too (three warm-start stages, about three hours on 2 cores). Every model stays
# in the job's work folder (runs/baselines-reference/). Extra arguments go to `agentgym-bench baselines`
# (e.g. --recipe smoke, --jobs 1; see `agentgym-bench baselines --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/agentgym-bench baselines "$@"
