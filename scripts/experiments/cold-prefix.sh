#!/usr/bin/env bash
# Cold prefixes decoded alone (Engine::ScoreWave) against the earlier decode that packed them into the
# continuations' batches, on the GPU machine: the addon this tree built (`SKIP_CHECKS=1
# scripts/device/gpu-build.sh`) and the same build with the earlier engine_cache.cpp (carried at $1),
# each through
#   - route-repeat.mjs: the examples' requests routed twice with the verdict forced, in three cache
#     states (warm: as routes leave it; cold: cleared before every route; vs-cold: a cold pass, then
#     a warm one), counting the requests whose pick, L, V or R differ between the passes;
#   - the verdict bench (bench/verdict.bench.ts, bundled at $2): cold and warm scoreMany of 2 and of
#     20 candidates (512-token prefixes, a 400-token continuation), the settings a route loads on a
#     GPU (f32 KV, no flash attention, log-probs in the graph), the two addons interleaved.
# The staged package ($G) runs the scripts; the projections come from $3 (models/ stays out of the
# carried tree). Output in $OUT/cold-prefix-*.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
old_src=$(readlink -f "$1"); bench=$(readlink -f "$2"); proj=$(readlink -f "$3")
BUILD="$HOME/gavel-cuda"
addon=$(cat "$G/addon-path")
cp "$addon" "$HOME/new.node"
cp native/src/model/engine_cache.cpp /tmp/engine_cache.new.cpp
cp "$old_src" native/src/model/engine_cache.cpp
cmake --build "$BUILD" -j"$(nproc)" --target gavel_router > "$OUT/build-old.log" 2>&1 || { tail -30 "$OUT/build-old.log"; exit 1; }
cp "$addon" "$HOME/old.node"
cp /tmp/engine_cache.new.cpp native/src/model/engine_cache.cpp
# the build's own output is the staged package's addon (env.sh reads it for every later call): put
# this tree's back, or later calls on this machine would run the earlier decode
cp "$HOME/new.node" "$addon"
cmp -s "$HOME/new.node" "$HOME/old.node" && { echo "the two addons are the same file"; exit 1; }
mkdir -p "$G/models" "$G/bench"
cp -r examples "$G/"
cp "$W/gavel-mini.gguf" "$G/models/" && cp "$proj" "$G/models/gavel-mini.projections.gguf"
cp "$bench" "$G/bench/verdict.bench.mjs"
cd "$G"
for a in new old; do
  for mode in warm cold vs-cold; do
    echo "== $a $mode" | tee -a "$OUT/cold-prefix-repeat.txt"
    GAVEL_ADDON="$HOME/$a.node" timeout 200 node scripts/experiments/route-repeat.mjs $([ $mode = warm ] || echo $mode) > "$OUT/repeat-$a-$mode.txt" 2>&1
    tail -1 "$OUT/repeat-$a-$mode.txt" | tee -a "$OUT/cold-prefix-repeat.txt"
  done
done
for n in 2 20; do
  for a in new old new old; do
    echo "== $a n=$n" | tee -a "$OUT/cold-prefix-bench.txt"
    GAVEL_ADDON="$HOME/$a.node" timeout 120 node bench/verdict.bench.mjs model="$G/models/gavel-mini.gguf" n=$n prefix=512 cont=400 \
      layouts=streams settings=exact+graph rounds=7 2>&1 | tail -2 | tee -a "$OUT/cold-prefix-bench.txt"
  done
done
