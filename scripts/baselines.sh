#!/usr/bin/env bash
# Set up ./.venv and run the main job: the reference baselines on every env, scored.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/agentgym-bench demo "$@"
