#!/usr/bin/env bash
# fsync errors on one node (issue #54's second fault) on real server JVMs (a temp dir, free loopback ports,
# bench/lib/local-cluster.sh), with Debian's fiu-utils: node 1 runs under `fiu-run -x`, and once S1 is under way at
# 1,024 in flight (every put a fresh key, recorded when acknowledged: --record-acked), `fiu-ctrl` makes every fsync
# and fdatasync of node 1 fail with EIO. Its Raft log (raft.sync: true) can no longer sync, so jraft stops its region
# groups, and the node must stop too (exit 5, "stops: region N's Raft group stopped for its storage"): a log whose
# fsync failed may have lost what it said it wrote, and a later fsync does not bring those pages back. The other two
# nodes keep a majority of every region. Then node 1 is started again without the faults, recovers from its log and
# its peers, and every region has 3 live replicas and a leader. At the end `verify --acked` reads every acknowledged
# write back. Figures: the time from the fault to node 1's exit, the lowest second of the load after it, the time
# until every region was led again, the time node 1 took to rejoin.
# Usage: bench/disk-error-drill.sh [--engine memory|rocksdb]
# Environment: KEEP=1 keeps the work dir (logs, benchmark output) and prints its path.
set -euo pipefail
cd "$(dirname "$0")/.."
engine=memory
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$engine" in memory|rocksdb) ;; *) echo "--engine must be memory or rocksdb" >&2; exit 2 ;; esac
command -v fiu-run >/dev/null && command -v fiu-ctrl >/dev/null \
  || { echo "disk-error-drill: needs fiu-run and fiu-ctrl (Debian: apt-get install fiu-utils)" >&2; exit 2; }

. bench/lib/local-cluster.sh
kv_build_jars
. bench/lib/drill.sh
drill_init disk-error-drill

export KV_NODES=3
kv_cluster_init "$engine" 3 "replication:
  factor: 3
split:
  enabled: false
raft:
  sync: true"
KV_NODE_WRAP_1="fiu-run -x -f $out/fiu-ctrl" kv_cluster_start -Xms256m -Xmx1g "$(drill_gc_log)"
kv_cluster_await_health || fail "cluster not healthy; logs in $work"
echo "disk-error-drill: 3 nodes ($engine), 3 regions, 3 replicas each, raft.sync true; node 1 under fiu-run $(load)"

java -Xmx1g -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" --warmup 5 --duration 120 \
  --inflight 128 --max-error-rate 1 --record-acked "$out/acked.txt" >"$out/bench.txt" 2>&1 &
bench_pid=$!
bench_second() { grep -o '^ *[0-9.]*s ' "$out/bench.txt" | tail -1 | tr -d ' s'; }
while ! grep -q 'ops/s' "$out/bench.txt" 2>/dev/null; do
  kill -0 "$bench_pid" 2>/dev/null || fail "the benchmark ended early: $(tail -3 "$out/bench.txt")"
  sleep 0.2
done
sleep 20 # 5 s of warm-up, then 15 s of measured load before the fault

# the fault: every fsync and fdatasync of node 1 fails with EIO from now on
t0=$(bench_second); s0=$(now)
fiu-ctrl -f "$out/fiu-ctrl" -c "enable name=posix/io/sync/fsync" "${pids[0]}"
fiu-ctrl -f "$out/fiu-ctrl" -c "enable name=posix/io/sync/fdatasync" "${pids[0]}"
echo "fault: node 1's fsync and fdatasync fail with EIO from benchmark second $t0"
code=0
for _ in $(seq 120); do kill -0 "${pids[0]}" 2>/dev/null || break; sleep 0.25; done
kill -0 "${pids[0]}" 2>/dev/null && fail "node 1 still runs 30 s after its fsyncs began to fail: $(kv_node_tail 1)"
wait "${pids[0]}" 2>/dev/null || code=$?
exit_secs=$(since "$s0")
[ "$code" = 5 ] || fail "node 1 exited with $code, not 5 (its storage failed): $(kv_node_tail 1)"
echo "fault: node 1 exited with 5 after $exit_secs s: $(grep -o 'stops: .*' "$work/node-1.log" | head -1 | cut -c1-200)"
two=$(IFS=,; echo "${nodes[*]:1:2}")
led_by_two() { read -r n lo hi led < <(replica_counts "$two"); [ "$n" -gt 0 ] && [ "$led" = "$n" ]; }
wait_for 60 "every region led by nodes 2 and 3" led_by_two
led_secs=$(since "$s0")
echo "fault: every region led again $led_secs s after the fault"

# node 1 again, without the faults: it recovers from its log and its peers
sleep 5
s1=$(now)
kv_node_start 1 -Xms256m -Xmx1g "$(drill_gc_log)"
all=$servers
healthy() { read -r n lo hi led < <(replica_counts "$all"); [ "$n" -gt 0 ] && [ "$lo" = 3 ] && [ "$led" = "$n" ] && kvc node list 2>/dev/null | grep -q "^${nodes[0]} *up *yes"; }
wait_for 120 "node 1 back: every region with 3 live replicas and a leader" healthy
echo "restart: node 1 started again without faults and was up with every region's 3 replicas after $(since "$s1") s"
sleep 5
t1=$(bench_second)
kill "$bench_pid" 2>/dev/null || true
wait "$bench_pid" 2>/dev/null || true
bench_pid=""
sleep 0.5
python3 - "$out/bench.txt" "$t0" "$t1" <<'PY'
import re, sys
rows = [(float(m[1]), float(m[2].replace(",", ""))) for m in
        (re.match(r"^\s*([\d.]+)s\s+([\d,]+) ops/s", l) for l in open(sys.argv[1])) if m]
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
before = sorted(o for t, o in rows if t0 - 10 <= t < t0)
after = [(o, t) for t, o in rows if t0 <= t <= t1]
med = before[len(before) // 2] if before else 0
low = min(after) if after else (0, t0)
print(f"drill: median before the fault {med:,.0f} ops/s; lowest second after it {low[0]:,.0f} ops/s at {low[1]:.0f} s"
      f" = {low[0] / med if med else 0:.2f} of the median")
PY
echo "drill: errors while it ran: $(grep 'ops/s  errors' "$out/bench.txt" | tail -1 | sed 's/.*errors \([0-9,]*\).*/\1/')"
java -jar kv-benchmark/target/kv-benchmark.jar verify --acked "$out/acked.txt" --servers "$servers" >"$out/verify.txt" 2>&1 \
  || { head -20 "$out/verify.txt"; fail "verify --acked"; }
echo "drill: verify --acked: $(grep checked "$out/verify.txt")"
echo "disk-error-drill: PASS"
