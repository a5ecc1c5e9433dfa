#!/usr/bin/env bash
# The GPU trainers' offline check (issue 48; scripts/gpu_check.py says what it runs). On the GPU machine, with no
# network: installs what its image lacks from the wheels in .gpu-wheels/ (bash scripts/fetch_gpu_wheels.sh fetches
# them where PyPI is reachable) and the project itself (--no-deps, editable), names anything still missing, then runs
# every check. One line per check, "[gpu-check] NAME: ok|FAIL DETAIL (SECONDS s)", then figures and a summary; exit
# status 1 if any check failed. About 9.5 minutes on one H200 (2026-11-30): no check starts after --budget 420 s, and
# the summary names the command that runs the rest (--only async,pytest-gpu there), a second call on a lent machine.
#   bash scripts/gpu_check.sh                        # CUDA, a ~0.45B Qwen3-shaped model
#   bash scripts/gpu_check.sh --device cpu --tiny    # the same plumbing on a CPU with a tiny model
# PYTHON picks the interpreter (default python3); GPU_WHEELS the wheel folder (default .gpu-wheels).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WHEELS=${GPU_WHEELS:-.gpu-wheels}
export PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
echo "[gpu-check] $($PY -c 'import sys; print(sys.executable, sys.version.split()[0])')"
# The project's dependencies, those already in the image left as they are, the others from the wheel folder only.
mapfile -t DEPS < <($PY -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')
[ -d "$WHEELS" ] || echo "[gpu-check] install: no $WHEELS folder (bash scripts/fetch_gpu_wheels.sh fetches it)"
install() { $PY -m pip install -q --no-index --find-links "$WHEELS" --no-cache-dir "$@" 2>/dev/null; }
if ! install "${DEPS[@]}"; then  # one at a time, to install all that can be and name the others
  MISSING=()
  for dep in "${DEPS[@]}"; do install "$dep" || MISSING+=("$dep"); done
  echo "[gpu-check] install: neither installed nor in $WHEELS: ${MISSING[*]}"
fi
$PY -m pip install -q --no-deps --no-index --no-build-isolation -e . \
  || echo "[gpu-check] install: the project did not install; running it from this folder (PYTHONPATH)"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec $PY scripts/gpu_check.py "$@"
