#!/usr/bin/env bash
# GPU smoke test for the first person with a CUDA GPU (never run on this project's CPU machines).
#
# Runs the Qwen2.5-0.5B StarPO-S recipe (trainers/configs/starpo_s-sokoban-qwen2.5-0.5b-gpu.yaml) for 2 iterations
# with the colocated vLLM engine, then 2 with Hugging Face generation, then the Qwen3 recipe for 2 iterations with
# vLLM (token-in-token-out), each on one GPU and with small validation sets, and prints what it checked. Needs the
# vLLM extra (pip install -e '.[vllm]') and network access to the Hugging Face hub for the weights.
#   bash scripts/gpu_smoke.sh [OUTPUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/gpu_smoke}
PY=${PYTHON:-python}
$PY - <<'PY'
import torch
assert torch.cuda.is_available(), "no CUDA GPU visible: this smoke test needs one"
print(f"ok  CUDA GPU: {torch.cuda.get_device_name(0)}, {torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB")
import vllm
print(f"ok  vLLM {vllm.__version__} imports")
PY
SMALL="max_steps=2 eval_steps=2 save_steps=2 val_batch_size=16 progress=false"
run() {  # name, config, extra overrides...
  local name=$1 config=$2; shift 2
  echo "--  $name: agentgym-bench train $config $SMALL output_dir=$OUT/$name $*"
  $PY -m agentgym_bench.cli train "$config" $SMALL output_dir="$OUT/$name" "$@"
  $PY - "$OUT/$name" <<'PY'
import json, math, sys
from pathlib import Path
run = Path(sys.argv[1])
records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
assert [r["step"] for r in records] == [0, 1, 2], [r["step"] for r in records]
for r in records[1:]:
    for key in ("loss/policy", "loss/grad_norm", "critic/value_loss", "rollout/response_length"):
        assert r.get(key) is not None and math.isfinite(r[key]), (key, r.get(key))
diff = records[-1].get("rollout/logprob_diff")
print(f"ok  {run.name}: 2 iterations, finite losses, val/success {records[0]['val/success']:.3f} -> "
      f"{records[-1]['val/success']:.3f}, reply length {records[-1]['rollout/response_length']:.0f} tokens, "
      f"recomputed-vs-sampled log-prob gap {diff if diff is None else round(diff, 4)}")
assert (run / "checkpoint-2" / "actor" / "config.json").exists() and (run / "summary.json").exists()
print(f"ok  {run.name}: checkpoint-2/actor and summary.json written")
PY
}
run qwen2.5-vllm starpo_s-sokoban-qwen2.5-0.5b-gpu generation_backend=vllm
run qwen2.5-hf starpo_s-sokoban-qwen2.5-0.5b-gpu generation_backend=hf generation_batch_size=32
run qwen3-vllm starpo_s-sokoban-qwen3-0.6b-gpu generation_backend=vllm
echo "all GPU smoke checks passed; runs in $OUT"
