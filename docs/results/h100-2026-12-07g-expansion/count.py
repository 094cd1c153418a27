import sys
rows=[l.split() for l in open(sys.argv[1]) if not l.startswith('#')]
prev_end=0; n_exp=0; n_copy=0; stall_exp=0
for r in rows:
    i,L=int(r[0]),int(r[1]); s,e,x,c=map(float,r[2:6])
    if s > prev_end + 1e-6:
        if x > 0 and abs(s-x) < 1e-6: n_exp+=1; stall_exp += s-prev_end
        elif abs(s-c) < 1e-6: n_copy+=1
    prev_end=max(prev_end,e)
print(sys.argv[1], "steps waiting on an expansion:", n_exp, "on a copy:", n_copy, "stall on expansions %.3f"%stall_exp)
