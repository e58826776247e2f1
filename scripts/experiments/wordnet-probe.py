"""WordNet synonyms added to a request, BM25 over the example skills (a probe on development data; not shipped).

A request as people phrase it often lacks the words its skill uses ("pictures" for images, "shrink"
for resize). Each request word (by default only words no skill holds; --expandMatched-style rows
expand every word) brings the single-word lemmas of its first `senses` WordNet synsets, and with
`hyper` their direct hypernyms, at weight lambda (the request's own words weigh their count); BM25 at
the lexical expert's k1 3, b 1, over the skills' name, description and body as src/lexical/postings.ts
tokenizes them. Prints right first picks per request file for a small grid, the first row without
expansion.

Needs Debian's wordnet-base (WordNet 3.0, /usr/share/wordnet): apt-get install wordnet-base.

  python3 scripts/experiments/wordnet-probe.py REQUESTS.jsonl|REQUESTS.json ...
"""
import json, re, math, os, sys, glob
from collections import Counter, defaultdict
TOK = re.compile(r'[^\W_]+', re.U)
def toks(t): return TOK.findall(t.lower())
# skills
skills = {}
for p in sorted(glob.glob('/work/main/examples/skills/*/SKILL.md')):
    t = open(p).read()
    m = re.match(r'---\n(.*?)\n---\n(.*)', t, re.S)
    fm, body = m.group(1), m.group(2)
    name = re.search(r'^name:\s*(.*)$', fm, re.M).group(1).strip()
    desc = re.search(r'^description:\s*(.*)$', fm, re.M).group(1).strip()
    skills[name] = toks(f"{name}\n{desc}\n{body}")
names = list(skills)
N = len(names)
df = Counter(); 
for n in names: df.update(set(skills[n]))
tf = {n: Counter(skills[n]) for n in names}
avg = sum(len(skills[n]) for n in names)/N
def idf(w): return math.log(1 + (N - df[w] + .5)/(df[w] + .5))
def bm25(qw, k1=3.0, b=1.0):
    sc = {}
    for n in names:
        L = len(skills[n]); s = 0.0
        for w, wt in qw.items():
            f = tf[n].get(w, 0)
            if f: s += wt * idf(w) * f*(k1+1)/(f + k1*(1-b+b*L/avg))
        sc[n] = s
    return sc
# wordnet
WN = '/usr/share/wordnet'
index = {}  # (lemma,pos) -> [synset offsets]
for pos in ['noun','verb','adj','adv']:
    for line in open(f'{WN}/index.{pos}', encoding='latin-1'):
        if line.startswith(' '): continue
        f = line.split()
        lemma, p, sc, pc = f[0], f[1], int(f[2]), int(f[3])
        offs = f[4+pc+2:]
        index[(lemma, pos)] = offs
synw = {}
def synset_words(pos, off):
    key=(pos,off)
    if key in synw: return synw[key]
    with open(f'{WN}/data.{pos}', encoding='latin-1') as fh:
        fh.seek(int(off)); line = fh.readline()
    f = line.split(); wc = int(f[3], 16)
    ws = [f[4+2*i].lower() for i in range(wc)]
    # hypernyms
    pcnt_i = 4+2*wc; pc = int(f[pcnt_i]); hyp=[]
    for j in range(pc):
        sym, o, ps = f[pcnt_i+1+4*j], f[pcnt_i+2+4*j], f[pcnt_i+3+4*j]
        if sym in ('@','@i'): hyp.append(({'n':'noun','v':'verb','a':'adj','s':'adj','r':'adv'}[ps], o))
    synw[key]=(ws,hyp); return synw[key]
exc = {}
for pos in ['noun','verb','adj','adv']:
    for line in open(f'{WN}/{pos}.exc', encoding='latin-1'):
        a = line.split(); exc[(a[0],pos)] = a[1]
SUF = {'noun':[('s',''),('ses','s'),('xes','x'),('ches','ch'),('shes','sh'),('ies','y')],'verb':[('s',''),('ies','y'),('es','e'),('es',''),('ed','e'),('ed',''),('ing','e'),('ing','')],'adj':[('er',''),('est',''),('er','e'),('est','e')],'adv':[]}
def lemmas(w, pos):
    out=[]
    if (w,pos) in exc: out.append(exc[(w,pos)])
    if (w,pos) in index: out.append(w)
    for a,b in SUF[pos]:
        if w.endswith(a) and (w[:-len(a)]+b, pos) in index: out.append(w[:-len(a)]+b)
    return out
def expand(w, senses, hyper):
    out=set()
    for pos in ['noun','verb','adj','adv']:
        for l in lemmas(w,pos):
            for off in index.get((l,pos),[])[:senses]:
                ws,hyp = synset_words(pos, off)
                out.update(x for x in ws if '_' not in x)
                if hyper:
                    for hp,ho in hyp:
                        out.update(x for x in synset_words(hp,ho)[0] if '_' not in x)
    out.discard(w)
    return out
def query(text, lam, senses, hyper):
    q = Counter(toks(text))
    qw = {w: float(c) for w,c in q.items()}
    if lam>0:
        for w in list(q):
            if df[w] > 0 and not EXPAND_MATCHED: continue
            for x in expand(w, senses, hyper):
                if x not in qw or qw[x] < lam: qw[x] = max(qw.get(x,0), lam) if x not in q else qw[x]
    return qw
EXPAND_MATCHED = False
def load(path):
    rows=[]
    if path.endswith('.json'):
        for r in json.load(open(path)): rows.append((r['task'], r['expected']))
    else:
        for l in open(path):
            r=json.loads(l); rows.append((r['text'], (r.get('gold_skill_ids') or [None])[0]))
    return [r for r in rows if r[1]]
def hit(rows, lam, senses, hyper):
    h=0
    for t,g in rows:
        sc=bm25(query(t,lam,senses,hyper)); best=max(names,key=lambda n:(sc[n],))
        h += best==g
    return h
sets = {a: load(a) for a in sys.argv[1:]}
for em in [False, True]:
    EXPAND_MATCHED = em
    for senses,hyper in [(1,False),(2,False),(1,True),(3,False)]:
        for lam in [0,0.1,0.25,0.5]:
            if lam==0 and (senses,hyper,em)!=(1,False,False): continue
            print(f"expandMatched={em} senses={senses} hyper={hyper} lam={lam}", *[f"{os.path.basename(k)}:{hit(v,lam,senses,hyper)}/{len(v)}" for k,v in sets.items()], flush=True)
