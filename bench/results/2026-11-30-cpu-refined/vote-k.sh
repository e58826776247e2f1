cd /work/main
for i in 1 2; do
for b in old new; do
  echo "== $b requests $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  GAVEL_ADDON=/tmp/$b-avx512b.node  # old: the committed prebuild (1997752); new: the build of refined.patch node .cache/bench/vote-k.bench.mjs /tmp/b30d/bank --ks 306 --rounds 3 2>&1 | grep -v "^$"
  echo "== $b tasks $(date +%T)"
  GAVEL_ADDON=/tmp/$b-avx512b.node  # old: the committed prebuild (1997752); new: the build of refined.patch node .cache/bench/vote-k.bench.mjs /tmp/b30d/bank --ks 306 --rounds 2 --tasks ../shared/data/swe-skills-bench/tasks.jsonl --limit 10 2>&1 | grep -v "^$"
done; done
echo DONE
