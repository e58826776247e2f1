cd /work/main
export GAVEL_ADDON=$PWD/build/Release/gavel.node
for spec in "10000 200 200" "10000 200 20" "100000 30 200" "100000 30 20" "30000 200 20"; do
  set -- $spec
  echo "== synth $1 x $2, nq $3: start $(date) load $(cat /proc/loadavg)"
  npm run bench -- kivf synth --skills $1 --keys $2 --nq $3 --tasks 5 --reps 3 --nprobe d --prune off,on --i8 off,on 2>&1 | grep -v "^>\|^$"
  echo "== end $(date) load $(cat /proc/loadavg)"
done
for m in off on; do
  echo "== route-prompts GAVEL_KEY_IVF_I8=$m $(date) load $(cat /proc/loadavg)"
  GAVEL_KEY_IVF_I8=$m npm run bench -- route-prompts /tmp/b3k/bank examples/demo-tasks.json,examples/everyday-tasks.json --reps 2 2>&1 | grep -v "^>\|^$"
done
echo "== all done $(date)"
