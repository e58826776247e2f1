#!/usr/bin/env bash
# On the GPU machine, after gpu-build.sh staged the CUDA addon under $HOME/gavel (same call, or a warm
# machine): node-llama-cpp 3.21.1 (its prebuilt CPU binaries, carried as .device/nlc/nlc-mods.tar.xz:
# the package and its dependencies from this node_modules) and the CUDA addon in one process, each
# alone and in both orders. Every child must exit 0 with no symbol error; the lead compares the
# results of the pairs with those of each alone (scripts/device/coexist-compare.mjs).
#   here:   tar of node-llama-cpp's dependency closure into .device/nlc/nlc-mods.tar.xz
#   device: carry [".device/run", ".device/nlc"]  bash scripts/device/gpu-build.sh && bash scripts/device/coexist-cuda.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gavel-out}
G="$HOME/gavel"
export PATH="$HOME/bin:$PATH"
mkdir -p "$OUT" "$G/test/helpers"
cp test/helpers/coexist-child.mjs "$G/test/helpers/"
xz -dc .device/nlc/nlc-mods.tar.xz | tar -xf - -C "$G/node_modules"
addon=$(cat "$G/addon-path")
cd "$G"
status=0
for steps in gavel nlc gavel,nlc nlc,gavel; do
  GAVEL_ADDON="$addon" GAVEL_GLANCE_DEVICE=cuda NODE_LLAMA_CPP_SKIP_DOWNLOAD=true \
    node test/helpers/coexist-child.mjs "$steps" node-llama-cpp .device/stories.gguf > "$OUT/coexist-$steps.json" 2> "$OUT/coexist-$steps.err"
  rc=$?
  echo "coexist $steps: exit $rc"
  grep -E "symbol lookup error|undefined symbol" "$OUT/coexist-$steps.err" && status=1
  [ $rc = 0 ] || { status=1; tail -5 "$OUT/coexist-$steps.err"; }
done
exit $status
