import sys, glob, statistics as st
for path in sorted(sys.argv[1:]):
    L=open(path).read().split('\n'); h=L[0].split(); tm,tn,grid,n=int(h[1]),int(h[2]),int(h[4]),int(h[6])
    I=[];B=[]
    for l in L[1:]:
        f=l.split()
        if not f: continue
        (I if f[0]=='I' else B).append([int(x) for x in f[1:]])
    if not I or not B or not any(b[1] for b in B): continue
    T0=min(b[1] for b in B if b[1]); Tend=max(max(b[2],b[3]) for b in B); E=Tend-T0
    ends=sorted(max(b[2],b[3])-T0 for b in B)
    print(f"{path.split('/')[-1]} tile {tm}x{tn} grid {grid} items {n} elapsed {E/1e3:.1f}us block ends min {ends[0]/1e3:.1f} med {ends[len(ends)//2]/1e3:.1f} max {ends[-1]/1e3:.1f}")
    cls={}
    for it in I:
        tr,nt,bb,be,slot,t0,t1,t2,t3=it[:9]
        ln=be-bb
        k='1-4' if ln<=4 else ('5-31' if ln<32 else '32+')
        c=cls.setdefault(k,[])
        c.append((ln,t1-t0,t2-t1,t3-t2,t0-T0))
    for k in ('1-4','5-31','32+'):
        c=cls.get(k)
        if not c: continue
        stages=sum(x[0] for x in c)
        busy=sum(x[1]+x[2]+x[3] for x in c)
        print(f"  len {k:>5}: items {len(c):5d} pos {stages:6d} | per item fill {st.mean(x[1] for x in c)/1e3:.2f} main {st.mean(x[2] for x in c)/1e3:.2f} store {st.mean(x[3] for x in c)/1e3:.2f} us | main/pos {sum(x[2] for x in c)/stages:.0f} ns | share of busy {100*busy/(grid*E):.1f}% | start med {st.median(x[4] for x in c)/1e3:.1f}us")
