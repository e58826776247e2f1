#!/usr/bin/env bash
# The shipped route on the CPU over the whole benchmark library, on the device machine used as a large
# CPU (no GPU code: the committed CPU prebuilds, the loader choosing one as for a user). The 49 SWE-Skills-Bench golds and the 30,544 public
# skills are installed from their full texts with every core (the install writes the key IVF, as a
# user's install of ≥ 3,000 skills does), then the shipped route (bench/route-rerank-real.bench.ts
# --shipped-only) runs pinned to two cores (`taskset -c 0,1`: the model's threads, the native kernels'
# threads and libuv's pool all see two cores) over test tasks: with the key IVF (the default) and with
# the exact glance (GAVEL_KEY_IVF=off), a record per task, so the picks can be compared, and the
# examples' everyday requests (bench/route-prompts.bench.ts: the hook's decision and the full route). Last, the key
# IVF's top-20 agreement with the exact glance on 40 validation tasks (bench/kivf.bench.ts real, every
# core).
#   here:   bash scripts/device/cpu-route-go.sh pack
#             .device/cpu-a: node (xz), the runtime packages, dist, the CPU prebuilds, the benches
#                            bundled from this tree
#             .device/cpu-b: gavel-mini and the shipped projections
#             .device/full:  the public library's full texts and the tasks (route-go.sh pack)
#   device, back to back on one warm machine, the tree slimmed (bench/results, models, prebuilds moved
#   out: DEVICE.md, "Carry"):
#     1. carry [".device/cpu-a"]: bash scripts/device/cpu-route-go.sh stage
#     2. carry [".device/cpu-b"]: bash scripts/device/cpu-route-go.sh stage   (64 MiB a call: two stages)
#     3. carry [".device/full"]:  bash scripts/device/cpu-route-go.sh start   (detached; follows it)
#     4. no carry:                bash scripts/device/cpu-route-go.sh wait    (again until it ends)
#   Each call returns what is done so far in $OUT/cpu-route.tgz. The machine goes back after ~30 s
#   without a call: issue each call as soon as the last returns.
# Knobs: IVF_TASKS (40), EXACT_TASKS (12), SUBSETS ("": also banks of the first N skills, e.g.
# "1000 10000", routed the same way after the 30K runs), INSTALL_JOBS (8) and INSTALL_THREADS (2).
# On the CPU give the install the cores: INSTALL_THREADS=15 (a pass's threads; --jobs only keeps
# skills in flight). With 2 it ran at 14 skills/s on 16 cores; with 15, 33 skills/s (2026-11-29).
# Budget: the install takes ~12 min and the key IVF's training ~4 min on 16 cores, before any route.
# INSTALL_ADDON=<a CUDA addon> (gpu-build.sh's, `$(cat ~/gavel/addon-path)`) installs with it instead
# (the model on the GPU, ~200 s; GAVEL_GLANCE_DEVICE=cpu, so the install still writes the key IVF as on
# a CPU); the routes still load the CPU prebuilds. CHAIN=prompts: only the bank and the examples'
# requests, with GAVEL_KEY_IVF_I8=off (1 rep) and the default (3 reps), in that order. CHAIN=quality:
# only the bank and the shipped route over every test task (batches 6-10), then every validation task
# (1-5), each with its held-out off-domain prompts, on every core (quality-test/val.txt and .jsonl,
# records of route-go.sh's shape, for compare-records.mjs against a GPU run). SKILL_BUDGET=default
# installs with no skill budget, as `gavel` with no flags (default 512).
set -uo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-wait}
OUT=${OUT:-/tmp/gavel-out}
H="$HOME/cpuroute"; G="$H/pkg"; R="$H/run"
export PATH="$HOME/bin:$PATH"
if [ "$mode" = pack ]; then
  set -e
  A=.device/cpu-a; rm -rf "$A" .device/cpu-b; mkdir -p "$A/pkg/node_modules/@huggingface" "$A/pkg/bench" .device/cpu-b
  [ -f .device/node.xz ] || xz -T2 -c "$(readlink -f "$(which node)")" > .device/node.xz
  cp .device/node.xz "$A/"
  for p in yaml; do cp -r "node_modules/$p" "$A/pkg/node_modules/"; done
  cp -r node_modules/@huggingface/jinja "$A/pkg/node_modules/@huggingface/"
  npx tsup >/dev/null
  cp -r dist "$A/pkg/dist" && find "$A/pkg/dist" -name '*.map' -delete
  mkdir -p "$A/pkg/prebuilds" && cp -r prebuilds/linux-x64 prebuilds/linux-x64-avx512 "$A/pkg/prebuilds/"   # the loader picks one, as for a user
  cp models/gavel-mini.gguf models/gavel-mini.projections.gguf .device/cpu-b/
  cp package.json CMakeLists.txt examples/demo-tasks.json examples/everyday-tasks.json "$A/pkg/"   # the package root: package.json beside CMakeLists.txt
  for b in route-rerank-real route-prompts glance-index-real kivf; do
    npx esbuild "bench/$b.bench.ts" --bundle --platform=node --format=esm --packages=external \
      --outfile="$A/pkg/bench/$b.bench.mjs" --log-level=warning
  done
  bash scripts/device/route-go.sh pack >/dev/null
  du -sh "$A" .device/cpu-b .device/full; exit 0
fi
if [ "$mode" = stage ]; then
  set -e
  mkdir -p "$HOME/bin" "$H" "$R"
  [ -x "$HOME/bin/node" ] || { xz -dc .device/cpu-a/node.xz > "$HOME/bin/node.tmp" && chmod +x "$HOME/bin/node.tmp" && mv "$HOME/bin/node.tmp" "$HOME/bin/node"; }
  if [ -d .device/cpu-a ]; then rm -rf "$G" && cp -r .device/cpu-a/pkg "$G"; fi
  if [ -d .device/cpu-b ]; then mkdir -p "$G/models" && cp .device/cpu-b/* "$G/models/"; fi
  node --version; nproc; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Flags" | cut -c1-160 | tee "$OUT/cpu.txt"
  free -g | tee -a "$OUT/cpu.txt"
  echo staged; exit 0
fi
export GAVEL_LOG=0
alive() { [ -f "$R/pid" ] && kill -0 "$(cat "$R/pid")" 2>/dev/null; }
if [ "$mode" = start ]; then
  F=.device/full
  [ -f "$R/mit-full.jsonl" ] || { xz -dc "$F/mit-full.jsonl.xz" > "$R/mit-full.tmp" && mv "$R/mit-full.tmp" "$R/mit-full.jsonl"; }
  cp "$F"/tasks.jsonl "$F"/skills.jsonl "$F"/off-domain-prompts.jsonl "$R/"
  cat > "$R/chain.sh" <<EOF
set -x
cd "$G"
export GAVEL_LOG=0
A="--model $G/models/gavel-mini.gguf --projections $G/models/gavel-mini.projections.gguf --context 2048$([ "${SKILL_BUDGET:-512}" = default ] || echo " --skill-budget ${SKILL_BUDGET:-512}")"
B="--model $G/models/gavel-mini.gguf --projections $G/models/gavel-mini.projections.gguf"
L="$R/skills.jsonl,$R/mit-full.jsonl"
IA="${INSTALL_ADDON:+env GAVEL_ADDON=$INSTALL_ADDON GAVEL_GLANCE_DEVICE=cpu}"
bank_of() { # n: a bank of the golds and the first n-49 public skills (n = all: every one)
  local n=\$1 b=$R/bank-\$1
  [ -f \$b.done ] && return 0
  \$IA node dist/cli/gavel.js install $R/skills.jsonl --bank \$b --jobs ${INSTALL_JOBS:-8} --threads ${INSTALL_THREADS:-2} \$A > \$b.install.txt 2>&1 || return 1
  if [ \$n = all ]; then src=$R/mit-full.jsonl; else src=$R/mit-\$n.jsonl; head -n \$((n - 49)) $R/mit-full.jsonl > \$src; fi
  \$IA node dist/cli/gavel.js install \$src --bank \$b --jobs ${INSTALL_JOBS:-8} --threads ${INSTALL_THREADS:-2} \$A >> \$b.install.txt 2>&1 && touch \$b.done
}
route_on() { # bank size, label, tasks, environment…
  local n=\$1 label=\$2 k=\$3; shift 3
  env "\$@" taskset -c 0,1 node bench/route-rerank-real.bench.mjs $R/bank-\$n $R/tasks.jsonl \$L --batches 6-10 --limit \$k \
    --shipped-only \$B --records $R/route-\$n-\$label.jsonl > $R/route-\$n-\$label.txt 2>&1
}
prompts_on() { # bank size [label reps]: the examples' requests, the hook's decision and the full route, pinned
  taskset -c 0,1 node bench/route-prompts.bench.mjs $R/bank-\$1 demo-tasks.json,everyday-tasks.json --reps \${3:-3} \$B > $R/prompts-\$1\${2:+-\$2}.txt 2>&1
}
bank_of all
if [ "${CHAIN:-}" = quality ]; then   # every task of both splits and the held-out prompts, every core (picks, not latency)
  for sp in test:6-10:offhw6,offhw7,offhw8,offhw9,offhw10 val:1-5:offhw1,offhw2,offhw3,offhw4,offhw5; do
    IFS=: read -r name batches off <<< "\$sp"
    node bench/route-rerank-real.bench.mjs $R/bank-all $R/tasks.jsonl \$L --batches \$batches --shipped-only \$B --skill-budget ${SKILL_BUDGET:-512} \
      --off-domain $R/off-domain-prompts.jsonl --off-batches \$off --records $R/quality-\$name.jsonl > $R/quality-\$name.txt 2>&1
  done
  echo chain-done; exit 0
fi
if [ "${CHAIN:-}" = prompts ]; then
  export GAVEL_KEY_IVF_I8=off; prompts_on all i8off 1
  unset GAVEL_KEY_IVF_I8; prompts_on all i8on 3
  echo chain-done; exit 0
fi
prompts_on all
route_on all ivf ${IVF_TASKS:-40}
route_on all exact ${EXACT_TASKS:-12} GAVEL_KEY_IVF=off
node bench/glance-index-real.bench.mjs $R/bank-all $R/tasks.jsonl \$L --batches 1-5 --limit 40 --cache $R/q30.bin --project-only > $R/project.txt 2>&1
node bench/kivf.bench.mjs real $R/bank-all $R/q30.bin --tasks 40 --reps 1 --nprobe d > $R/kivf.txt 2>&1
for n in ${SUBSETS:-}; do
  bank_of \$n && prompts_on \$n && route_on \$n ivf ${IVF_TASKS:-40}
  [ \$n -lt 3000 ] || route_on \$n exact ${EXACT_TASKS:-12} GAVEL_KEY_IVF=off   # below 3,000 the default is the exact glance
done
echo chain-done
EOF
  setsid nohup bash "$R/chain.sh" > "$R/chain.log" 2>&1 < /dev/null &
  echo $! > "$R/pid"; echo "started, pid $(cat "$R/pid")"
  mode=wait
fi
if [ "$mode" = wait ]; then
  end=$(( $(date +%s) + ${WAIT_S:-560} ))
  while [ "$(date +%s)" -lt "$end" ] && alive; do sleep 10; done
  echo "== $(alive && echo running || echo ended)"; tail -4 "$R/chain.log"
  for f in "$R"/*.txt; do [ -f "$f" ] && { echo "-- $(basename "$f")"; tail -5 "$f"; }; done
  uptime
fi
(cd "$R" && tar -czf "$OUT/cpu-route.tgz" $(ls *.txt *.jsonl chain.log chain.sh 2>/dev/null | grep -v -e '^mit-' -e '^tasks.jsonl$' -e '^skills.jsonl$'))
ls -la "$OUT/cpu-route.tgz"
