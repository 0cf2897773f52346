#!/usr/bin/env bash
# A/B of two builds in one sitting: the embedded benchmark (a local 3-node cluster per run) of build A, then of
# build B, at each in-flight count, ROUNDS times, A and B swapping places every round so that a drift of the
# machine hits both. Prints each run and, per in-flight count, the median ops/s and p99 of A and B and B's change.
#
#   bench/ab.sh A_DIR B_DIR [INFLIGHTS] [ROUNDS] [-- BENCHMARK ARGS...]
#   bench/ab.sh /work/old . "128 512" 3 -- --duration 30s --warmup 40s
#
# A_DIR and B_DIR are checkouts with their jars built (mvn -q -B -DskipTests package). INFLIGHTS (default
# "512") are the benchmark's --inflight per thread (8 threads: 512 is 4,096 in flight); ROUNDS defaults to 3.
# The benchmark arguments after -- go to every run (default: --duration 30s --warmup 40s). The runs' results
# and logs stay in the temporary directory the first line names.
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
a=$(cd "$1" && pwd); b=$(cd "$2" && pwd); shift 2
inflights=512; rounds=3
if [ $# -gt 0 ] && [ "$1" != -- ]; then inflights=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != -- ]; then rounds=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = -- ] && shift
extra=("$@")
[ ${#extra[@]} -gt 0 ] || extra=(--duration 30s --warmup 40s)
for d in "$a" "$b"; do
  [ -f "$d/kv-benchmark/target/kv-benchmark.jar" ] || { echo "ab: no $d/kv-benchmark/target/kv-benchmark.jar: build it first" >&2; exit 2; }
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "ab: ROUNDS must be a positive number, not '$rounds'" >&2; exit 2; }

out=$(mktemp -d /tmp/kv-ab.XXXXXX)
echo "ab: A=$a ($(git -C "$a" rev-parse --short HEAD 2>/dev/null || echo ?)), B=$b ($(git -C "$b" rev-parse --short HEAD 2>/dev/null || echo ?)$(git -C "$b" diff --quiet 2>/dev/null || echo ' + changes')); inflight $inflights; $rounds rounds; ${extra[*]}; results in $out"

run() { # run SIDE DIR INFLIGHT ROUND
  local dir="$out/$1-$3-$4"
  (cd "$2" && java -jar kv-benchmark/target/kv-benchmark.jar --inflight "$3" --out "$dir" "${extra[@]}" > "$dir.log" 2>&1) \
    || { echo "ab: run $1 inflight $3 round $4 failed; its output: $dir.log" >&2; tail -5 "$dir.log" >&2; exit 1; }
  python3 - "$dir" "$1" "$3" "$4" <<'EOF'
import json, glob, sys
d, side, inflight, rnd = sys.argv[1:]
r = json.load(open(glob.glob(d + "/*.json")[0]))
t = r["ops"]["total"]
print(f"{side} inflight {inflight} round {rnd}: {t['opsPerSec']:.0f} ops/s, p50 {t['p50']} ms, p99 {t['p99']} ms, errors {r['errorCount']}")
EOF
}

for round in $(seq 1 "$rounds"); do
  for n in $inflights; do
    if [ $((round % 2)) -eq 1 ]; then run A "$a" "$n" "$round"; run B "$b" "$n" "$round"
    else run B "$b" "$n" "$round"; run A "$a" "$n" "$round"; fi
  done
done | tee "$out/runs.txt"

python3 - "$out/runs.txt" <<'EOF'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"(A|B) inflight (\d+) round \d+: (\d+) ops/s, p50 \S+ ms, p99 (\S+) ms", line)
    if m:
        runs.setdefault((int(m[2]), m[1]), []).append((float(m[3]), float(m[4])))
for n in sorted({k[0] for k in runs}):
    a, b = runs.get((n, "A"), []), runs.get((n, "B"), [])
    if not a or not b:
        continue
    ao, bo = statistics.median(x[0] for x in a), statistics.median(x[0] for x in b)
    ap, bp = statistics.median(x[1] for x in a), statistics.median(x[1] for x in b)
    print(f"inflight {n}: A {ao:.0f} ops/s p99 {ap:.1f} ms | B {bo:.0f} ops/s p99 {bp:.1f} ms | B/A ops {bo / ao:.3f}, p99 {bp / ap:.3f} (medians of {len(a)})")
EOF
