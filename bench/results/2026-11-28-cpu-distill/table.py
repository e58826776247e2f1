import json,sys,random
def rd(p):
    return {r['id']:r for r in (json.loads(l) for l in __import__('gzip').open(p+'.gz','rt') if l.strip())}
for split in ('1-5','6-10'):
    try:
        a=rd(f'./distill-{split}.jsonl'); b=rd(f'./l7full-{split}.jsonl')
    except FileNotFoundError: continue
    ids=sorted(set(a)&set(b))
    def m(r,k):
        g=[c['skill'] for c in (r.get('glance') or [])][:k]; return 1 if any(x in r['accepted'] for x in g) else 0
    def bm(r,k):
        g=(r.get('bm25') or [])[:k]; return 1 if any(x in r['accepted'] for x in g) else 0
    n=len(ids)
    for name,recs in (('distill',a),('l7-full',b)):
        print(split,name,n,'glance Hit@1 %.3f R@5 %.3f R@20 %.3f'%tuple(sum(m(recs[i],k) for i in ids)/n for k in (1,5,20)))
    print(split,'bm25',n,'Hit@1 %.3f R@20 %.3f'%tuple(sum(bm(a[i],k) for i in ids)/n for k in (1,20)))
    d=[m(a[i],1)-m(b[i],1) for i in ids]; d20=[m(a[i],20)-m(b[i],20) for i in ids]
    random.seed(1); bs=sorted(sum(random.choice(d) for _ in d)/n for _ in range(10000)); bs20=sorted(sum(random.choice(d20) for _ in d20)/n for _ in range(10000))
    print(split,'delta Hit@1 %+.3f [%+.3f, %+.3f]  delta R@20 %+.3f [%+.3f, %+.3f]'%(sum(d)/n,bs[250],bs[9749],sum(d20)/n,bs20[250],bs20[9749]))
