#!/usr/bin/env bash
# Set up ./.venv and run the test suite (fast tests; slow end-to-end tests: add `-m slow`, GPU tests: `-m gpu`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest "$@"
