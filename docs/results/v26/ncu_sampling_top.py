import csv, sys
r=list(csv.reader(open(sys.argv[1])))
h=r[1]; rows=r[2:]
base=int(rows[0][0],16)
tot=sum(int(x[2] or 0) for x in rows)
st=[i for i,x in enumerate(h) if x.startswith('stall_') and 'Not Issued' not in x]
print("total samples", tot)
top=sorted(rows,key=lambda x:-int(x[2] or 0))[:int(sys.argv[2]) if len(sys.argv)>2 else 25]
for x in top:
    off=int(x[0],16)-base; s=int(x[2] or 0)
    t=sorted(((h[i][6:],int(x[i] or 0)) for i in st),key=lambda kv:-kv[1])[:2]
    print(f"{off:6x} {s:6d} {100*s/tot:5.1f}% ex{int(x[5] or 0):8d} {x[1][:70]:70} {t}")
