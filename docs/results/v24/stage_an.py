#!/usr/bin/env python3
"""EXPERIMENT (v24): per-stage trace: producer acquire/issue vs consumer full, at item boundaries."""
import sys, statistics as st
def q(v, p):
    if not v: return float('nan')
    v = sorted(v); return v[min(len(v) - 1, int(p * len(v)))]
def fmt(v):
    return f"p10 {q(v,.1):7.0f} med {q(v,.5):7.0f} p90 {q(v,.9):7.0f} (n {len(v)})"
for path in sys.argv[1:]:
    L = open(path).read().split('\n')
    h = L[0].split(); tm, tn, grid, n = int(h[1]), int(h[2]), int(h[4]), int(h[6])
    I = {}; B = []; S = {}
    for l in L[1:]:
        f = l.split()
        if not f: continue
        if f[0] == 'I':
            x = [int(v) for v in f[1:]]
            I.setdefault(x[12], []).append(x)
        elif f[0] == 'B': B.append([int(v) for v in f[1:]])
        else:
            b, g, ta, tb, c0, c1 = [int(v) for v in f[1:]]
            S.setdefault(b, {})[g] = (ta, tb, c0, c1)
    if not S: continue
    nst = sum(len(v) for v in S.values())
    print(f"== {path.split('/')[-1]}: tile {tm}x{tn} grid {grid} items {n} stages {nst} ({nst/max(1,len(S)):.0f}/block)")
    b2b = [b[5] for b in B if b[4] or b[5]]; r64 = [b[6] for b in B]; c64 = [b[7] for b in B]
    print(f"   timer: back-to-back {fmt(b2b)}; 64 reads ns {fmt(r64)}; 64 reads clk {fmt(c64)}")
    fill = []; lead = []; land = []; pw0 = []; pws = []; dts = []; slack = []; land_s = []; c1lag = []
    store = []; gap = []
    for blk, its in I.items():
        its.sort(key=lambda x: x[5])
        s = S.get(blk, {})
        c0map = {v[2]: g for g, v in s.items()}
        first = set()
        prev = None
        for it in its:
            tr, nt, bb, be, slot, t0, t1, t2, t3, c1m, c1s, sm, bk = it
            g0 = c0map.get(t1)
            if g0 is None: prev = it; continue
            first.add(g0)
            ta, tb, c0, c1 = s[g0]
            if prev is not None:
                fill.append(t1 - t0); lead.append(t0 - tb); land.append(c0 - tb); pw0.append(tb - ta)
                gap.append(t0 - prev[8])
                c1lag.append(c1 - c0)
            store.append(t3 - t2)
            prev = it
        for g, (ta, tb, c0, c1) in s.items():
            if g in first or g - 1 not in s or g - 1 in first: continue
            pws.append(tb - ta); dts.append(c0 - s[g-1][2]); land_s.append(c0 - tb)
    print(f"   item fill (t1-t0)             {fmt(fill)}")
    print(f"   first stage issued before item start {fmt(lead)}")
    print(f"   first stage issue -> consumer0 full  {fmt(land)}")
    print(f"   producer acquire wait, first stage   {fmt(pw0)}")
    print(f"   consumer1 - consumer0 full, first    {fmt(c1lag)}")
    print(f"   store (t3-t2)                        {fmt(store)}")
    print(f"   prev store end -> next t0            {fmt(gap)}")
    print(f"   steady: stage period (c0)            {fmt(dts)}")
    print(f"   steady: issue -> consumer0 full      {fmt(land_s)}")
    print(f"   steady: producer acquire wait        {fmt(pws)}")
