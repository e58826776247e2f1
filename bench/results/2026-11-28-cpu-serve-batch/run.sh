#!/bin/bash
# Each variant: a gavel.js build and an addon. before: the states-only dist with main's avx2 addon (no
# hiddenStatesMany: no scheduler, one pass per request); after-states: the same dist with this
# branch's addon (glance passes batched); after-all: this branch's dist (glance passes and verdict
# score calls batched) with this branch's addon.
cd /work/wt/batch
OUT=bench/results/2026-11-28-cpu-serve-batch
LEVELS=${LEVELS:-1,5,20}
for v in "$@"; do
  case ${v%-200} in
    before*) A=$PWD/build/before/gavel.node; C=$PWD/build/dist-states/cli/gavel.js ;;
    after-states*) A=$PWD/build/Release/gavel.node; C=$PWD/build/dist-states/cli/gavel.js ;;
    after-all*) A=$PWD/build/Release/gavel.node; C=$PWD/dist/cli/gavel.js ;;
  esac
  { echo "# $v: GAVEL_ADDON=$A, cli $C, levels $LEVELS"; echo "# load before: $(cat /proc/loadavg)"; } > $OUT/$v.txt
  GAVEL_ADDON=$A timeout 1500 nice npm run bench -- serve 40 concurrency $LEVELS $C >> $OUT/$v.txt 2>&1
  echo "# exit $?; load after: $(cat /proc/loadavg)" >> $OUT/$v.txt
done
