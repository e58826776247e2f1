# Right / declined / wrong per request file from route-prompts.bench.ts picks (names; those holding ", " rejoined
# from the library names). Run from the repository root with ../shared present: python3 THIS [FILE.json] (FILE: print its picks).
import gzip, json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
names=set()
for l in gzip.open('../shared/data/skills-mit.jsonl.gz','rt'):
    n=json.loads(l).get('name') or ''
    if ', ' in n: names.add(n)
for l in open('../shared/data/swe-skills-bench/skills.jsonl'):
    n=json.loads(l).get('name') or ''
    if ', ' in n: names.add(n)
def split(s):
    segs=s.split(', '); out=[]; i=0
    while i<len(segs):
        best=None
        for n in names:
            k=n.count(', ')+1
            if ', '.join(segs[i:i+k])==n and (best is None or k>best): best=k
        k=best or 1
        out.append(', '.join(segs[i:i+k])); i+=k
    return out
files=['a-said-1.json','b-said-2.json','c-restated-1.json','d-restated-2.json','e-prompts-2.json']
exp=[]
for f in files:
    for t in json.load(open(os.path.join(HERE, 'prompts', f))): exp.append((f,t['expected']))
res={}
for fn in ['prompts-extra.txt','prompts-extra-abstain-off.txt']:
    picks=[l for l in open(os.path.join(HERE, fn)).read().split('\n') if l.strip().startswith('picks:')]
    labels=['hook (verdict off)','full route'] if fn=='prompts-extra.txt' else ['hook (verdict off)','full route (again)','full route, abstention off']
    for label,p in zip(labels,picks):
        ps=split(p.strip()[len('picks: '):])
        assert len(ps)==len(exp),(fn,label,len(ps))
        if fn=='prompts-extra-abstain-off.txt' and label!='full route, abstention off': continue
        if label=='full route' and len(sys.argv)>1:
            for (f,e),pk in zip(exp,ps):
                if f==sys.argv[1]: print(f'{e} -> {pk}')
        for (f,e),pk in zip(exp,ps):
            c=res.setdefault((label,f),[0,0,0])
            if pk=='(declined)': c[1]+=1
            elif e is not None and pk==e: c[0]+=1
            else: c[2]+=1
print('| set | method | right | declined | wrong (prompts: loading a skill) |')
print('| --- | --- | --- | --- | --- |')
for (label,f),c in sorted(res.items(),key=lambda x:(x[0][1],x[0][0])):
    print(f'| {f} | {label} | {c[0]} | {c[1]} | {c[2]} |')
