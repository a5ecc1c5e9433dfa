#!/usr/bin/env bash
# GPU smoke test for the first person with a CUDA GPU (never run on this project's CPU machines).
#
# Runs the Qwen2.5-0.5B StarPO-S recipe (trainers/configs/starpo_s-sokoban-qwen2.5-0.5b-gpu.yaml) for 2 iterations
# with the colocated vLLM engine, then 2 with Hugging Face generation, then the Qwen3 recipe for 2 iterations with
# vLLM (token-in-token-out), each on one GPU and with small validation sets; then the Qwen2.5 recipe with LoRA
# adapters (merged weights pushed to vLLM) on one GPU; evaluates the first run's checkpoint twice with
# `agentgym-bench eval --policy vllm:...` on 32 rooms; runs the Qwen2.5 recipe with the sharded strategy (FSDP2,
# torchrun over 2 GPUs; skipped with one GPU) once with HF generation and once with vLLM; and prints what it checked. Needs the vLLM and
# LoRA extras (pip install -e '.[vllm,lora]') and network access to the Hugging Face hub for the weights.
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
SMALL="max_steps=2 eval_steps=2 save_steps=2 val_batch_size=16 val_env_manager.num_env_groups=16 progress=false"
LAUNCH=${LAUNCH:-"$PY -m agentgym_bench.cli train"}
run() {  # name, config, extra overrides... ($LAUNCH starts the trainer)
  local name=$1 config=$2; shift 2
  echo "--  $name: $LAUNCH $config $SMALL output_dir=$OUT/$name $*"
  $LAUNCH "$config" $SMALL output_dir="$OUT/$name" "$@"
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
# LoRA: adapters on every linear layer of actor and critic; the KL-free recipe, so this checks training, the merged
# weight push into vLLM and the merged checkpoint (actor/ loads as a plain model; actor_adapter/ holds the adapters).
run qwen2.5-lora-vllm starpo_s-sokoban-qwen2.5-0.5b-gpu generation_backend=vllm lora_target=all lora_rank=16 \
  learning_rate=1e-5
test -f "$OUT/qwen2.5-lora-vllm/checkpoint-2/actor_adapter/adapter_config.json"
echo "ok  qwen2.5-lora-vllm: checkpoint-2/actor_adapter kept beside the merged actor/"
# eval with the vLLM backend (keyed sampling) on 32 validation rooms, twice: the same seed gives the same file
cat > "$OUT/sokoban-val32.json" <<'JSON'
{"name": "sokoban-val32", "version": 1, "split": "validation", "seed_start": 0,
 "description": "Validation seeds 0..31 of AgentSokoban-v0",
 "entries": [{"name": "sokoban-6x6", "env_id": "AgentSokoban-v0", "env_kwargs": {}, "prompts": ["ragen"],
              "episodes": 32, "oracle_success": 0.9}]}
JSON
for i in 1 2; do
  $PY -m agentgym_bench.cli eval --policy "vllm:$OUT/qwen2.5-vllm/checkpoint-2/actor" --suite "$OUT/sokoban-val32.json" \
    --history 0 --max-new-tokens 128 --out "$OUT/eval-vllm-$i.json.gz" --overwrite
done
$PY - "$OUT" <<'PY'
import gzip, json, sys
a, b = (json.loads(gzip.open(f"{sys.argv[1]}/eval-vllm-{i}.json.gz").read()) for i in (1, 2))
replies = [[[t["reply"] for t in e["turns"]] for e in r["entries"][0]["episodes"]] for r in (a, b)]
same = sum(x == y for x, y in zip(*replies))
print(f"ok  eval --policy vllm: 32 episodes played twice, {same}/32 identical (keyed sampling; vLLM does not promise "
      "batch-invariant numerics, so a few may differ)")
PY
GPUS=$($PY -c 'import torch; print(torch.cuda.device_count())')
if [ "$GPUS" -ge 2 ]; then  # FSDP2 shards over processes: one process per GPU, bfloat16 mixed precision
  TORCHRUN="$(dirname "$(command -v "$PY")")/torchrun --standalone --nproc_per_node 2 -m trainers.cli"
  LAUNCH=$TORCHRUN run qwen2.5-fsdp2-hf starpo_s-sokoban-qwen2.5-0.5b-gpu strategy=fsdp2 generation_backend=hf \
    generation_batch_size=32
  LAUNCH=$TORCHRUN run qwen2.5-fsdp2-vllm starpo_s-sokoban-qwen2.5-0.5b-gpu strategy=fsdp2 generation_backend=vllm
else
  echo "--  FSDP2 runs skipped: they need 2 GPUs (found $GPUS)"
fi
echo "all GPU smoke checks passed; runs in $OUT"
