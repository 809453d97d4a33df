# Discrete-event model of one SM's ring: producer, R slots, two consumer warpgroups, shared tensor pipe.
import random, heapq, sys
def run(masks, bytes_of, R, L=1.1, BW=80.0, TG=0.28, lag=1, per_stage_owner=False):
    # masks[s]: set of consumers using stage s. bytes_of(mask) -> KB.
    n=len(masks)
    free=[0.0]*R          # time each slot becomes free
    land=[0.0]*n
    link=0.0              # L2->SM link busy until
    issue_t=0.0
    # consumer state
    rel=[dict() for _ in range(n)]  # releases per stage
    # we iterate producer and consumers jointly: simple fixed-point passes
    need=[set(m) if per_stage_owner else {0,1} for m in masks]  # who must release slot
    release=[None]*n
    tensor=0.0
    # simulate consumers in time order via iterative approach: compute stage by stage, alternating.
    # Because release depends on consumers and issue depends on release, do event loop.
    pos=[0,0]; t=[0.0,0.0]; pending=[None,None]  # pending wgmma completion (stage, done time)
    rel_times=[dict() for _ in range(n)]
    issued=0
    def slot_free_time(s):
        if s<R: return 0.0
        p=s-R
        if len(rel_times[p])<len(need[p]): return None
        return max(rel_times[p].values())
    land=[None]*n
    prod_t=0.0
    while pos[0]<n or pos[1]<n:
        # producer issues as far as possible
        while issued<n:
            f=slot_free_time(issued)
            if f is None: break
            it=max(prod_t,f)+0.02
            b=bytes_of(masks[issued])
            st=max(it+L- b/BW, link)  # transfer start
            link=st+b/BW
            land[issued]=link
            prod_t=it; issued+=1
        # pick consumer with smaller time that can progress
        best=None
        for c in (0,1):
            if pos[c]>=n: continue
            s=pos[c]
            if land[s] is None: continue
            if best is None or max(t[c],land[s])<max(t[best],land[pos[best]]): best=c
        if best is None: raise Exception('deadlock')
        c=best; s=pos[c]; now=max(t[c],land[s])
        if c in masks[s]:
            start=max(now,tensor); done=start+TG; tensor=done
            # wait_group lag: wait for previous pending
            if lag==1:
                if pending[c]:
                    ps,pd=pending[c]; now=max(now,pd); rel_times[ps][c]=now
                pending[c]=(s,done)
            else:
                now=done; rel_times[s][c]=now
        else:
            if pending[c]:
                ps,pd=pending[c]; now=max(now,pd); rel_times[ps][c]=now; pending[c]=None
            if c in need[s]: rel_times[s][c]=now
        t[c]=now; pos[c]+=1
    for c in (0,1):
        if pending[c]: t[c]=max(t[c],pending[c][1])
    useful=sum(len(m) for m in masks)*TG
    return useful/max(t)

random.seed(1)
N=4000
def mk(p_both,p_one):
    out=[]
    for _ in range(N):
        r=random.random()
        if r<p_both: out.append({0,1})
        elif r<p_both+p_one: out.append({random.randint(0,1)})
        else: out.append({0,1})
    return out
full=[{0,1}]*N
kb=lambda m: 16+16*len(m)
for L in (0.8,1.1,1.4):
  for BW in (70,90,120):
    print(f"L={L} BW={BW}: spmm128 dense-like R4 {run(full,kb,4,L,BW):.2f}  spgemm split R4 {run(mk(1/3,2/3),kb,4,L,BW):.2f}")
