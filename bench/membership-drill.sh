#!/usr/bin/env bash
# Elastic membership (issue #21) on real server JVMs (a temp dir, free loopback ports, bench/lib/local-cluster.sh),
# replication.factor 3, under S1 (90% put / 10% get) at 1,024 in flight (8 x 128, issue #21's load; INFLIGHT=512 for
# the default benchmark's 4,096), recording every acknowledged write:
#  grow     nodes 4 and 5 join the 3-node cluster (cluster.join); the cluster map's leader moves replicas onto them
#           until every node holds as many as the others (within 1). Figure: the time until balanced.
#  shrink   `kv-client node drain` of node 1 then `node remove`, and the same for node 2 (the map's voters move too);
#           each removed node stops by itself (exit 4) or on the drill's SIGTERM (0); any other exit code fails the
#           drill with the end of the node's log and its JVM crash report.
#  replace  kill -9 of node 3 and its data directory wiped (a dead disk), a new node 6 joins; node 3's replicas are
#           rebuilt on it once node 3 is down for placement.downAfterMs (15 s here); then `node remove` of node 3.
#           Figure: the time from node 6's start until every region has 3 replicas on live nodes and a leader.
# At the end: every region has exactly 3 replicas on nodes 4, 5, 6 (24 each: balanced), `verify --acked` finds every
# acknowledged write, and a node started again with removed node 1's data directory is refused (exit code 4).
# Client errors before the kill are printed (the bar is 0) and fail the drill with --strict.
# --short: 3 regions, a shorter benchmark and no replace (CI: the nemesis membership run replaces a node among its
# faults); the full drill has 24 regions and all three steps. At the end of --short nodes 3, 4, 5 hold every region.
# Usage: bench/membership-drill.sh [--short] [--strict] [--engine memory|rocksdb]
# Environment: INFLIGHT (per benchmark thread, default 128); KEEP=1 keeps the work dir (logs, benchmark output) and
# prints its path.
set -euo pipefail
cd "$(dirname "$0")/.."
short=0
strict=0
engine=memory
while [ $# -gt 0 ]; do
  case "$1" in
    --short) short=1 ;;
    --strict) strict=1 ;;
    --engine) engine=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$engine" in memory|rocksdb) ;; *) echo "--engine must be memory or rocksdb" >&2; exit 2 ;; esac
# the benchmark must outlast the membership steps: they end well inside this on 2 cores
if [ "$short" = 1 ]; then regions=3; warmup=10; duration=140; else regions=24; warmup=20; duration=900; fi

. bench/lib/local-cluster.sh
kv_build_jars
. bench/lib/drill.sh
drill_init membership-drill
bench_second() { grep -o '^ *[0-9.]*s ' "$out/bench.txt" | tail -1 | tr -d ' s'; }
# 0 when the map's leader sees every live node holding as many replicas as the others (within 1), no move running,
# and every region with 3 replicas
balanced() {
  kvc node list >"$out/list.txt" 2>&1 || return 1
  grep -q '^moving ' "$out/list.txt" && return 1
  python3 - "$out/list.txt" "$1" <<'PY'
import sys
want = set(sys.argv[2].split(","))
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[0] in want and f[1] == "up" and f[2] == "yes":
        rows[f[0]] = int(f[3])
ok = set(rows) == want and max(rows.values()) - min(rows.values()) <= 1
sys.exit(0 if ok else 1)
PY
}

export KV_NODES=3
kv_cluster_init "$engine" "$regions" "replication:
  factor: 3
split:
  enabled: false
placement:
  intervalMs: 1000
  downAfterMs: 15000"
# every put of the benchmark writes a new key (--record-acked): millions of keys by the end, held in a 2 GiB heap
# (768 MiB spent seconds in GC). G1, the JVM's own default: with the benchmark's ParallelGC the nodes' heaps of
# millions of live keys took full collections of 2-5 s on 2 cores, each a second or more of 0 ops/s and, over 5 s,
# client TIMEOUTs (the servers' GC pauses are logged and the longest printed at the end)
jvm=(-Xms256m -Xmx2g "$(drill_gc_log)" ${SERVER_JVM_EXTRA:-})
kv_cluster_start "${jvm[@]}"
kv_cluster_await_health || fail "cluster not healthy; logs in $work"
seeds=$servers
echo "membership-drill: 3 nodes ($engine), $regions regions, 3 replicas each; S1 at $((8 * ${INFLIGHT:-128})) in flight, ${warmup} s warm-up $(load)"

java -Xmx1g -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" --warmup "$warmup" --duration "$duration" \
  --inflight "${INFLIGHT:-128}" --record-acked "$out/acked.txt" >"$out/bench.txt" 2>&1 &
bench_pid=$!
while ! grep -q 'ops/s' "$out/bench.txt" 2>/dev/null; do
  kill -0 "$bench_pid" 2>/dev/null || fail "the benchmark ended early: $(tail -3 "$out/bench.txt")"
  sleep 0.2
done
sleep "$((warmup + 5))"

# grow: 3 -> 5
t0=$(bench_second); s0=$(now)
kv_join_node 4 "$seeds" "${jvm[@]}"
kv_join_node 5 "$seeds" "${jvm[@]}"
five=$(IFS=,; echo "${nodes[*]:0:5}")
wait_for 1200 "5 nodes balanced" balanced "$five"
t1=$(bench_second); grow_secs=$(since "$s0")
echo "grow: nodes 4 and 5 joined at benchmark second $t0; balanced after $grow_secs s (second $t1): $(grep -c '^127' "$out/list.txt") nodes"
kvc node list

# shrink: drain and remove nodes 1 and 2
s1=$(now)
for i in 1 2; do
  kvc node drain "${nodes[$((i - 1))]}" >"$out/drain-$i.txt" 2>&1 || fail "node drain $i: $(tail -2 "$out/drain-$i.txt")"
  echo "shrink: $(tail -1 "$out/drain-$i.txt")"
  kvc node remove "${nodes[$((i - 1))]}" || fail "node remove $i"
  # a removed node stops by itself (exit 4) once it learns it; a SIGTERM that comes first stops it with 0
  kill -TERM "${pids[$((i - 1))]}" 2>/dev/null || true
  code=0; wait "${pids[$((i - 1))]}" 2>/dev/null || code=$?
  [ "$code" = 0 ] || [ "$code" = 4 ] || fail "removed node $i exited with code $code (0 or 4 expected):
$(kv_node_tail "$i")"
  servers=$(IFS=,; echo "${nodes[*]:$i:$((5 - i))}") # kvc asks the nodes still in
done
t2=$(bench_second); shrink_secs=$(since "$s1")
echo "shrink: nodes 1 and 2 drained, removed and stopped in $shrink_secs s (benchmark second $t1 .. $t2)"

if [ "$short" = 1 ]; then
  # no replace: nodes 3, 4, 5 stay; with no kill, "before the kill" is the benchmark's whole run
  live=$(IFS=,; echo "${nodes[*]:2:3}")
  servers=$live
  t3=$((warmup + duration)); t4=$t3; gone_nodes="${nodes[0]},${nodes[1]}"; gone_names="nodes 1-2"; live_names="nodes 3, 4, 5"
  wait_for 300 "nodes 3, 4, 5 balanced" balanced "$live"
else
  gone_nodes="${nodes[0]},${nodes[1]},${nodes[2]}"; gone_names="nodes 1-3"; live_names="nodes 4, 5, 6"
  # replace: node 3 dies with its disk, node 6 joins in its place
  sleep 3
  t3=$(bench_second) # before the kill: errors in a later second may be the kill's (writes in flight to node 3)
  kill -9 "${pids[2]}"; wait "${pids[2]}" 2>/dev/null || true
  rm -rf "$work/data-3"
  servers=$(IFS=,; echo "${nodes[*]:3:2}")
  s3=$(now)
  kv_join_node 6 "$servers" "${jvm[@]}"
  live=$(IFS=,; echo "${nodes[3]},${nodes[4]},${nodes[5]}")
  servers=$live
  healthy() { read -r n lo hi led < <(replica_counts "$live"); [ "$n" -gt 0 ] && [ "$lo" = 3 ] && [ "$hi" = 3 ] && [ "$led" = "$n" ]; }
  wait_for 900 "3 replicas per region on nodes 4, 5, 6" healthy
  t4=$(bench_second); replace_secs=$(since "$s3")
  echo "replace: node 3 killed and wiped at benchmark second $t3, node 6 started; every region had 3 replicas on live"\
    "nodes and a leader after $replace_secs s (second $t4)"
  removed3() { kvc node remove "${nodes[2]}" >/dev/null 2>&1; }
  wait_for 120 "node 3 removed" removed3
  wait_for 300 "nodes 4, 5, 6 balanced" balanced "$live"
fi

echo "drill: waiting for the benchmark to end (second $(bench_second) of $((warmup + duration)))"
wait "$bench_pid" || echo "the benchmark exited non-zero: $(grep -i 'error rate\|exceed' "$out/bench.txt" | head -2)"
bench_pid=""
python3 - "$out/bench.txt" "$t0" "$t1" "$t2" "$t3" "$t4" "$((warmup + duration))" <<'PY'
import re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
pat = re.compile(r'^\s*([\d.]+)s\s+([\d,]+) ops/s\s+errors ([\d,]+)')
rows = [(float(m[1]), float(m[2].replace(',', '')), int(m[3].replace(',', ''))) for m in map(pat.match, lines)
        if m and 'warm-up' not in m.string]
rows = [r for r in rows if r[0] <= float(sys.argv[7]) + 0.5]
rows = [r for i, r in enumerate(rows) if i == 0 or r[0] - rows[i - 1][0] >= 0.9]
t0, t1, t2, t3, t4 = (float(x) for x in sys.argv[2:7])
before = [r[1] for r in rows if r[0] <= t0]
med = statistics.median(before) if before else float('nan')
def low(a, b):
    w = [r for r in rows if a < r[0] <= b + 1]
    if not w:
        return "no whole second"
    r = min(w, key=lambda x: x[1])
    return f"{r[1]:,.0f} ops/s at {r[0]:.0f} s = {r[1] / med:.2f} of the median before"
def errors_at(t, after=1.0):
    w = [r[2] for r in rows if r[0] <= t + after]
    return w[-1] if w else 0
print(f"drill: errors before the kill {errors_at(t3, 0)}, in all {rows[-1][2] if rows else -1}; median before the"
      f" joins {med:,.0f} ops/s ({len(before)} s)")
open(sys.argv[1] + ".errors-before-kill", "w").write(str(errors_at(t3, 0)))
print(f"drill: lowest second while nodes joined: {low(t0, t1)}")
print(f"drill: lowest second while nodes 1, 2 drained: {low(t1, t2)}")
if t4 > t3:
    print(f"drill: lowest second from the kill to the rebuild's end: {low(t3, t4)}")
print("drill: ops/s per second: " + " ".join(f"{r[1] / 1000:.0f}k" for r in rows))
PY
errors=$(cat "$out/bench.txt.errors-before-kill")
if [ "$errors" != 0 ]; then
  sed -n '/Errors by code/,/error rate/p' "$out/bench.txt"
  if [ "$strict" = 1 ]; then fail "$errors errors in the benchmark before the kill; see $out/bench.txt (KEEP=1 keeps it)"; fi
  echo "drill: $errors client errors before the kill (issue #21's bar is 0: not met in this run)"
fi
read -r n lo hi led < <(replica_counts "$live")
gone=$(kvc regions --json | python3 -c 'import json,sys; g=set(sys.argv[1].split(",")); print(sum(1 for r in json.load(sys.stdin) if g & set(r["peers"])))' "$gone_nodes")
echo "drill: $n regions, replicas per region $lo..$hi on $live_names, $gone with a replica on $gone_names $(load)"
kvc node list || true
[ "$lo" = 3 ] && [ "$hi" = 3 ] && [ "$gone" = 0 ] || fail "replica counts: $n regions, $lo..$hi replicas, $gone on $gone_names"
java -jar kv-benchmark/target/kv-benchmark.jar verify --acked "$out/acked.txt" --servers "$live" >"$out/verify.txt" 2>&1 \
  || { head -20 "$out/verify.txt"; fail "verify --acked"; }
echo "drill: verify --acked: $(grep checked "$out/verify.txt")"

# a removed node that comes back with its data is refused
set +e
java -jar kv-server/target/kv-server.jar --config "$work/server-1.yaml" >>"$work/node-1-again.log" 2>&1 &
again=$!
pids+=("$again")
for _ in $(seq 120); do kill -0 "$again" 2>/dev/null || break; sleep 0.5; done
wait "$again"; code=$?
set -e
[ "$code" = 4 ] || fail "removed node 1 started again: exit code $code, not 4 (refused); $(tail -2 "$work/node-1-again.log")"
echo "drill: removed node 1 started again with its data: refused, exit 4: $(grep -o 'refused by the cluster.*' "$work/node-1-again.log" | head -1 | cut -c1-160)"
drill_gc_pauses
echo PASS
