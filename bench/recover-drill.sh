#!/usr/bin/env bash
# Forced recovery (`kv-client recover-region`) on real server JVMs: 5 nodes (a temp dir, free loopback ports,
# bench/lib/local-cluster.sh), replication.factor 3, under S1 (90% put / 10% get) at 1,024 in flight (8 x 128),
# recording every acknowledged write. Two nodes that share regions (at most one of them a voter of the cluster map, so
# the map keeps its majority) die with their disks: kill -9, data directories wiped. Then what the README says:
#  1. `node remove NODE --force` of both (the map refuses a removed node that comes back);
#  2. `recover-region REGION` (the plan, printed for the first), then `recover-region --all --yes`: every region
#     whose three replicas included both, each left with one and no leader until then, recovered side by side;
#  3. placement gives every region 3 replicas on the 3 live nodes again.
# Figures: the time from the kill until every region is led again, and until every region has 3 replicas on live
# nodes; `verify --acked`'s count of acknowledged writes missing. A region recovered from one replica loses the writes
# only the two lost ones had: the few its survivor had not received yet, so a small count is expected and printed,
# not failed. The drill fails on a wrong or unreadable value, a region not recovered, or a region short of replicas.
# --map: the two nodes are both voters of the cluster map, so the map's own group loses its majority too and nothing
# answers admin calls: step 1 is then `recover-map` (its plan printed, then --yes), which makes the survivor the map's
# voter and marks both nodes removed; the drill also waits until the map has 3 voters on the live nodes again.
# --short: 6 regions and a shorter benchmark (CI); the full drill has 24 regions.
# Usage: bench/recover-drill.sh [--short] [--map] [--engine memory|rocksdb]
# Environment: INFLIGHT (per benchmark thread, default 128); KEEP=1 keeps the work dir (logs, benchmark output) and
# prints its path.
set -euo pipefail
cd "$(dirname "$0")/.."
short=0
map=0
engine=memory
while [ $# -gt 0 ]; do
  case "$1" in
    --short) short=1 ;;
    --map) map=1 ;;
    --engine) engine=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$engine" in memory|rocksdb) ;; *) echo "--engine must be memory or rocksdb" >&2; exit 2 ;; esac
# --short: the kill comes 15 s in and the recovery ends within about a minute of it on 2 cores; the drill goes on
# (and verifies) when the load has ended before that
if [ "$short" = 1 ]; then regions=6; warmup=10; duration=75; else regions=24; warmup=20; duration=300; fi

. bench/lib/local-cluster.sh
kv_build_jars
. bench/lib/drill.sh
drill_init recover-drill

export KV_NODES=5
kv_cluster_init "$engine" "$regions" "replication:
  factor: 3
split:
  enabled: false
placement:
  intervalMs: 1000
  downAfterMs: 15000"
# G1, the JVM's own default: every put writes a new key, and with the benchmark's ParallelGC the nodes' heaps of
# millions of live keys took full collections of 2-5 s on 2 cores, each a second or more of 0 ops/s and, over 5 s,
# client TIMEOUTs (the servers' GC pauses are logged and the longest printed at the end)
jvm=(-Xms256m -Xmx2g "$(drill_gc_log)" ${SERVER_JVM_EXTRA:-})
kv_cluster_start "${jvm[@]}"
kv_cluster_await_health || fail "cluster not healthy; logs in $work"
echo "recover-drill: 5 nodes ($engine), $regions regions, 3 replicas each; S1 at $((8 * ${INFLIGHT:-128})) in flight,"\
  "${warmup} s warm-up $(load)"

java -Xmx1g -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" --warmup "$warmup" --duration "$duration" \
  --inflight "${INFLIGHT:-128}" --record-acked "$out/acked.txt" >"$out/bench.txt" 2>&1 &
bench_pid=$!
while ! grep -q 'ops/s' "$out/bench.txt" 2>/dev/null; do
  kill -0 "$bench_pid" 2>/dev/null || fail "the benchmark ended early: $(tail -3 "$out/bench.txt")"
  sleep 0.2
done
sleep "$((warmup + 5))"

# the two victims: the pair of nodes sharing the most regions with at most one voter of the map among them
kvc regions --json >"$out/regions-before.json"
kvc node list >"$out/list-before.txt"
read -r a b broken < <(python3 - "$out/regions-before.json" "$out/list-before.txt" "$servers" "$map" <<'PY'
import itertools, json, sys
regions = json.load(open(sys.argv[1]))
roles = {f[0]: f[-1] for f in (l.split() for l in open(sys.argv[2])) if f and f[0].startswith("127.")}
nodes = sys.argv[3].split(",")
map_voters = 2 if sys.argv[4] == "1" else None  # --map: both voters of the map; else at most one
best = None
for x, y in itertools.combinations(nodes, 2):
    voters = sum(roles.get(n) in ("leader", "voter") for n in (x, y))
    if (voters != 2) if map_voters else (voters > 1):
        continue
    shared = [r["id"] for r in regions if x in r["peers"] and y in r["peers"]]
    if shared and (best is None or len(shared) > len(best[2])):
        best = (x, y, shared)
if best is None:
    sys.exit("no pair of nodes shares a region with " + ("both voters" if map_voters else "at most one voter")
             + " of the map")
print(nodes.index(best[0]) + 1, nodes.index(best[1]) + 1, ",".join(map(str, best[2])))
PY
)
[ -n "${broken:-}" ] || fail "no pair of nodes to kill (see $out/list-before.txt)"
live=$(python3 -c 'import sys; n=sys.argv[1].split(","); print(",".join(x for i, x in enumerate(n) if i + 1 not in (int(sys.argv[2]), int(sys.argv[3]))))' "$servers" "$a" "$b")
echo "recover-drill: killing nodes $a and $b (${nodes[$((a - 1))]}, ${nodes[$((b - 1))]}) with their disks; regions"\
  "$broken hold both and keep one replica $(load)"
s0=$(now)
for i in "$a" "$b"; do
  kill -9 "${pids[$((i - 1))]}"; wait "${pids[$((i - 1))]}" 2>/dev/null || true
  rm -rf "$work/data-$i"
done
servers=$live

# 1. the dead nodes leave the map for good: removed by hand, or (--map) by the recovered map's new leader
if [ "$map" = 1 ]; then
  map_planned() { kvc recover-map >"$out/plan-map.txt" 2>&1; }
  wait_for 120 "a plan for the cluster map" map_planned
  sed 's/^/  /' "$out/plan-map.txt"
  map_recovered() { kvc recover-map --yes >"$out/recover-map.txt" 2>&1; }
  wait_for 120 "the cluster map recovered" map_recovered
  echo "recover-drill: $(tail -1 "$out/recover-map.txt") ($(since "$s0") s after the kill)"
else
  for i in "$a" "$b"; do
    removed() { kvc node remove "${nodes[$((i - 1))]}" --force >"$out/remove-$i.txt" 2>&1; }
    wait_for 120 "node $i removed" removed
    echo "recover-drill: $(tail -1 "$out/remove-$i.txt")"
  done
fi

# 2. each broken region: the plan for the first, then --yes
first=${broken%%,*}
planned() { kvc recover-region "$first" >"$out/plan.txt" 2>&1; }
wait_for 120 "a plan for region $first" planned
sed 's/^/  /' "$out/plan.txt"
# all of them with one command (again while some survivor still knows its dead leader and is counted as whole)
recovered() {
  kvc recover-region --all --yes >>"$out/recover.txt" 2>&1 || true
  local r
  for r in ${broken//,/ }; do grep -q "^region $r recovered" "$out/recover.txt" || return 1; done
}
wait_for 120 "regions $broken recovered" recovered
grep -E '^region [0-9]+ recovered|regions recovered' "$out/recover.txt" | sed 's/^/recover-drill: /'
led() { read -r n lo hi l < <(replica_counts "$live"); [ "$n" -gt 0 ] && [ "$l" = "$n" ]; }
wait_for 120 "every region led" led
led_secs=$(since "$s0")
healthy() { read -r n lo hi l < <(replica_counts "$live"); [ "$n" -gt 0 ] && [ "$lo" = 3 ] && [ "$hi" = 3 ] && [ "$l" = "$n" ]; }
wait_for 600 "3 replicas per region on the live nodes" healthy
healthy_secs=$(since "$s0")
echo "recover-drill: after the kill, every region led again in $led_secs s and had 3 replicas on live nodes in"\
  "$healthy_secs s $(load)"
if [ "$map" = 1 ]; then
  map_voters() { [ "$(kvc node list 2>/dev/null | awk '$NF == "leader" || $NF == "voter"' | wc -l)" = 3 ]; }
  wait_for 120 "3 voters of the cluster map on the live nodes" map_voters
  echo "recover-drill: the cluster map has 3 voters on the live nodes again ($(since "$s0") s after the kill)"
fi

wait "$bench_pid" || echo "recover-drill: the benchmark exited non-zero (requests to the regions without a leader"\
  "failed until they were recovered): $(grep -i 'error rate\|exceed' "$out/bench.txt" | head -1)"
bench_pid=""
grep -A12 'Errors by code' "$out/bench.txt" | grep -v '^ *$' | head -8 || true
java -jar kv-benchmark/target/kv-benchmark.jar verify --acked "$out/acked.txt" --servers "$live" >"$out/verify.txt" 2>&1 || true
summary=$(grep checked "$out/verify.txt" || true)
[ -n "$summary" ] || { head -20 "$out/verify.txt"; fail "verify --acked did not run"; }
echo "recover-drill: verify --acked: $summary"
python3 - "$summary" <<'PY' || fail "verify --acked found wrong or unreadable values"
import re, sys
m = re.search(r"([\d,]+) wrong, ([\d,]+) unreadable", sys.argv[1])
sys.exit(0 if m and m[1] == "0" and m[2] == "0" else 1)
PY
drill_gc_pauses
echo PASS
