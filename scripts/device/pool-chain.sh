#!/usr/bin/env bash
# Another backbone's verdict over the shipped route's recorded pools, as one detached chain on the GPU
# machine: wait for a backbone that study-run.sh is training, then verdict-go.sh with CANDIDATES=pool
# over the pool records carried in .device/vp. No step waits on a device call; the calls only start the
# chain, poll it and collect what it wrote. (The runs of 2026-12-03 did these steps by hand, and one
# lost its read-outs when the machine went back before they were copied out: `collect` is that copy.)
#
#   here:    .device/vp/lib/{tasks,golds}.jsonl, mit.jsonl.gz (the pools' skills), .device/vp/work/SPLIT-glance.jsonl
#            (the records whose `verdict` entries are judged); bash scripts/device/verdict-go.sh pack (.device/vl)
#   device:  carry [".device/vp", ".device/vl"], after `train-full.sh build` staged $HOME/gavel:
#            RUN=largepool NAME=gavel-large SPLITS=val SHARDS=8 bash scripts/device/pool-chain.sh start
#            RUN=largepool NAME=gavel-large bash scripts/device/pool-chain.sh follow [SECONDS]   (exit 0 done, 3 running, 1 failed)
#            RUN=largepool NAME=gavel-large bash scripts/device/pool-chain.sh collect            (-> $OUT)
#
# The chain runs from a copy of scripts/ and .device/{vl,vp} under $HOME/chain-$RUN, so the next call's
# fresh tree cannot change it. Its log: $HOME/chain-$RUN/chain.log; its end: $HOME/chain-$RUN/rc.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-}
: "${RUN:?set RUN}" "${NAME:?set NAME, the study-run.sh run whose GGUF judges}"
[[ $RUN =~ ^[A-Za-z0-9._-]+$ && $NAME =~ ^[A-Za-z0-9._-]+$ ]] || { echo "pool-chain.sh: RUN and NAME: letters, digits, . _ - only"; exit 2; }
C="$HOME/chain-$RUN"
T="$HOME/runs/$NAME"
case "$mode" in
start)
  [[ -f .device/vl/verdict-records.mjs ]] || { echo "pool-chain.sh: carry .device/vl (verdict-go.sh pack)"; exit 2; }
  [[ -f .device/vp/lib/mit.jsonl.gz && -f .device/vp/lib/tasks.jsonl && -f .device/vp/lib/golds.jsonl ]] ||
    { echo "pool-chain.sh: carry .device/vp (lib/tasks.jsonl, lib/golds.jsonl, lib/mit.jsonl.gz)"; exit 2; }
  [[ -d $T ]] || { echo "pool-chain.sh: no training run $T (study-run.sh train $NAME …)"; exit 2; }
  [[ -d $HOME/gavel ]] || { echo "pool-chain.sh: no staged package \$HOME/gavel (train-full.sh build)"; exit 2; }
  [[ -e $C ]] && { echo "pool-chain.sh: $C exists (a chain was started)"; exit 2; }
  mkdir -p "$C/repo/.device" "$C/lib" "$HOME/work-$RUN" "$C/out"
  cp -r scripts "$C/repo/scripts"
  cp -r .device/vl "$C/repo/.device/vl"
  cp .device/vp/lib/tasks.jsonl .device/vp/lib/golds.jsonl "$C/lib/"
  gzip -dc .device/vp/lib/mit.jsonl.gz > "$C/lib/mit.jsonl"
  for s in ${SPLITS:-val}; do
    [[ -f .device/vp/work/$s-glance.jsonl ]] || { echo "pool-chain.sh: no .device/vp/work/$s-glance.jsonl"; exit 2; }
    cp ".device/vp/work/$s-glance.jsonl" "$HOME/work-$RUN/"
  done
  echo "lib: $(wc -l < "$C/lib/mit.jsonl") pool skills + $(wc -l < "$C/lib/golds.jsonl") golds; splits ${SPLITS:-val}"
  # the training's command heads the chain's log, so that `collect` stays within a call's eight files
  { echo "training: $(cat "$T/command" 2>/dev/null)"; } > "$C/chain.log"
  setsid nohup bash -c '
    set -u
    C=$1 T=$2 NAME=$3
    echo "$(date +%T) waiting for $T/rc"
    while [ ! -f "$T/rc" ]; do sleep 5; done
    if [ "$(cat "$T/rc")" != 0 ] || [ ! -f "$T/$NAME.gguf" ]; then echo "$(date +%T) training failed (rc $(cat "$T/rc"))"; echo 1 > "$C/rc"; exit 1; fi
    echo "$(date +%T) trained; the verdict over the pools"
    cd "$C/repo"
    OUT="$C/out" VL_LIB="$C/lib" BACKBONE="$T/$NAME.gguf" CANDIDATES=pool bash scripts/device/verdict-go.sh run
    rc=$?
    echo "$(date +%T) verdict rc $rc"
    echo $rc > "$C/rc"' _ "$C" "$T" "$NAME" >> "$C/chain.log" 2>&1 < /dev/null &
  # RUN, SPLITS, SHARDS and LIMIT reach verdict-go.sh through the environment
  echo "started the chain (pid $!): $C/chain.log"
  ;;
follow)
  MAX=${2:-540}
  end=$(($(date +%s) + MAX))
  while :; do
    [[ -f $C/rc ]] && { cat "$C/chain.log"; exit "$([[ $(cat "$C/rc") == 0 ]] && echo 0 || echo 1)"; }
    (($(date +%s) >= end)) && { tail -n 3 "$C/chain.log"; tail -n 2 "$T/train.log" 2>/dev/null; exit 3; }
    sleep 5
  done
  ;;
collect)
  : "${OUT:?OUT must be set (the device tool sets it)}"
  mkdir -p "$OUT/$RUN"
  # a call returns at most eight files: the joined read-outs and logs, never a running chain's slice logs
  # (val and test, each records and log; the chain's log; the run's metrics, log and sha256)
  find "$C/out/$RUN" -maxdepth 1 -type f ! -name '*.s[0-9]*' -exec cp {} "$OUT/$RUN/" \; 2>/dev/null || true
  cp "$C/chain.log" "$OUT/$RUN/chain.log" 2>/dev/null || true
  for f in metrics.json train.log; do [[ -f $T/$f ]] && cp "$T/$f" "$OUT/$RUN/$NAME.$f"; done
  [[ -f $T/$NAME.gguf ]] && (cd "$T" && sha256sum "$NAME.gguf") > "$OUT/$RUN/$NAME.sha256"
  ls -la "$OUT/$RUN"
  ;;
*)
  sed -n '2,16p' "$0"
  exit 2
  ;;
esac
