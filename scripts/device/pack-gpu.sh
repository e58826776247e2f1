#!/usr/bin/env bash
# Prepares the carry folders of a full-library run on the GPU machine (docs/DEVICE.md), all git-ignored:
#   .device/run/  node (xz), llama.cpp's bundled source (xz), node-api headers, the runtime packages,
#                 dist without source maps, the CPU reference of compare.mjs and stories260K
#   .device/lib/  the library packed by pack-library.ts (xz) and the benchmark's tasks and golds
# Usage: bash scripts/device/pack-gpu.sh   (after `bash scripts/device/pack.sh` made .device/*.xz,
#        and pack-library.ts made /tmp/gpu/mit.jsonl and /tmp/gpu/golds.jsonl)
set -euo pipefail
cd "$(dirname "$0")/../.."
LIB=${LIB:-/tmp/gpu}
rm -rf .device/run && mkdir -p .device/run/node_modules/@huggingface .device/lib
cp .device/node.xz .device/llama-src.tar.xz .device/cpu-ref.json .device/stories.gguf .device/run/
cp -r node_modules/node-api-headers/include .device/run/node-api-headers
for p in yaml node-addon-api; do cp -r "node_modules/$p" .device/run/node_modules/; done
cp -r node_modules/@huggingface/jinja .device/run/node_modules/@huggingface/
npx tsup >/dev/null
rm -rf .device/run/dist && cp -r dist .device/run/dist && find .device/run/dist -name '*.map' -delete
if [ -f "$LIB/mit.jsonl" ]; then
  [ -f .device/lib/mit.jsonl.xz ] && [ .device/lib/mit.jsonl.xz -nt "$LIB/mit.jsonl" ] || xz -T2 -9 -c "$LIB/mit.jsonl" > .device/lib/mit.jsonl.xz
  cp "$LIB/golds.jsonl" .device/lib/golds.jsonl
  cp ../shared/data/swe-skills-bench/tasks.jsonl .device/lib/tasks.jsonl
fi
du -sh .device/run .device/lib
# The two stage folders of gpu-stage.sh (when an earlier build came back into .device/cuda-build).
if ls .device/cuda-build/cuda-build.tar.xz.part-ac >/dev/null 2>&1; then
  rm -rf .device/stage-a .device/stage-b && mkdir -p .device/stage-a .device/stage-b
  cp .device/node.xz .device/cuda-build/cuda-build.tar.xz.part-aa .device/cuda-build/cuda-build.tar.xz.part-ab .device/stage-a/
  cp -r .device/run/dist .device/run/node_modules .device/run/cpu-ref.json .device/run/stories.gguf .device/stage-a/
  cp .device/cuda-build/cuda-build.tar.xz.part-ac .device/stage-b/
  cp models/gavel-mini.gguf .device/stage-b/
  du -sh .device/stage-a .device/stage-b
fi
# The model alone in .device/stage-b when no earlier build came back: env.sh copies it into $W from
# there on a call that moved models/ out of the tree (route-go.sh, live-go.sh: DEVICE.md, "The 64 MiB limit").
if [ ! -f .device/stage-b/gavel-mini.gguf ]; then
  mkdir -p .device/stage-b && cp models/gavel-mini.gguf .device/stage-b/ && du -sh .device/stage-b
fi
# The layer scan's projections (one per candidate depth), when trained here (SCAN=/tmp/scan).
if ls "${SCAN:-/tmp/scan}"/p*.gguf >/dev/null 2>&1; then
  rm -rf .device/scan && mkdir -p .device/scan && cp "${SCAN:-/tmp/scan}"/p*.gguf .device/scan/ && du -sh .device/scan
fi
