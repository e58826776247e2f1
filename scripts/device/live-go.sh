#!/usr/bin/env bash
# On the GPU machine, after gpu-build.sh staged the CUDA addon under $HOME/gavel (same warm machine):
# the live context's cost per token against gavel-mini's decode step, measured in the same process
# (bench/live-overhead.bench.ts, bundled here into .cache/bench/live-overhead.bench.mjs and carried),
# appending 1, 4 and 16 tokens per call.
#   here:    npx esbuild bench/live-overhead.bench.ts --bundle --platform=node --format=esm --packages=external \
#              --outfile=.cache/bench/live-overhead.bench.mjs; cp models/gavel-mini.projections.gguf .device/lib/default.projections.gguf
#   device:  carry [".device/lib", ".device/stage-b", ".cache/bench"]  bash scripts/device/live-go.sh
# Knobs: SIZES (default 1000,10000,30000), KEYS (16), TOKENS (64), THREADS (8), PER_APPEND (1,4,16).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
mkdir -p "$G/bench" "$G/models"
cp .cache/bench/live-overhead.bench.mjs "$G/bench/"
# the embedded pair where the package root's models/ folder is looked up (src/defaults.ts)
cp "$W/gavel-mini.gguf" "$G/models/gavel-mini.gguf"
cp .device/lib/default.projections.gguf "$G/models/gavel-mini.projections.gguf"
cd "$G"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/live-gpu.txt"
node bench/live-overhead.bench.mjs "${SIZES:-1000,10000,30000}" "${KEYS:-16}" "${TOKENS:-64}" "${THREADS:-8}" "${PER_APPEND:-1,4,16}" 2>&1 \
  | grep -v "^llama\|^~llama\|^load\|^print_info\|^graph_\|^ggml" | tee "$OUT/live-overhead.txt"
