#!/usr/bin/env bash
# On the GPU machine, after gpu-build.sh staged the CUDA addon under $HOME/gavel (same warm machine):
# the resident router under many clients (bench/serve.bench.ts, its `concurrency` part): `gavel serve`
# over examples/skills with gavel-mini on the GPU (every layer offloaded: the default of a CUDA addon),
# 1, 5, 20 and 200 clients, one socket connection each, `glance` then `route`, p50 / p95 and each
# p95 against one client's; then the long-task probe. The CLI is carried as one bundle (its packages
# inside, the addon outside), so the staged dist of gpu-build.sh need not be current.
#   here:    npx esbuild src/cli/gavel.ts --bundle --platform=node --format=esm --external:'*.node' \
#              --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" \
#              --outfile=.cache/bench/gavel-serve.mjs --log-level=warning
#            npx esbuild bench/serve.bench.ts --bundle --platform=node --format=esm --packages=external \
#              --outfile=.cache/bench/serve.bench.mjs --log-level=warning
#            cp models/gavel-mini.projections.gguf .device/lib/default.projections.gguf
#   device:  carry [".device/lib", ".device/stage-b", ".cache/bench"]  bash scripts/device/serve-go.sh
# Knobs: RUNS (requests a level, default 40), LEVELS (default 1,5,20,200).
# Output: $OUT/serve-gpu.txt (the bench's table, llama.cpp's log lines left out).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
mkdir -p "$G/bench" "$G/models" "$G/examples"
cp .cache/bench/serve.bench.mjs .cache/bench/gavel-serve.mjs "$G/bench/"
# the embedded pair where the package root's models/ folder is looked up (src/defaults.ts)
cp "$W/gavel-mini.gguf" "$G/models/gavel-mini.gguf"
cp .device/lib/default.projections.gguf "$G/models/gavel-mini.projections.gguf"
# what the bench installs and asks (read from its working directory)
rm -rf "$G/examples/skills" && cp -r examples/skills "$G/examples/skills"
cp examples/demo-tasks.json "$G/examples/"
cd "$G"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/serve-gpu.txt"
node bench/serve.bench.mjs "${RUNS:-40}" concurrency "${LEVELS:-1,5,20,200}" "$G/bench/gavel-serve.mjs" 2>&1 \
  | grep -v "^llama\|^~llama\|^load\|^print_info\|^graph_\|^ggml\|^common_\|^sched_" | tee -a "$OUT/serve-gpu.txt"
