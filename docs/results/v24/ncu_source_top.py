import csv, sys
r=list(csv.reader(open(sys.argv[1])))
h=r[1]; rows=r[2:]
base=int(rows[0][0],16)
st=[i for i,x in enumerate(h) if x.startswith('stall_') and 'Not Issued' not in x]
tot=sum(int(x[2] or 0) for x in rows)
print("total samples", tot)
data=[]
for x in rows:
    off=int(x[0],16)-base; s=int(x[2] or 0)
    reasons=sorted(((int(x[i] or 0),h[i][6:]) for i in st), reverse=True)[:3]
    data.append((off,x[1].strip(),s,int(x[5] or 0),reasons))
top=sorted(data,key=lambda d:-d[2])[:int(sys.argv[2]) if len(sys.argv)>2 else 40]
for off,src,s,ex,rs in sorted(top):
    print(f"{off:6x} {s:6d} {100*s/tot:5.1f}% ex={ex:7d} {src[:60]:60s} {' '.join(f'{n}:{v}' for v,n in rs if v)}")
