cd /work/main
export GAVEL_ADDON=$PWD/build/Release/gavel.node GAVEL_LOG=0
A="--context 2048 --skill-budget 512 --threads 2 --jobs 4"
echo "== 1K install $(date) load $(cat /proc/loadavg)"
head -n 951 /tmp/k36/mit-full.jsonl > /tmp/b1k/mit951.jsonl
node dist/cli/gavel.js install .device/full/skills.jsonl --bank /tmp/b1k/bank --create $A > /tmp/b1k/install.txt 2>&1
node dist/cli/gavel.js install /tmp/b1k/mit951.jsonl --bank /tmp/b1k/bank $A >> /tmp/b1k/install.txt 2>&1
echo "== 10K install $(date) load $(cat /proc/loadavg)"
rm -rf /tmp/b10k/bank && cp -r /tmp/b3k/bank /tmp/b10k/bank
sed -n 2952,9951p /tmp/k36/mit-full.jsonl > /tmp/b10k/mit7000.jsonl
node dist/cli/gavel.js install /tmp/b10k/mit7000.jsonl --bank /tmp/b10k/bank $A > /tmp/b10k/install.txt 2>&1
echo "== installs done $(date) load $(cat /proc/loadavg)"
node dist/cli/gavel.js list --bank /tmp/b1k/bank --json 2>/dev/null | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{console.log("1K skills:",JSON.parse(s).length)}catch{console.log("1K list?")}})'
node dist/cli/gavel.js list --bank /tmp/b10k/bank --json 2>/dev/null | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{console.log("10K skills:",JSON.parse(s).length)}catch{console.log("10K list?")}})'
ls -la /tmp/b10k/bank
echo "== route-prompts 1K $(date) load $(cat /proc/loadavg)"
npm run bench -- route-prompts /tmp/b1k/bank examples/demo-tasks.json,examples/everyday-tasks.json --reps 2 2>&1 | grep -v "^>\|^$"
for m in off on; do
  echo "== route-prompts 10K GAVEL_KEY_IVF_I8=$m $(date) load $(cat /proc/loadavg)"
  GAVEL_KEY_IVF_I8=$m npm run bench -- route-prompts /tmp/b10k/bank examples/demo-tasks.json,examples/everyday-tasks.json --reps 2 2>&1 | grep -v "^>\|^$"
done
echo "== all done $(date)"
