#!/usr/bin/env bash
# Where the key IVF (the pruned glance, read from host memory on the CPU) stands against the exact
# CUDA glance (the bank in the card's memory), at 100K skills × 200 keys and 1M skills × 64 keys,
# dim 256, f16 keys, 20 / 200 / 1,300 task rows: docs/BENCHMARKS.md, "The pruned glance and the GPU".
# On the GPU machine, after gpu-build.sh built and staged the CUDA addon under $HOME/gavel (same warm
# machine).
#   here:    bash scripts/device/pack.sh && bash scripts/device/pack-gpu.sh   (.device/run)
#            bash scripts/device/scale-go.sh pack     (bench/kivf.bench.ts bundled into .device/scale)
#   device, back to back on one warm machine:
#     1. carry [".device/run"]:    SKIP_CHECKS=1 bash scripts/device/gpu-build.sh
#     2. carry [".device/scale"]:  bash scripts/device/scale-go.sh start   (detached; follows it)
#     3. no carry:                 bash scripts/device/scale-go.sh wait    (again until it ends)
# The chain, one step at a time (each holds its bank alone in memory):
#   - the exact CUDA glance (scripts/device/glance-twins.mjs --timings-only --scale S,K,256,20/200/1300,
#     the default kernel), 1M × 64 keys then 100K × 200 keys;
#   - the key IVF on every core of the host against the exact CPU glance (bench/kivf.bench.ts synth
#     --i8 on --prune on, the default nprobe; GAVEL_GLANCE_DEVICE=cpu), 100K × 200 then 1M × 64 keys.
# Knobs: GPU_SHAPES ("1000000,64 100000,200"), CPU_SHAPES ("100000,200 1000000,64"), NOISE_POOL (65536:
# the CPU banks' fill, bench/kivf.bench.ts), WAIT_S (540: how long `start`/`wait` follow the chain).
set -uo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-wait}
R="$HOME/scale"
if [ "$mode" = pack ]; then
  set -e
  rm -rf .device/scale && mkdir -p .device/scale
  npx esbuild bench/kivf.bench.ts --bundle --platform=node --format=esm --packages=external \
    --outfile=.device/scale/kivf.bench.mjs --log-level=warning
  du -sh .device/scale; exit 0
fi
source scripts/device/env.sh
mkdir -p "$R"
alive() { [ -f "$R/pid" ] && kill -0 "$(cat "$R/pid")" 2>/dev/null; }
if [ "$mode" = start ]; then
  mkdir -p "$G/bench" && cp .device/scale/kivf.bench.mjs "$G/bench/"
  cat > "$R/chain.sh" <<EOF
set -x
cd "$G"
export GAVEL_LOG=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)"; free -g | head -2
for s in ${GPU_SHAPES:-1000000,64 100000,200}; do
  GLANCE_KERNELS=default node scripts/device/glance-twins.mjs --timings-only --scale \$s,256,20/200/1300
done
for s in ${CPU_SHAPES:-100000,200 1000000,64}; do
  GAVEL_GLANCE_DEVICE=cpu node bench/kivf.bench.mjs synth --skills \${s%,*} --keys \${s#*,} --nq 200,20 --tasks 3 --reps 3 \\
    --nprobe d --prune on --i8 on --keytype f16 --noise-pool ${NOISE_POOL:-65536}
done
echo chain-done
EOF
  (setsid nohup bash "$R/chain.sh" > "$R/chain.log" 2>&1 & echo $! > "$R/pid")
  cp "$R/chain.sh" "$OUT/"
fi
end=$(( $(date +%s) + ${WAIT_S:-540} ))
while alive && [ "$(date +%s)" -lt "$end" ]; do sleep 10; done
cp "$R/chain.log" "$OUT/scale.txt"
grep -v '^+' "$R/chain.log" | tail -40
if alive; then echo "still running"; else echo "chain ended"; fi
