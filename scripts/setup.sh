#!/usr/bin/env bash
# Set up ./.venv with agentgym-bench (editable) and the extras in $AGENTGYM_EXTRAS (default: dev).
# torch: on a machine without an NVIDIA GPU we install a CPU build, never a multi-GB CUDA build:
#   - a CPU wheel that pip can already see (a local wheel directory or index) is used as is;
#   - otherwise the CPU wheel comes from PyTorch's CPU index (override with TORCH_INDEX_URL).
# With a GPU, torch comes from PyPI within the package's open range. An installed torch is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)
# pip, without the "Location ... is ignored" warnings some machines' pip configs print, nor a dependency's warning
# about an extra of another package (math-verify, through gem-llm, asks for one that does not exist); pip's warnings
# about our own extras and its exit status are kept.
pip_install() {
  local status
  "${PIP[@]}" install "$@" 2>&1 | awk '!/^WARNING: Location/ && !(/does not provide the extra/ && !/agentgym-bench/)'
  status=${PIPESTATUS[0]}
  return "$status"
}

if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "[setup] GPU found: installing torch from PyPI"
    pip_install "torch>=2.6"
  elif [ -n "${TORCH_INDEX_URL:-}" ]; then
    echo "[setup] no GPU: installing torch==$TORCH_VERSION from $TORCH_INDEX_URL"
    pip_install "torch==$TORCH_VERSION" --index-url "$TORCH_INDEX_URL"
  else
    # Ask pip which file it would take, without downloading it.
    wheel=$("${PIP[@]}" install --dry-run --no-deps --ignore-installed --report - "torch==$TORCH_VERSION" 2>/dev/null |
      .venv/bin/python -c "import json,sys; print(json.load(sys.stdin)['install'][0]['download_info']['url'])" || true)
    if [[ "$(uname -s)" == "Darwin" || "$wheel" == *"%2Bcpu"* || "$wheel" == *"+cpu"* ]]; then
      echo "[setup] no GPU: installing the CPU wheel torch==$TORCH_VERSION"
      pip_install "torch==$TORCH_VERSION"
    else
      echo "[setup] no GPU: installing torch==$TORCH_VERSION from PyTorch's CPU index"
      pip_install "torch==$TORCH_VERSION" --index-url https://download.pytorch.org/whl/cpu
    fi
  fi
fi
EXTRAS=${AGENTGYM_EXTRAS:-dev}
# openenv-core (our openenv extra before 0.10) installs the same openenv folder as openenv 0.10: remove it first,
# or the two leave a mix of files
if .venv/bin/python -m pip --disable-pip-version-check show -q openenv-core >/dev/null 2>&1; then
  "${PIP[@]}" uninstall -y openenv-core
fi
echo "[setup] installing agentgym-bench with extras [$EXTRAS]"
pip_install -e ".[$EXTRAS]"
.venv/bin/python -c "import torch, agentgym_bench; print(f'[setup] ready: agentgym-bench {agentgym_bench.__version__}, torch {torch.__version__}, cuda={torch.cuda.is_available()}')"
