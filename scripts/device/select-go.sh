#!/usr/bin/env bash
# The default pipeline's selection records on the GPU machine: every candidate projections file gets
# its own bank and its own full-eval.sh run (all 245 validation and 245 test tasks, the off-domain
# prompts, BM25's full-text leaders from .device/lib/also.jsonl read out beside the glance's top 20),
# the runs side by side, detached, so that no step waits on a device call. After gpu-build.sh staged
# the package on the same warm machine; carry .device/lib and .device/proj.
#
#   start NAME=PROJ [NAME=PROJ …]   launches each run (setsid) and follows them until the call's end
#   wait                            follows them again (until all end or WAIT_S seconds pass)
#   fetch                           packs each run's records and logs into $OUT/NAME.tgz
# Each call prints every run's last log lines. scripts/device/select-default.ts reads the records.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
S="$HOME/select"; mkdir -p "$S"
mode=${1:-wait}; shift || true
alive() { [ -f "$S/$1.pid" ] && kill -0 "$(cat "$S/$1.pid")" 2>/dev/null; }
if [ "$mode" = start ]; then
  for spec in "$@"; do
    name=${spec%%=*}; proj=${spec#*=}
    mkdir -p "$S/$name"; cp "$proj" "$S/$name.proj.gguf"
    echo "$name" >> "$S/names"
    WORK_DIR="$HOME/w-$name" BANK="$HOME/bank-$name" OUT="$S/$name" PROJ="$S/$name.proj.gguf" POOL=${POOL:-1} \
      VAL_PER_BATCH=50 DEADLINE=${RUN_DEADLINE:-3000} JOBS=${JOBS:-6} \
      setsid nohup bash scripts/device/full-eval.sh > "$S/$name.log" 2>&1 < /dev/null &
    echo $! > "$S/$name.pid"
    echo "started $name ($proj), pid $(cat "$S/$name.pid")"
  done
  mode=wait
fi
names=$(sort -u "$S/names" 2>/dev/null)
if [ "$mode" = wait ]; then
  end=$(( $(date +%s) + ${WAIT_S:-540} ))
  while [ "$(date +%s)" -lt "$end" ]; do
    running=0; for n in $names; do alive "$n" && running=1; done
    [ $running = 0 ] && break
    sleep 15
  done
  for n in $names; do echo "== $n $(alive "$n" && echo running || echo ended)"; tail -3 "$S/$n/full-eval.log" 2>/dev/null; done
  nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv,noheader
fi
if [ "$mode" = fetch ]; then
  for n in $names; do
    W="$HOME/w-$n"
    tar -czf "$OUT/$n.tgz" -C "$W" $(cd "$W" && ls -d *.jsonl logs 2>/dev/null) -C "$S" "$n.log" "$n/full-eval.log" 2>/dev/null
    ls -la "$OUT/$n.tgz"
  done
fi
