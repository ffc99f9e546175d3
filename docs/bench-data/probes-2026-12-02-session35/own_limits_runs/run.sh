#!/bin/bash
tag=$1; dir=$2
cd $dir
for k in "own 7,8,9,10,11,12,13,14" "outages 7,8,9,10" "limits 7,8,9,10"; do
  PYTHONPATH=. /work/main/.venv/bin/python known_truth.py (a copy in /tmp/p35) $k --load /tmp/p35/ho_traces >> /tmp/p35/ho/known_$tag.txt 2>&1
done
/work/main/.venv/bin/python bench/unseen_sites.py --sites 16 --first 768 > /tmp/p35/ho/grid_$tag.txt 2>&1
/work/main/.venv/bin/python bench/unseen_sites.py --sites 32 --first 784 --off-grid > /tmp/p35/ho/offgrid_$tag.txt 2>&1
date -u +%T > /tmp/p35/ho/done_$tag
