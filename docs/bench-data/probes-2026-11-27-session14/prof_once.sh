#!/bin/bash
# $1: repo dir. The profiled 450k replay once; prints simulate and process CPU s.
cd $1 && /usr/bin/time -f "%U %S" -o /tmp/s14/time.txt /work/main/.venv/bin/python -m sim.cli replay /tmp/s14/speed/lublin450k-recorded.swf --no-progress --out /tmp/s14/x.csv --timings /tmp/s14/t.json >/dev/null 2>/tmp/s14/err.txt
python3 -c "
import json; t=json.load(open('/tmp/s14/t.json')); u,s=open('/tmp/s14/time.txt').read().split()
print('$1', 'simulate cpu %.2f'%t['phases']['simulate']['cpu_s'], 'process cpu %.2f'%(float(u)+float(s)))"
