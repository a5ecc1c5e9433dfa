#!/usr/bin/env bash
# Build agentgym-bench's wheel, install it in a fresh venv outside the clone and smoke-test it there
# (scripts/wheel_smoke.py): what `pip install agentgym-bench` would give a user once it is published.
# Usage: bash scripts/wheel_check.sh [WORK_DIR]   (default: a new temporary folder; PYTHON picks the interpreter)
# torch: the CPU wheel torch==$TORCH_VERSION, from $TORCH_INDEX_URL when set, else from what pip sees (a local
# wheel directory or PyPI). `build` must be importable by $PYTHON (pip install build).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d)}
PYTHON=${PYTHON:-python3}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
mkdir -p "$WORK"
cd "$WORK"  # not the clone: its build/ folder would shadow the `build` package
echo "[wheel] building in $WORK/dist"
rm -rf "$WORK/dist"
"$PYTHON" -m build --wheel --outdir "$WORK/dist" "$ROOT" >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; exit 1; }
wheel=$(ls "$WORK"/dist/agentgym_bench-*.whl)
echo "[wheel] $wheel"
rm -rf "$WORK/venv"
"$PYTHON" -m venv "$WORK/venv"
# pip, without the "Location ... is ignored" warnings some machines' pip configs print; pip's exit status is kept.
pip_install() {
  local status
  "$WORK/venv/bin/python" -m pip --disable-pip-version-check -q install "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }
  status=${PIPESTATUS[0]}
  return "$status"
}
if [ -n "${TORCH_INDEX_URL:-}" ]; then
  pip_install "torch==$TORCH_VERSION" --index-url "$TORCH_INDEX_URL"
else
  pip_install "torch==$TORCH_VERSION"
fi
pip_install "$wheel"
echo "[wheel] installed; smoke test from $WORK (not the clone)"
"$WORK/venv/bin/python" "$ROOT/scripts/wheel_smoke.py"
