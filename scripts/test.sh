#!/usr/bin/env bash
# Set up ./.venv and run the test suite (fast tests; slow end-to-end tests: add `-m slow`, GPU tests: `-m gpu`).
# The tests run one torch thread each (tests/conftest.py), so pytest-xdist runs them in one worker per CPU (at most
# four), a test file per worker so that a module's fixtures are built once; `-n 0` runs them in this process.
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests of every optional route run too: the trainer adapters (openenv, trl; gem-llm 0.1.0 installs only on
# Python <= 3.12.0) and the multi-agent envs (in dev).
EXTRAS=dev,openenv,trl,lora
if "${PYTHON:-python3}" -c 'import sys; sys.exit(0 if sys.version_info[:3] <= (3, 12, 0) else 1)'; then EXTRAS=$EXTRAS,gem; fi
AGENTGYM_EXTRAS=${AGENTGYM_EXTRAS:-$EXTRAS} bash scripts/setup.sh
# The board page's browser tests need a headless Chromium (the names tests/leaderboard/test_page.py looks for)
if [ -z "$(command -v chromium chromium-browser google-chrome google-chrome-stable || true)" ]; then
  echo "[test] no headless Chromium found: the board page's browser tests will skip (install one, e.g. apt-get install chromium)"
fi
.venv/bin/python -m pytest --numprocesses logical --maxprocesses 4 --dist loadfile "$@"
