# The CPU check of the distilled projections (docs/EXPERIMENTS.md, "Teaching the glance task statements"): run.sh, then
# l7val.sh / l7test.sh (the l7-full evals re-run after the normaliser fix, one bank at a time); table: python3 table.py
#!/usr/bin/env bash
# CPU check of the distilled projections against the l7-full candidate: 500 skills (the 49 golds and
# the packed library's first 451), states computed once (gavel train's cache), both banks installed
# from it, then the glance (and BM25) on SWE-Skills-Bench validation, batches 1-5.
set -uo pipefail
cd /work/main
CLI="node dist/cli/gavel.js"
M=models/gavel-mini.gguf
D=/tmp/dx
t0=$(date +%s)
$CLI train --model $M --library $D/lib500.jsonl --queries description --queries-per-skill 1 --layer 7 --dim 256 \
  --skill-tokens 512 --context 2048 --steps 1 --cache $D/cache --out $D/throwaway.gguf --threads 2 --val-fraction 0 > $D/states.log 2>&1
echo "states $(( $(date +%s) - t0 )) s rc $?"
for p in distill=$D/distill.projections.gguf l7full=models/candidates/gavel-mini-l7-full.projections.gguf; do
  n=${p%%=*}; f=${p#*=}
  A="--model $M --projections $f --context 2048 --skill-budget 512"
  $CLI install $D/lib500.jsonl --bank $D/bank-$n --jobs 2 --threads 2 --states-cache $D/cache $A > $D/install-$n.log 2>&1
  echo "$n install $(( $(date +%s) - t0 )) s rc $?"
done
for split in 1-5 6-10; do
for n in distill l7full; do
  f=$D/distill.projections.gguf; [ $n = l7full ] && f=models/candidates/gavel-mini-l7-full.projections.gguf
  A="--model $M --projections $f --context 2048 --skill-budget 512"
  $CLI eval --tasks ../shared/data/swe-skills-bench/tasks.jsonl --library $D/golds.jsonl --library $D/mit451.jsonl --batches $split \
    --methods bm25,glance --per-query $D/$n-$split.jsonl --resume --bank $D/bank-$n $A > $D/eval-$n-$split.log 2>&1
  echo "$n eval $split $(( $(date +%s) - t0 )) s rc $?"; tail -4 $D/eval-$n-$split.log
done
done
cd /work/main
D=/tmp/dx; M=models/gavel-mini.gguf
A="--model $M --projections models/candidates/gavel-mini-l7-full.projections.gguf --context 2048 --skill-budget 512"
node dist/cli/gavel.js eval --tasks ../shared/data/swe-skills-bench/tasks.jsonl --library $D/golds.jsonl --library $D/mit451.jsonl --batches 1-5 \
    --methods bm25,glance --per-query $D/l7full-1-5.jsonl --resume --bank $D/bank-l7full $A > $D/eval-l7full-1-5.log 2>&1
echo "l7full val rc $?"
while pgrep -f "l7val.sh" > /dev/null; do sleep 5; done
cd /work/main
D=/tmp/dx; M=models/gavel-mini.gguf
A="--model $M --projections models/candidates/gavel-mini-l7-full.projections.gguf --context 2048 --skill-budget 512"
node dist/cli/gavel.js eval --tasks ../shared/data/swe-skills-bench/tasks.jsonl --library $D/golds.jsonl --library $D/mit451.jsonl --batches 6-10 \
    --methods bm25,glance --per-query $D/l7full-6-10.jsonl --resume --bank $D/bank-l7full $A > $D/eval-l7full-6-10.log 2>&1
echo "l7full test rc $?"
