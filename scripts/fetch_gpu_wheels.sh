#!/usr/bin/env bash
# Download the wheels of what the GPU machines' image lacks, for scripts/gpu_check.sh to install there offline
# (issue 48): gymnasium, pettingzoo, jsonschema, starlette and uvicorn with their dependencies, at the versions the
# CPU tests run with.
# The image already has numpy, torch, transformers, peft, accelerate, tokenizers, safetensors, pyyaml, matplotlib,
# tqdm, cloudpickle, attrs and typing-extensions; the small pure-Python ones among those come along as fallbacks
# (pip takes a wheel from the folder only for what is missing). About 1 MB; the folder is git-ignored and travels
# with `carry: [".gpu-wheels"]`.
#   bash scripts/fetch_gpu_wheels.sh [DIR]              # CPython 3.12, manylinux x86-64 (the GPU image's Python)
#   PYTHON_VERSION=3.11 bash scripts/fetch_gpu_wheels.sh /tmp/wheels311   # another Python, e.g. to try it here
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.gpu-wheels}
PYV=${PYTHON_VERSION:-3.12}
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
PACKAGES=(
  gymnasium==1.4.0 farama-notifications==0.0.6 cloudpickle==3.1.3 typing-extensions==4.16.0
  pettingzoo==1.27.0
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 attrs==26.1.0
  pyyaml==6.0.4
  starlette==1.10.0 uvicorn==0.54.0 h11==0.16.0 anyio==4.16.0 click==8.5.1
)
PLATFORMS=()
for p in manylinux2014_x86_64 manylinux_2_17_x86_64 manylinux_2_24_x86_64 manylinux_2_27_x86_64 manylinux_2_28_x86_64; do
  PLATFORMS+=(--platform "$p")
done
rm -rf "$DIR" && mkdir -p "$DIR"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp \
  "${PLATFORMS[@]}" -d "$DIR" "${PACKAGES[@]}"
ls "$DIR"
echo "$(ls "$DIR" | wc -l) wheels for CPython $PYV in $DIR: $(du -sh "$DIR" | cut -f1)"
