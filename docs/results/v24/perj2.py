#!/usr/bin/env python3
"""EXPERIMENT (v24): per stage-in-item medians of the 8-word stage trace."""
import sys
def q(v,p):
    v=sorted(v); return v[min(len(v)-1,int(p*len(v)))] if v else float('nan')
for path in sys.argv[1:]:
    L=open(path).read().split('\n')
    h=L[0].split()
    I={};S={}
    for l in L[1:]:
        f=l.split()
        if not f: continue
        if f[0]=='I':
            x=[int(v) for v in f[1:]]; I.setdefault(x[12],[]).append(x)
        elif f[0]=='S':
            b,g,ta,tb,te,c0a,c0f,c1a,c1f=[int(v) for v in f[1:]]; S.setdefault(b,{})[g]=(ta,tb,te,c0a,c0f,c1a,c1f)
    if not S: continue
    per={}; fills=[]; stores=[]
    for blk,its in I.items():
        its.sort(key=lambda x:x[5]); s=S.get(blk,{}); c0map={v[4]:g for g,v in s.items()}
        starts=[c0map.get(it[6]) for it in its]
        for k,it in enumerate(its):
            stores.append(it[8]-it[7])
            if k==0 or k+1>=len(its): continue
            g0,g1=starts[k],starts[k+1]
            if g0 is None or g1 is None: continue
            fills.append(it[6]-it[5])
            n=g1-g0
            for j in range(-1,n):
                g=g0+j
                if g not in s: continue
                ta,tb,te,c0a,c0f,c1a,c1f=s[g]
                key=j if j<4 else (('mid') if j<n-2 else f'end{j-n}')
                d=per.setdefault(key,{k2:[] for k2 in ('pw','iss','w0','land0','w1','lead')})
                d['pw'].append(tb-ta); d['iss'].append(te-tb); d['w0'].append(c0f-c0a); d['w1'].append(c1f-c1a)
                if c0f-c0a>64: d['land0'].append(c0f-te)
                d['lead'].append(c0a-te)
    print(f"== {path.split('/')[-1]} {' '.join(h)}; fill med {q(fills,.5)} store med {q(stores,.5)}")
    print("  j     prod-acq-wait  issue-dur  c0-wait(med,p90,share>64)  c1-wait  c0-arrive-after-issue  landed-after-issue(when waited)")
    order=[-1,0,1,2,3,'mid','end-2','end-1']
    for j in order:
        if j not in per: continue
        d=per[j]; w=d['w0']; sh=sum(1 for x in w if x>64)/max(1,len(w))
        print(f"  {str(j):6s} {q(d['pw'],.5):8.0f} {q(d['iss'],.5):9.0f}   {q(w,.5):6.0f} {q(w,.9):6.0f} {sh:5.2f}   {q(d['w1'],.5):7.0f}   {q(d['lead'],.5):8.0f}   {q(d['land0'],.5):8.0f} (n {len(d['land0'])})")
