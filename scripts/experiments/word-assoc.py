"""Query expansion by word associations learned from public skills (an experiment; not shipped).

Document co-occurrence over the public skills (each skill's name, description and body as one bag of
the lexical expert's words, bm25Tokens: runs of letters and digits, lower-cased). For a request word
w with df(w) >= 5, its m best words v (df(v) in [5, N/10], v not in the request) by normalised PMI
over documents; the request becomes its own words (weight: their count) plus each such v with weight
lambda * npmi(w, v) (the largest over the request words reaching it). Scored by BM25 (k1 3, b 1,
Lucene's idf) over the library with weighted query terms, as src/lexical/postings.ts scores.

  python3 scripts/experiments/word-assoc.py small REQUESTS[,MORE] [--grid 3,5,10:0.1,0.25,0.5] [--skills examples/skills]
  python3 scripts/experiments/word-assoc.py swe --split val|test [--grid ...]

`small`: right first picks per request file over a folder of skills; `swe`: Hit@1 / R@20 of
SWE-Skills-Bench tasks (batches 1-5 or 6-10) over its 49 golds and the public skills.
"""
import gzip, json, math, os, re, sys
from collections import Counter

import numpy as np
import scipy.sparse as sp

WORD = re.compile(r"[^\W_]+", re.UNICODE)
# neighbours' least document frequency and co-occurrences: 5 and 3, or with --strict 30 and 10
STRICT = "--strict" in sys.argv
MIN_DF, MIN_CO = (30, 10) if STRICT else (5, 3)
SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data")


def words(text):
    return WORD.findall(text.lower())


def skill_text(d):
    return f"{d.get('name', '')}\n{d.get('description', '')}\n{d.get('body', '') or ''}"


def load_public():
    out = []
    with gzip.open(os.path.join(SHARED, "skills-mit.jsonl.gz"), "rt") as f:
        for line in f:
            d = json.loads(line)
            out.append(d)
    return out


class Assoc:
    """Binary document-word matrix of the public skills and the npmi neighbours of a word."""

    def __init__(self, docs):
        vocab, rows, cols = {}, [], []
        for i, d in enumerate(docs):
            for w in set(words(skill_text(d))):
                j = vocab.setdefault(w, len(vocab))
                rows.append(i)
                cols.append(j)
        self.vocab = vocab
        self.inv = {j: w for w, j in vocab.items()}
        self.N = len(docs)
        X = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(self.N, len(vocab)))
        self.Xc = X.tocsc()
        self.X = X
        self.df = np.asarray(X.sum(axis=0)).ravel()
        # --strict: neighbours alphabetic, of 3 or more letters
        self.alpha = np.array([STRICT is False or (len(self.inv[j]) >= 3 and self.inv[j].isalpha()) for j in range(len(vocab))])
        self.cache = {}

    def neighbours(self, w, m):
        j = self.vocab.get(w)
        if j is None or self.df[j] < 5:
            return []
        if w not in self.cache:
            docs = self.Xc[:, j].indices
            co = np.asarray(self.X[docs].sum(axis=0)).ravel()
            N = self.N
            ok = (self.df >= MIN_DF) & (self.df <= N / 10) & (co > 0) & self.alpha
            ok[j] = False
            idx = np.nonzero(ok)[0]
            pwv = co[idx] / N
            pw = self.df[j] / N
            pv = self.df[idx] / N
            npmi = np.log(pwv / (pw * pv)) / -np.log(pwv)
            # a pair seen in a single document says little: ask for 3
            npmi[co[idx] < MIN_CO] = -1
            order = np.argsort(-npmi)[:50]
            self.cache[w] = [(self.inv[idx[k]], float(npmi[k])) for k in order if npmi[k] > 0]
        return self.cache[w][:m]

    def expand(self, text, m, lam):
        q = Counter(words(text))
        if m == 0 or lam == 0:
            return dict(q)
        extra = {}
        for w in q:
            for v, s in self.neighbours(w, m):
                if v in q:
                    continue
                extra[v] = max(extra.get(v, 0.0), lam * s)
        out = dict(q)
        out.update(extra)
        return out


class Bm25:
    def __init__(self, docs, k1=3.0, b=1.0):
        self.ids = [d["id"] for d in docs]
        self.tf = [Counter(words(skill_text(d))) for d in docs]
        self.len = np.array([sum(t.values()) for t in self.tf], dtype=np.float64)
        self.avg = self.len.mean()
        self.k1, self.b = k1, b
        self.post = {}
        for i, t in enumerate(self.tf):
            for w, c in t.items():
                self.post.setdefault(w, []).append((i, c))
        self.N = len(docs)

    def scores(self, q):
        s = np.zeros(self.N)
        norm = self.k1 * (1 - self.b + self.b * self.len / self.avg)
        for w, qw in q.items():
            p = self.post.get(w)
            if not p:
                continue
            idf = math.log(1 + (self.N - len(p) + 0.5) / (len(p) + 0.5))
            ii = np.fromiter((i for i, _ in p), dtype=np.int64, count=len(p))
            tf = np.fromiter((c for _, c in p), dtype=np.float64, count=len(p))
            s[ii] += qw * idf * tf * (self.k1 + 1) / (tf + norm[ii])
        return s


def read_requests(path):
    if path.endswith(".jsonl"):
        out = []
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                out.append((r["text"], (r.get("gold_skill_ids") or [None])[0]))
        return out
    return [(r["task"], r["expected"]) for r in json.load(open(path))]


def load_folder(folder):
    out = []
    for name in sorted(os.listdir(folder)):
        p = os.path.join(folder, name, "SKILL.md")
        if not os.path.exists(p):
            continue
        text = open(p).read()
        m = re.match(r"---\n(.*?)\n---\n(.*)", text, re.S)
        fm, body = m.group(1), m.group(2)
        meta = dict(re.findall(r"^(\w+):\s*(.*)$", fm, re.M))
        out.append({"id": name, "name": meta.get("name", name), "description": meta.get("description", ""), "body": body})
    return out


def grid_of(arg):
    ms, ls = arg.split(":")
    return [(0, 0.0)] + [(int(m), float(l)) for m in ms.split(",") for l in ls.split(",")]


def main():
    args = sys.argv[1:]
    opt = lambda n, d: args[args.index(n) + 1] if n in args else d
    grid = grid_of(opt("--grid", "3,5,10:0.1,0.25,0.5"))
    assoc = Assoc(load_public())
    print(f"{assoc.N} public skills, {len(assoc.vocab)} words", flush=True)
    if args[0] == "small":
        lib = load_folder(opt("--skills", "examples/skills"))
        bm = Bm25(lib)
        files = args[1].split(",")
        print("m\tlambda\t" + "\t".join(os.path.basename(os.path.dirname(f)) + "/" + os.path.basename(f) for f in files) + "\ttotal")
        for m, lam in grid:
            row, tot = [], 0
            for f in files:
                right = 0
                for text, gold in read_requests(f):
                    if gold is None:
                        continue
                    s = bm.scores(assoc.expand(text, m, lam))
                    right += bm.ids[int(np.argmax(s))] == gold
                row.append(right)
                tot += right
            print(f"{m}\t{lam}\t" + "\t".join(map(str, row)) + f"\t{tot}", flush=True)
        if "--show" in args:
            m, lam = grid_of(opt("--show", "5:0.25"))[1]
            for f in files:
                for text, gold in read_requests(f)[:200]:
                    q = assoc.expand(text, m, lam)
                    added = sorted(((v, round(w, 2)) for v, w in q.items() if w < 1 and v not in words(text)), key=lambda x: -x[1])
                    print(text[:70], "→", added[:12])
    else:
        split = opt("--split", "val")
        batches = range(1, 6) if split == "val" else range(6, 11)
        golds = [json.loads(l) for l in open(os.path.join(SHARED, "swe-skills-bench", "skills.jsonl"))]
        lib = golds + load_public()
        bm = Bm25(lib)
        tasks = [json.loads(l) for l in open(os.path.join(SHARED, "swe-skills-bench", "tasks.jsonl"))]
        tasks = [t for t in tasks if int(re.match(r"batch(\d+)/", t["id"]).group(1)) in batches]
        gold_of = lambda t: (t.get("gold_skill_ids") or [None])[0]
        ids = {i: k for k, i in enumerate(bm.ids)}
        tasks = [t for t in tasks if gold_of(t) in ids]
        print(f"{len(tasks)} tasks ({split}), {bm.N} skills")
        print("m\tlambda\tHit@1\tR@20")
        for m, lam in grid:
            h1 = r20 = 0
            for t in tasks:
                s = bm.scores(assoc.expand(t["text"], m, lam))
                g = ids[gold_of(t)]
                rank = int((s > s[g]).sum())
                h1 += rank == 0
                r20 += rank < 20
            print(f"{m}\t{lam}\t{h1 / len(tasks):.3f}\t{r20 / len(tasks):.3f}", flush=True)


if __name__ == "__main__":
    main()
