import csv, sys
r=list(csv.reader(open(sys.argv[1])))
h=r[1]; rows=r[2:]
base=int(rows[0][0],16)
st=[i for i,x in enumerate(h) if x.startswith('stall_') and 'Not Issued' not in x]
tot=sum(int(x[2] or 0) for x in rows)
# contiguous runs of executed instructions with the same execution count class -> print buckets of 0x200
B=int(sys.argv[2],16) if len(sys.argv)>2 else 0x200
agg={}
for x in rows:
    off=int(x[0],16)-base; s=int(x[2] or 0)
    b=off//B*B
    a=agg.setdefault(b,[0,0,{}, 0])
    a[0]+=s; a[1]=max(a[1],int(x[5] or 0)); a[3]+=int(x[5] or 0)
    for i in st:
        v=int(x[i] or 0)
        if v: a[2][h[i][6:]]=a[2].get(h[i][6:],0)+v
for b in sorted(agg):
    s,mx,rs,ins=agg[b]
    if s==0 and ins==0: continue
    top=sorted(rs.items(),key=lambda kv:-kv[1])[:4]
    print(f"{b:6x} samples {s:6d} {100*s/tot:5.1f}% maxexec {mx:7d} instrs_exec {ins:9d}  {' '.join(f'{k}:{v}' for k,v in top)}")
