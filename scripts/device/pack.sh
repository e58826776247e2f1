#!/usr/bin/env bash
# Prepares .device/ (git-ignored) with what a GPU run needs and the device machine lacks: node
# itself, llama.cpp's source (the parts the CUDA build reads, from node-llama-cpp's bundle), the
# node-api headers, the test models, and the CPU reference results to compare against.
# Usage: bash scripts/device/pack.sh   (then run scripts/device/gpu-check.sh there, carrying .device, dist, node_modules/node-addon-api)
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .device
src=$(node -e 'import("./scripts/llama-source.mjs").then(m => console.log(m.llamaSourceDir()))')
[ -f .device/llama-src.tar.xz ] || (cd "$src" && tar -cf - CMakeLists.txt cmake src ggml include common vendor licenses tools/CMakeLists.txt | xz -T2 -6 > "$OLDPWD/.device/llama-src.tar.xz")
[ -f .device/node.xz ] || xz -T2 -c "$(readlink -f "$(which node)")" > .device/node.xz
rm -rf .device/node-api-headers && cp -r node_modules/node-api-headers/include .device/node-api-headers
cp ../shared/models/stories260Ktok512.gguf .device/stories.gguf
npx tsup >/dev/null
node scripts/device/compare.mjs record .device
du -sh .device
