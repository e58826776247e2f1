"""Builds the training texts of the domain score (scripts/lexical/domain-train.py): short texts of
an agent's kind of work against everyday assistant queries, all public, none from the benchmarks.

- in-domain: commit subjects of public software repositories (git mirrors brought by `fetch`), tidied
  (conventional-commit prefixes and trailing "(#123)" cut; merges, reverts, releases and version bumps
  dropped; 4-20 words; case-folded duplicates dropped; at most --per-repo a repository), and sentences
  of public skills' descriptions (skills-mit.jsonl.gz; mostly-Latin descriptions, 4-30 words);
- with --requests, two public sources of requests as people phrase them: nl2bash's English descriptions of
  shell tasks (TellinaTool/nl2bash, data/bash/all.nl, MIT) and Stack Overflow question titles of StaQC
  (LittleYUYU/StackOverflow-Question-Code-Dataset, CC BY 4.0; its SQL title file, the one stored there);
  4-30 words, case-folded duplicates dropped;
- off-domain: the queries of CLINC150 (clinc/oos-eval, data/data_full.json, CC BY 3.0; every split,
  out-of-scope queries included): everyday requests to a voice assistant.

  python3 scripts/lexical/domain-corpus.py OUT.jsonl --mirrors DIR [--per-repo 3000] [--skills PATH] [--requests]
Writes one {"text", "label" (1 in-domain, 0 off), "source"} a line: as many in-domain texts as off-domain,
half commit subjects (sampled across the repositories), half description sentences; with --requests a
quarter each of commit subjects, description sentences, nl2bash descriptions and StaQC titles.
"""
import argparse
import gzip
import json
import os
import pickle
import random
import re
import subprocess

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--mirrors", default="/work/.mirror")
ap.add_argument("--per-repo", type=int, default=3000)
ap.add_argument("--skills", default="../shared/data/skills-mit.jsonl.gz")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--requests", action="store_true")
a = ap.parse_args()
rnd = random.Random(a.seed)

CODE_REPOS = ["pallets+flask", "expressjs+express", "BurntSushi+ripgrep", "jqlang+jq", "psf+requests", "spf13+cobra",
              "axios+axios", "junegunn+fzf", "pypa+pip", "python-pillow+Pillow", "docker+compose", "vitejs+vite",
              "mozilla+pdf.js", "helm+helm"]
DROP = re.compile(r"^(merge|revert|release|bump|prepare|version|v?\d+\.\d+|update changelog|changelog|wip\b|squash|fixup)", re.I)
PREFIX = re.compile(r"^(\[[^\]]*\]\s*)*([a-z]+(\([^)]*\))?!?:\s*)", re.I)


def subjects(repo):
    out = subprocess.run(["git", "-C", f"{a.mirrors}/{repo}/repo", "log", "--no-merges", "--format=%s"], capture_output=True, text=True, check=True).stdout
    seen, keep = set(), []
    for s in out.split("\n"):
        s = PREFIX.sub("", s.strip())
        s = re.sub(r"\s*\(#\d+\)\s*$", "", s).strip()
        if not s or DROP.match(s) or "[skip ci]" in s.lower():
            continue
        n = len(s.split())
        if n < 4 or n > 20:
            continue
        k = s.lower()
        if k in seen:
            continue
        seen.add(k)
        keep.append(s)
    rnd.shuffle(keep)
    return keep[: a.per_repo]


rows = []
for repo in CODE_REPOS:
    if not os.path.isdir(f"{a.mirrors}/{repo}/repo"):
        raise SystemExit(f"missing mirror {repo}: fetch github:{repo.replace('+', '/')} first")
    rows += [{"text": s, "label": 1, "source": f"commits:{repo.replace('+', '/')}"} for s in subjects(repo)]
desc = []
for line in gzip.open(a.skills, "rt"):
    t = json.loads(line).get("description") or ""
    if len(re.findall(r"[A-Za-z]", t)) < 0.7 * max(1, len(t)):
        continue
    for s in re.split(r"(?<=[.!?])\s+", t.strip()):
        if 4 <= len(s.split()) <= 30:
            desc.append(s)
rnd.shuffle(desc)
clinc = json.loads(subprocess.run(["git", "-C", f"{a.mirrors}/clinc+oos-eval/repo", "show", "HEAD:data/data_full.json"], capture_output=True, text=True, check=True).stdout)
off = [{"text": q, "label": 0, "source": "clinc150"} for k in ["train", "val", "test", "oos_train", "oos_val", "oos_test"] for q, _ in clinc[k]]


def git_show(repo, path):
    d = f"{a.mirrors}/{repo}/repo"
    if not os.path.isdir(d):
        raise SystemExit(f"missing mirror {repo}: fetch github:{repo.replace('+', '/')} first")
    return subprocess.run(["git", "-C", d, "show", f"HEAD:{path}"], capture_output=True, check=True).stdout


def tidy(texts):
    seen, keep = set(), []
    for s in texts:
        s = " ".join(s.split())
        if 4 <= len(s.split()) <= 30 and s.lower() not in seen:
            seen.add(s.lower())
            keep.append(s)
    rnd.shuffle(keep)
    return keep


parts = 4 if a.requests else 2
rnd.shuffle(rows)
rows = rows[: len(off) // parts]
n_code = len(rows)
if a.requests:
    bash = tidy(git_show("TellinaTool+nl2bash", "data/bash/all.nl").decode("utf-8", "replace").split("\n"))
    titles = tidy(str(t) for t in pickle.loads(git_show("LittleYUYU+StackOverflow-Question-Code-Dataset",
                  "annotation_tool/data/code_solution_labeled_data/source/sql_how_to_do_it_by_classifier_multiple_qid_to_title.pickle"), encoding="latin1").values())
    rows += [{"text": s, "label": 1, "source": "nl2bash"} for s in bash[: len(off) // parts]]
    rows += [{"text": s, "label": 1, "source": "staqc:sql-titles"} for s in titles[: len(off) // parts]]
# the rest description sentences: as many in-domain texts in all as off-domain
rows += [{"text": s, "label": 1, "source": "skills-mit:description"} for s in desc[: len(off) - len(rows)]]
rows += off
rnd.shuffle(rows)
with open(a.out, "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
count = lambda p: sum(r["source"].startswith(p) for r in rows)
print(f"wrote {len(rows)}: {n_code} commit subjects, {count('skills')} description sentences, {count('nl2bash')} nl2bash descriptions, {count('staqc')} StaQC titles, {len(off)} CLINC150 queries")
