#!/usr/bin/env bash
# Plots the grid of bench/results/strategies.md (written by bench/strategies.sh)
# into docs/strategies.png: rows/s against depth for each method, one panel
# per tree count, at the largest batch.  Needs gnuplot (Debian: gnuplot-nox).
set -euo pipefail
cd "$(dirname "$0")/.."
in=bench/results/strategies.md
out=docs/strategies.png
command -v gnuplot >/dev/null || { echo "gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "| depth | trees | batch | XGBoost | TT | PTT | PTT, eight-row walk | GEMM | PTT / walk | auto |"
# rows (or the older ones without auto, or without the walk and auto)
# -> depth xgb tt ptt walk gemm per trees
/usr/bin/python3 - "$in" "$tmp" <<'PY'
import re, sys
src, tmp = sys.argv[1], sys.argv[2]
def rate(cell):
    m = re.match(r'\s*~?([0-9.]+)([kM]?)', cell)
    if not m:
        return None
    v = float(m.group(1))
    return v * {'': 1, 'k': 1e3, 'M': 1e6}[m.group(2)]
rows = {}
batch_max = 0
for line in open(src):
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    if len(cells) not in (7, 9, 10) or not cells[0].isdigit():
        continue
    d, t, b = int(cells[0]), int(cells[1]), int(cells[2])
    batch_max = max(batch_max, b)
    if len(cells) == 7:       # no eight-row walk column: NaN
        cells = cells[:6] + ['nan'] + cells[6:] + ['']
    r = [rate(c) for c in cells[3:8]]
    rows.setdefault((t, b), []).append((d, [v if v is not None else float('nan') for v in r]))
for (t, b), pts in rows.items():
    if b != batch_max:
        continue
    with open('%s/trees%d.dat' % (tmp, t), 'w') as f:
        for d, r in sorted(pts):
            f.write('%d %s\n' % (d, ' '.join('%g' % v for v in r)))
print(batch_max)
PY
batch=$(/usr/bin/python3 -c "
import re;print(max(int(c[2]) for c in ([x.strip() for x in l.strip().strip('|').split('|')] for l in open('$in')) if len(c) in (7, 9, 10) and c[0].isdigit()))")
gnuplot <<GP
set terminal pngcairo size 1200,420 font ",10"
set output "$out"
set multiplot layout 1,3 title "rows/s by depth, batch $batch, one thread (bench/strategies.sh)"
set logscale y
set xlabel "tree depth"
set ylabel "rows/s"
set key top right
set grid
do for [t in "10 100 500"] {
  set title t." trees"
  plot "$tmp/trees".t.".dat" using 1:2 with linespoints title "XGBoost", \
       "" using 1:3 with linespoints title "hbird TT", \
       "" using 1:4 with linespoints title "hbird PTT", \
       "" using 1:5 with linespoints title "hbird PTT, eight-row walk", \
       "" using 1:6 with linespoints title "hbird GEMM"
}
unset multiplot
GP
echo "wrote $out"
