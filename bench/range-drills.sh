#!/usr/bin/env bash
# Range drills of issue #19 on a real 3-node cluster (engine memory or rocksdb) in a temp dir on free
# loopback ports, with 10 regions so that KEYS uniform keys put KEYS/10 in each region:
#  1. preload KEYS keys with the benchmark;
#  2. iterate the whole key space with the CLI (`scan "" --keys-only`, pages of 1,000): the count must
#     match, and each node's RSS is sampled every 0.2 s against its idle RSS just before;
#  3. deleteRange of one region's whole range: the keys it held, the time the CLI reports, and how
#     many log entries it took (the region leader's applied index before and after);
#  4. count again: KEYS minus that region's keys must remain.
# Prints one line per figure and exits 1 when a count is off. Stops only the processes it started.
# Usage: bench/range-drills.sh [memory|rocksdb] [KEYS]
set -euo pipefail
cd "$(dirname "$0")/.."
engine=${1:-memory}
keys=${2:-1000000}
case "$engine" in memory|rocksdb) ;; *) echo "engine must be memory or rocksdb" >&2; exit 2 ;; esac
. bench/lib/local-cluster.sh
kv_build_jars
sampler=""
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null
  kv_cluster_cleanup
} 2>/dev/null
trap cleanup EXIT
kv_cluster_init "$engine" 10
kv_cluster_start -Xms256m -Xmx768m -XX:+UseParallelGC
kv_cluster_await_health

echo "preloading $keys keys ($engine, 10 regions) ..."
java -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" --keys "$keys" --duration 1 --warmup 0 \
  --threads 1 --inflight 1 --read-ratio 1 --max-error-rate 1 >"$work/preload.txt" 2>&1
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
sleep 5 # let the preload's garbage settle before the idle reading (a pause, not a wait for a state)
idle=()
for p in "${pids[@]}"; do idle+=("$(rss_kib "$p")"); done
( while true; do
    line=""
    for p in "${pids[@]}"; do line="$line $(rss_kib "$p")"; done
    echo "$line" >>"$work/rss.txt"
    sleep 0.2
  done ) &
sampler=$!
t0=$(date +%s.%N)
count=$(kvc --hex scan "" --keys-only --page-size 1000 | wc -l)
t1=$(date +%s.%N)
kill "$sampler"; wait "$sampler" 2>/dev/null || true; sampler=""
python3 - "$work/rss.txt" "${idle[@]}" "$count" "$keys" "$t0" "$t1" <<'PY'
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
idle = list(map(int, sys.argv[2:5])); count, keys = int(sys.argv[5]), int(sys.argv[6])
secs = float(sys.argv[8]) - float(sys.argv[7])
peak = [max(r[i] for r in rows) for i in range(3)]
growth = [(p - i) / 1024 for p, i in zip(peak, idle)]
print(f"iterate: {count} keys in {secs:.1f} s ({count / secs:,.0f} keys/s, CLI JVM start included), expected {keys}")
print("iterate: idle RSS MiB " + " / ".join(f"{i / 1024:.0f}" for i in idle)
      + ", peak during the scan " + " / ".join(f"{p / 1024:.0f}" for p in peak)
      + ", growth " + " / ".join(f"{g:+.0f}" for g in growth) + " MiB (bar: within 64)")
PY
[ "$count" -eq "$keys" ] || { echo "FAIL: iterated $count keys, expected $keys" >&2; exit 1; }

# region 5: its range, its keys, its leader's applied index before and after one delete-range
region5() { python3 -c 'import json,sys
r=[x for x in json.load(sys.stdin) if x["id"]==5][0]
print(r["startKey"] or "-", r["endKey"] or "-", r["leader"], r["appliedIndex"])'; }
read -r start end leader _ < <(kvc regions --json | region5)
[ "$start" = "-" ] && start=""
[ "$end" = "-" ] && end=""
in_region=$(kvc --hex scan "$start" "$end" --keys-only --page-size 1000 | wc -l)
before=$(java -jar kv-client/target/kv-client.jar --servers "$leader" regions --json | region5 | cut -d' ' -f4)
out=$(kvc --hex delete-range "$start" "$end")
after=$(java -jar kv-client/target/kv-client.jar --servers "$leader" regions --json | region5 | cut -d' ' -f4)
left=$(kvc --hex scan "" --keys-only --page-size 1000 | wc -l)
echo "deleteRange: region 5 [$start, $end) held $in_region keys; CLI: $out; log entries: $((after - before)) (applied index $before -> $after on $leader)"
echo "after deleteRange: $left keys left, expected $((keys - in_region))"
[ "$left" -eq $((keys - in_region)) ] || { echo "FAIL: $left keys left" >&2; exit 1; }
echo "PASS"
