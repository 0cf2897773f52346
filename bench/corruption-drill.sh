#!/usr/bin/env bash
# A flipped byte on a stopped node (issue #54's fourth fault) on real server JVMs (a temp dir, free loopback ports,
# bench/lib/local-cluster.sh). For each TARGET, on a fresh 3-node cluster (3 regions, 3 replicas each): S1's load at
# 1,024 in flight for 20 s (with 256-byte values for log and store, so that their memtables flush table files), every
# put a fresh key recorded when acknowledged (--record-acked); node 1 stopped by SIGTERM; one byte in the middle of its
# largest file of the kind flipped; node 1 started again. Then either
#  - node 1 refuses to start (exit code 3 or 5) and its message names the damaged file: the other two serve on, and
#    `verify --acked` reads every acknowledged write back from them; or
#  - node 1 runs: it must rejoin with every region's replica, and it then leads every region (transfer-leader) while
#    `verify --acked` reads every acknowledged write back, so every read is answered from node 1's data.
# A wrong or missing value fails the drill either way. Targets:
#  log       node 1's shared Raft log (raft/log/*.sst), on MemoryDB, whose store is rebuilt from snapshot and log
#  store     node 1's RocksDB store (store/*.sst), on RocksDB
#  snapshot  a region snapshot of node 1 (raft/region-N/snapshot/...), on MemoryDB, snapshots every 5 s
# Prints per target what node 1 did (its exit code and first error line, or that it served) and the verdict.
# Usage: bench/corruption-drill.sh [TARGET...]   (default: log store snapshot)
# Environment: KEEP=1 keeps each target's work dir (logs, benchmark output) and prints its path.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(log store snapshot)
for t in "${targets[@]}"; do
  case "$t" in log|store|snapshot) ;; -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown target: $t (log, store or snapshot; see --help)" >&2; exit 2 ;; esac
done

if [ "${CORRUPTION_TARGET:-}" = "" ]; then
  # one child per target, each with a cluster and a work dir of its own
  . bench/lib/local-cluster.sh
  kv_build_jars
  status=0
  for t in "${targets[@]}"; do
    CORRUPTION_TARGET=$t bash "$0" || status=1
  done
  [ "$status" = 0 ] && echo "corruption-drill: PASS (${targets[*]})" || echo "corruption-drill: FAIL"
  exit $status
fi

target=$CORRUPTION_TARGET
. bench/lib/local-cluster.sh
. bench/lib/drill.sh
drill_init corruption-drill
engine=memory; interval=600; store_extra=""; value=16
[ "$target" = store ] && engine=rocksdb
[ "$target" = snapshot ] && interval=5
# 20 s of 16-byte values fill neither the Raft log's 16 MiB memtable nor the store's 32 MiB one: no table file to
# damage. 256-byte values, and for the store 4 MiB memtables, flush several table files within the load.
[ "$target" = snapshot ] || value=256
# (the YAML goes right after the store: section's engine line, so an indented line continues that section)
[ "$target" = store ] && store_extra="  writeBufferBytes: 4194304
"
export KV_NODES=3
kv_cluster_init "$engine" 3 "${store_extra}replication:
  factor: 3
split:
  enabled: false
balance:
  enabled: false
raft:
  sync: true
  snapshotIntervalSecs: $interval"
kv_cluster_start -Xms256m -Xmx1g
kv_cluster_await_health || fail "cluster not healthy; logs in $work"
echo "== $target: 3 nodes ($engine), 3 regions, 3 replicas each, snapshots every $interval s $(load)"

java -Xmx1g -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" --warmup 0 --duration 20 \
  --inflight 128 --value-size "$value" --record-acked "$out/acked.txt" >"$out/bench.txt" 2>&1 || fail "the load: $(tail -3 "$out/bench.txt")"
echo "$target: load: $(awk '/^-- Operations by type/ {f = 1} f && /^total/ {print $2 " operations, " $3 " ops/s"; exit}' "$out/bench.txt"), $value-byte values"

kill -TERM "${pids[0]}"
code=0; wait "${pids[0]}" 2>/dev/null || code=$?
[ "$code" = 0 ] || fail "node 1's SIGTERM stop exited $code: $(kv_node_tail 1)"
case "$target" in
  log) files=$(find "$work/data-1/raft/log" -name '*.sst') ;;
  store) files=$(find "$work/data-1/store" -name '*.sst') ;;
  snapshot) files=$(find "$work/data-1/raft" -path '*/snapshot/*' -type f ! -name '__raft_snapshot_meta') ;;
esac
[ -n "$files" ] || fail "node 1 has no $target file to damage: $(find "$work/data-1" -type f | head -20)"
victim=$(ls -S $files | head -1)
python3 - "$victim" <<'PY'
import os, sys
path = sys.argv[1]
size = os.path.getsize(path)
with open(path, "r+b") as f:
    f.seek(size // 2)
    b = f.read(1)
    f.seek(size // 2)
    f.write(bytes([b[0] ^ 0xFF]))
print(f"flip: byte {size // 2} of {size} in {path}")
PY

mark=$(wc -l <"$work/node-1.log")
s0=$(now)
kv_node_start 1 -Xms256m -Xmx1g
all=$servers
healthy() {
  read -r n lo hi led < <(replica_counts "$all")
  # node 1 answering by itself: the map may still list it as live from before its stop while it checks its files
  [ "$n" -gt 0 ] && [ "$lo" = 3 ] && [ "$led" = "$n" ] && kvc node list 2>/dev/null | grep -q "^${nodes[0]} *up *yes" \
    && servers=${nodes[0]} kvc regions >/dev/null 2>&1 && kill -0 "${pids[0]}" 2>/dev/null
}
ran=""
for _ in $(seq 90); do
  kill -0 "${pids[0]}" 2>/dev/null || break
  if healthy; then ran=yes; break; fi
  sleep 1
done
after=$(tail -n +"$((mark + 1))" "$work/node-1.log")
if [ -z "$ran" ] && ! kill -0 "${pids[0]}" 2>/dev/null; then
  code=0; wait "${pids[0]}" 2>/dev/null || code=$?
  why=$(grep -m1 '^kv-server:' <<<"$after" || grep -m1 'ERROR' <<<"$after" || true)
  echo "$target: node 1 exited with $code after $(since "$s0") s: $(cut -c1-300 <<<"$why")"
  [ "$code" = 3 ] || [ "$code" = 5 ] || fail "node 1's exit code $code is not 3 (cannot start) or 5 (storage)"
  grep -qF "$(basename "$victim")" <<<"$why" || fail "node 1's message does not name $(basename "$victim")"
  verdict="refused to start, naming the file"
  readers=$(IFS=,; echo "${nodes[*]:1:2}")
else
  [ -n "$ran" ] || fail "node 1 neither exited nor rejoined within 90 s: $(kv_node_tail 1)"
  echo "$target: node 1 started and rejoined with every region's replica after $(since "$s0") s"
  grep -E '^[0-9:.]+ (WARN|ERROR) ' <<<"$after" | grep -i 'corrupt\|checksum\|mismatch' | head -3 | cut -c1-300 | sed "s/^/$target: node 1 logged: /" || true
  # a transfer jraft accepts can still time out (node 1 catching up after its restart, on a loaded machine): ask
  # again, every round, for each region node 1 does not lead yet, not once
  leads_all() {
    local pending r
    pending=$(kvc regions --json 2>/dev/null | python3 -c '
import json, sys
rs = json.load(sys.stdin)
print(" ".join(str(r["id"]) for r in rs if r["leader"] != sys.argv[1]) if rs else "none")' "${nodes[0]}") || return 1
    [ -z "$pending" ] && return 0
    [ "$pending" = none ] && return 1
    for r in $pending; do kvc transfer-leader "$r" "${nodes[0]}" >/dev/null 2>&1 || true; done
    return 1
  }
  wait_for 90 "node 1 leading every region" leads_all
  verdict="served; every read of the acknowledged writes answered by node 1"
  readers=${nodes[0]}
fi
java -jar kv-benchmark/target/kv-benchmark.jar verify --acked "$out/acked.txt" --servers "$readers" >"$out/verify.txt" 2>&1 \
  || { head -20 "$out/verify.txt"; fail "verify --acked after the flipped byte in the $target"; }
echo "$target: verify --acked: $(grep checked "$out/verify.txt")"
echo "$target: PASS: $verdict"
