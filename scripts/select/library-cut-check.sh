#!/usr/bin/env bash
# Routes over the small libraries the abstention fit's records were made over, through the router
# itself (scripts/select/small-library.ts), under each projections file given: examples/skills cut
# into libraries of 3-5 skills as scripts/device/tiny-records.sh cuts them (seeds 1 2; ONELINE=1 with
# seed 3, each skill cut to one line), and the whole of examples/skills beside 100 public skills
# (seed 1: lines 7,920-8,019 of skills-mit.jsonl.gz). Per library: the requests of
# bench/data/short-requests-examples.jsonl whose gold is in it and the 80 hand-written prompts, each
# split into fitting (batches ≤ 5) and held-out (6-10) files, so the table gives each part apart.
# Usage: bash scripts/select/library-cut-check.sh OUT_DIR P1.gguf [P2.gguf …]
#   SHAPES: any of "tiny oneline 124 24" (default "tiny oneline 124"; 24: the example skills alone)
#   REQUESTS, PROMPTS: other request and prompt files (JSONL as the defaults); a batch without a number
#   counts as fitting
#   LIVE=1: small-library.ts --live (each request also selected through a live context, with the
#   library's own cut and without; summary rows "shipped, live" and "shipped, live, no library cut")
# OUT_DIR/<shape>-<library>/<projections basename>.txt: small-library.ts's output; OUT_DIR/summary.tsv.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: library-cut-check.sh OUT_DIR P.gguf …}; shift
[ $# -gt 0 ] || { echo "give at least one projections file" >&2; exit 2; }
mkdir -p "$out"
cut_libraries() { # seed sizes → "name skill…" lines
  node -e '
    const fs = require("fs"); let s = Number(process.argv[1]) * 2654435761 % 4294967296;
    const rnd = () => (s = (s * 1664525 + 1013904223) % 4294967296) / 4294967296;
    const all = fs.readdirSync("examples/skills").filter((d) => fs.existsSync(`examples/skills/${d}/SKILL.md`)).sort();
    for (let i = all.length - 1; i > 0; i--) { const j = Math.floor(rnd() * (i + 1)); [all[i], all[j]] = [all[j], all[i]]; }
    let at = 0; process.argv[2].split(",").map(Number).forEach((n, k) => { console.log(`s${process.argv[1]}l${k} ${all.slice(at, at + n).join(" ")}`); at += n; });
  ' "$1" "$2"
}
oneline() { node -e '
  const fs = require("fs"); const f = process.argv[1]; const t = fs.readFileSync(f, "utf8");
  const [, front, body] = t.match(/^---\n([\s\S]*?)\n---\n([\s\S]*)$/);
  const name = front.match(/^name: (.*)$/m)[1]; const desc = front.match(/^description: (.*)$/m)[1];
  const first = desc.split(/(?<=\.) /)[0]; const line = body.split("\n").find((l) => l.trim() !== "").replace(/^#+ */, "");
  fs.writeFileSync(f, `---\nname: ${name}\ndescription: ${first}\n---\n\n${line}\n`);' "$1"; }
split_requests() { # dir skills…: in-fit/in-held/off-fit/off-held JSONL files in dir
  local d=$1; shift
  node -e '
    const fs = require("fs"); const [d, requests, prompts, ...skills] = process.argv.slice(1); const lib = new Set(skills);
    const early = (b) => Number(String(b).replace(/^\D+/, "")) <= 5;
    const out = { "in-fit": [], "in-held": [], "off-fit": [], "off-held": [] };
    for (const l of fs.readFileSync(requests, "utf8").split("\n").filter(Boolean)) {
      const t = JSON.parse(l); const g = t.gold_skill_ids.filter((x) => lib.has(x));
      if (g.length) out[early(t.batch) ? "in-fit" : "in-held"].push(JSON.stringify({ ...t, gold_skill_ids: g }));
    }
    for (const l of fs.readFileSync(prompts, "utf8").split("\n").filter(Boolean)) out[early(JSON.parse(l).batch) ? "off-fit" : "off-held"].push(l);
    for (const [k, v] of Object.entries(out)) if (v.length) fs.writeFileSync(`${d}/${k}.jsonl`, v.join("\n") + "\n");
  ' "$d" "${REQUESTS:-bench/data/short-requests-examples.jsonl}" "${PROMPTS:-bench/data/off-domain-prompts.jsonl}" "$@"
}
libs=()
for shape in ${SHAPES:-tiny oneline 124}; do
  case $shape in
    tiny) for seed in 1 2; do while read -r name skills; do libs+=("tiny-$name|$skills|0|0"); done < <(cut_libraries $seed 3,3,4,4,5,5); done ;;
    oneline) while read -r name skills; do libs+=("oneline-$name|$skills|1|0"); done < <(cut_libraries 3 3,3,4,4,5,5) ;;
    124) while read -r name skills; do libs+=("124-$name|$skills|0|100"); done < <(cut_libraries 1 24) ;;
    24) while read -r name skills; do libs+=("24-$name|$skills|0|0"); done < <(cut_libraries 1 24) ;;
  esac
done
: > "$out/summary.tsv"
for spec in "${libs[@]}"; do
  IFS='|' read -r name skills one extra <<< "$spec"
  d="$out/$name"; rm -rf "$d"; mkdir -p "$d/skills"
  for sk in $skills; do cp -r "examples/skills/$sk" "$d/skills/"; [ "$one" = 1 ] && oneline "$d/skills/$sk/SKILL.md"; done
  split_requests "$d" $skills
  S="$d/skills"
  if [ "$extra" -gt 0 ]; then
    (set +o pipefail; zcat ../shared/data/skills-mit.jsonl.gz | tail -n +7920 | head -n "$extra") | node -e '
      const rl = require("readline").createInterface({ input: process.stdin });
      rl.on("line", (l) => { const d = JSON.parse(l); console.log(JSON.stringify({ id: d.id, name: d.name, description: d.description, body: d.body })); });' > "$d/extra.jsonl"
    S="$S,$d/extra.jsonl"
  fi
  F=$(ls "$d"/{in,off}-*.jsonl | paste -sd,)
  for P in "$@"; do
    tag=$(basename "$P" .gguf)
    npx vite-node scripts/select/small-library.ts -- "$F" --skills "$S" --projections "$P" --quiet ${LIVE:+--live} > "$d/$tag.txt" 2>&1
    grep -P "\tshipped(, live|, live, no library cut)?\t" "$d/$tag.txt" | sed "s|^$d/||; s|\.jsonl||" | awk -v n="$name" -v t="$tag" 'BEGIN{OFS="\t"} {print n, t, $0}' >> "$out/summary.tsv"
  done
  echo "$name: $(echo $skills | wc -w) skills + $extra"
done
