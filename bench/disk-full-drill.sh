#!/usr/bin/env bash
# A full disk (issue #54's third fault) on real server JVMs (a temp dir, free loopback ports, bench/lib/local-cluster.sh):
# node 1's data directory is a tmpfs of SIZE (default 192 MiB; 384 on RocksDB), every node has store.minFreeDiskBytes 64 MiB, and the
# benchmark puts fresh keys with values of 1 KiB, recording every acknowledged one (--record-acked):
#  fill   the load runs until node 1's file system has under 64 MiB free plus the room its next compactions may take
#         (the Raft log's table files; on RocksDB also the store's memtables and lower levels: 46-100 MiB here).
#         Node 1's region leaders refuse writes that add data with STORE_FULL, and so do the other nodes' leaders of
#         the regions with a replica on node 1 (all of them: 3 replicas on 3 nodes), which node 1 tells in its answers
#         to their node heartbeats. Checked with the CLI: a put is refused with STORE_FULL naming node 1's disk, a get
#         answers, a delete passes.
#  free   the tmpfs grows to 4 x SIZE (mount -o remount): node 1 takes writes again within seconds, a put through the
#         CLI passes, and the benchmark's puts are acknowledged again.
# At the end: every node is still up, every region has a leader, and `verify --acked` reads every acknowledged write
# back. Needs root (the tmpfs mount).
# Usage: bench/disk-full-drill.sh [--engine memory|rocksdb] [--size MiB]
# Environment: KEEP=1 keeps the work dir (logs, benchmark output) and prints its path.
set -euo pipefail
cd "$(dirname "$0")/.."
engine=memory
size=""
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=$2; shift ;;
    --size) size=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$engine" in memory|rocksdb) ;; *) echo "--engine must be memory or rocksdb" >&2; exit 2 ;; esac
# RocksDB's store preallocates its files on the tmpfs too (about 130 MiB at the first writes): twice the room
[ -n "$size" ] || { [ "$engine" = rocksdb ] && size=384 || size=192; }
[[ "$size" =~ ^[0-9]+$ ]] && [ "$size" -ge 128 ] || { echo "--size must be a number of MiB, at least 128" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "disk-full-drill: needs root, to mount a tmpfs for node 1's data directory" >&2; exit 2; }
min_free=$((64 << 20))

. bench/lib/local-cluster.sh
kv_build_jars
. bench/lib/drill.sh
drill_init disk-full-drill
mounted=""
cleanup() { # the nodes stopped before the tmpfs under node 1 is unmounted, and that before the work dir is removed
  local p
  [ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [ -n "$mounted" ]; then umount "$mounted" || umount -l "$mounted" || true; fi
  drill_cleanup
} 2>/dev/null
trap cleanup EXIT

export KV_NODES=3
kv_cluster_init "$engine" 3 "  minFreeDiskBytes: $min_free
replication:
  factor: 3
split:
  enabled: false"
mkdir -p "$work/data-1"
mount -t tmpfs -o size="${size}m" kv-drill-disk "$work/data-1"
mounted=$work/data-1
kv_cluster_start -Xms256m -Xmx1g "$(drill_gc_log)"
kv_cluster_await_health || fail "cluster not healthy; logs in $work"
free_mib() { df --output=avail -B1M "$work/data-1" | tail -1 | tr -d ' '; }
echo "disk-full-drill: 3 nodes ($engine), 3 regions, 3 replicas each; node 1's data on a tmpfs of $size MiB" \
  "($(free_mib) MiB free), store.minFreeDiskBytes 64 MiB $(load)"

java -Xmx512m -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" --warmup 5 --duration 600 \
  --threads 4 --inflight 32 --value-size 1024 --keys 1000 --max-error-rate 1 \
  --record-acked "$out/acked.txt" >"$out/bench.txt" 2>&1 &
bench_pid=$!
progress() { grep 'ops/s  errors' "$out/bench.txt" | tail -1 | sed 's/^ *//'; }
errors() { progress | sed -n 's/.*errors \([0-9,]*\).*/\1/p' | tr -d ','; }
alive() { local p; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || return 1; done; }

# fill. The room left swings by tens of MiB while it fills (the Raft log's RocksDB writes a flushed memtable or a
# compaction's output before it deletes what they replace; the limit keeps room for that), so
# node 1 may refuse and take writes again a few times before the log leaves it under the limit for good
s0=$(now)
guard_state() { grep -o 'refusing writes that add data\|taking writes again' "$work/node-1.log" | tail -1; }
refused_put() {
  alive || fail "a node died while the disk filled: $(kv_node_tail 1)"
  [ "$(guard_state)" = "refusing writes that add data" ] || return 1
  sleep 1 # the other nodes' leaders hear of it with the next node heartbeat
  ! kvc put drill-probe v >"$out/put.txt" 2>&1 && grep -q STORE_FULL "$out/put.txt"
}
wait_for 300 "a put refused with STORE_FULL while node 1's disk is full" refused_put
echo "fill: node 1 refusing writes after $(since "$s0") s, $(free_mib) MiB free: $(grep -o '[0-9]* MiB free in.*refusing.*' "$work/node-1.log" | tail -1 | cut -c1-120)"
echo "fill: node 1's refusals so far: $(grep -c 'refusing writes that add data' "$work/node-1.log"); benchmark: $(progress)"
grep -q 'disk: ' "$out/put.txt" || fail "the refusal did not name the disk: $(cat "$out/put.txt")"
echo "fill: kv-client put: $(head -1 "$out/put.txt" | cut -c1-220)"
code=0; kvc get drill-probe >/dev/null 2>&1 || code=$?
# 1: absent; 0: a put of an earlier try went through while node 1 had room again for a moment
[ "$code" = 0 ] || [ "$code" = 1 ] || fail "a get while full: exit code $code"
kvc delete drill-probe >"$out/delete.txt" 2>&1 || fail "a delete while full: $(cat "$out/delete.txt")"
echo "fill: a get answered, a delete passed"
[ "$(errors)" -gt 0 ] || fail "the benchmark saw no refusals while full: $(progress)"
alive || fail "a node died while full: $(kv_node_tail 1)"

# free
mount -o remount,size="$((4 * size))m" "$work/data-1"
s1=$(now)
taking() { [ "$(guard_state)" = "taking writes again" ]; }
wait_for 60 "node 1 taking writes again" taking
probe() { kvc put drill-probe v >/dev/null 2>&1; }
wait_for 30 "a put taken after the disk grew" probe
echo "free: the tmpfs grew to $((4 * size)) MiB; node 1 took writes again and a put passed after $(since "$s1") s"
sleep 2 # the other nodes' leaders hear of it with the next node heartbeat; refusals in flight are answered
e2=$(errors)
acked0=$(wc -l <"$out/acked.txt")
sleep 10
e3=$(errors)
acked1=$(wc -l <"$out/acked.txt")
[ "$acked1" -gt "$acked0" ] || fail "no put acknowledged in the 10 s after the disk grew"
echo "free: in the next 10 s the benchmark had $((acked1 - acked0)) puts acknowledged and $((e3 - e2)) errors"
[ "$e3" = "$e2" ] || fail "errors went on after the disk grew ($e2 -> $e3)"

kill "$bench_pid" 2>/dev/null || true
wait "$bench_pid" 2>/dev/null || true
bench_pid=""
sleep 0.5 # the recorder's last flush (every 100 ms)
alive || fail "a node died: $(kv_node_tail 1)"
kv_cluster_await_health || fail "not every region has a leader at the end; logs in $work"
java -jar kv-benchmark/target/kv-benchmark.jar verify --acked "$out/acked.txt" --servers "$servers" >"$out/verify.txt" 2>&1 \
  || { head -20 "$out/verify.txt"; fail "verify --acked"; }
echo "drill: verify --acked: $(grep checked "$out/verify.txt")"
echo "disk-full-drill: PASS"
