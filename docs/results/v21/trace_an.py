#!/usr/bin/env python3
"""Summarize trace_*.txt (experiment): where each SM's time goes over one persistent launch."""
import sys, glob, statistics as st
def ana(path):
    L = open(path).read().split('\n')
    h = L[0].split(); tm, tn, grid, n = int(h[1]), int(h[2]), int(h[4]), int(h[6])
    I = []; B = []
    for l in L[1:]:
        f = l.split()
        if not f: continue
        if f[0] == 'I': I.append([int(x) for x in f[1:]])
        else: B.append([int(x) for x in f[1:]])
    if not I: return None
    T0 = min(b[1] for b in B if b[1]); 
    ends = [max(b[2], b[3]) for b in B]
    Tend = max(ends)
    E = Tend - T0
    per = {}
    for it in I:
        tr, nt, bb, be, slot, t0, t1, t2, t3, c1m, c1s, sm, blk = it
        per.setdefault(blk, []).append(it)
    start = fill = main = store = tail = c1lag = 0.0
    n_items = 0
    for b in B:
        blk, s, e0, e1, sm = b
        its = sorted(per.get(blk, []), key=lambda x: x[5])
        start += s - T0
        tail += Tend - max(e0, e1)
        for it in its:
            fill += it[6] - it[5]; main += it[7] - it[6]; store += it[8] - it[7]
            c1lag += it[10] - it[8]
            n_items += 1
    g = len(B)
    fr = lambda x: x / g / E
    # gaps between consecutive items of a block (c0 store end -> next t0) are ~0 by construction
    lens = [it[3]-it[2] for it in I]
    out = (f"{path.split('/')[-1]} tile {tm}x{tn} grid {grid} items {n} blocks/item mean {st.mean(lens):.1f} max {max(lens)}: "
           f"elapsed {E/1e3:.1f} us | start {100*fr(start):.1f}% fill {100*fr(fill):.1f}% main {100*fr(main):.1f}% store {100*fr(store):.1f}% "
           f"tail {100*fr(tail):.1f}% | c1 lag/item {c1lag/max(n_items,1)/1e3:.2f} us, store/item {store/max(n_items,1)/1e3:.2f} us, fill/item {fill/max(n_items,1)/1e3:.2f} us, items/block {n_items/g:.1f}")
    return out
for p in sorted(sys.argv[1:] or glob.glob('trace_*.txt')):
    r = ana(p)
    if r: print(r)
