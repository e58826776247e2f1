#!/bin/bash
# OLD: the committed AVX-512 prebuild before the int8 seed (02435f4); NEW: the prebuild built from the change (its code then moved into helpers, the same work: final-tasks.txt)
# alternating OLD (committed prebuild) / NEW (rebuilt) over the 30,593-skill default bank
cd /work/main
OLD=/tmp/old-avx512.node
NEW=/tmp/new-avx512.node
echo "# $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)), node $(node --version), $(date -u), load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in 1 2; do
  for v in OLD NEW; do
    a=$OLD; [ $v = NEW ] && a=$NEW
    echo "== $v requests $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    GAVEL_ADDON=$a npm run --silent bench -- vote-k /tmp/b30d/bank --ks 306 --rounds 3 2>&1 | grep -v "^$"
    echo "== $v tasks $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    GAVEL_ADDON=$a npm run --silent bench -- vote-k /tmp/b30d/bank --ks 306 --rounds 2 --tasks ../shared/data/swe-skills-bench/tasks.jsonl --limit 10 2>&1 | grep -v "^$"
  done
done
echo "== end $(date -u +%T)"
