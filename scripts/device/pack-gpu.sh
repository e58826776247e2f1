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
for p in yaml node-gyp-build node-addon-api; do cp -r "node_modules/$p" .device/run/node_modules/; done
cp -r node_modules/@huggingface/jinja .device/run/node_modules/@huggingface/
npx tsup >/dev/null
rm -rf .device/run/dist && cp -r dist .device/run/dist && find .device/run/dist -name '*.map' -delete
if [ -f "$LIB/mit.jsonl" ]; then
  [ -f .device/lib/mit.jsonl.xz ] && [ .device/lib/mit.jsonl.xz -nt "$LIB/mit.jsonl" ] || xz -T2 -9 -c "$LIB/mit.jsonl" > .device/lib/mit.jsonl.xz
  cp "$LIB/golds.jsonl" .device/lib/golds.jsonl
  cp ../shared/data/swe-skills-bench/tasks.jsonl .device/lib/tasks.jsonl
fi
du -sh .device/run .device/lib
