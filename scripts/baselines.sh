#!/usr/bin/env bash
# Set up ./.venv and run the main job on CPU (about 25 minutes on 2 cores):
#   1. the oracle and a random agent on every env (the ceilings and floors scores are read against);
#   2. warm start: build the small local default model and fine-tune it on noisy oracle demonstrations;
#   3. StarPO-S on slippery FrozenLake from the warm start, evaluated before and after, curves in runs/.
# Models go where every command looks for them: $AGENTGYM_BENCH_HOME/models/{default,warmstart}
# (AGENTGYM_BENCH_HOME defaults to ~/.cache/agentgym-bench; set it to keep them elsewhere).
# Extra arguments go to the training command as key=value overrides (e.g. max_steps=50).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
AGB=.venv/bin/agentgym-bench
WARM=$(.venv/bin/python -c 'from agentgym_bench.paths import model_dir; print(model_dir("warmstart"))')

echo "== 1/3  oracle and random agents on every env (seeds 0..255)"
$AGB demo --episodes 256

echo "== 2/3  warm start of the default model -> $WARM"
if [ -f "$WARM/config.json" ]; then
  echo "(already there; delete $WARM to redo it)"
else
  $AGB warmstart   # builds the default model first if it is missing
fi

echo "== 3/3  StarPO-S on AgentFrozenLake-v0 (pretrain: warmstart) -> runs/starpo_s-frozenlake"
$AGB train starpo_s-frozenlake output_dir=runs/starpo_s-frozenlake "$@"
