#!/usr/bin/env bash
# Backup and restore drill of issue #23 on real server processes, in a temp dir on free loopback ports:
#  1. a 3-node source cluster (engine SRC, 24 regions); KEYS fresh keys put by the benchmark with
#     --record-acked (every acknowledged put recorded), in 60 s rounds until that many are recorded;
#  2. a backup with no other load: its throughput (MB/s and keys/s, from the CLI's summary); before it, the
#     sequence "backup-drill-seq" hands out 1,000 numbers;
#  3. the default benchmark (90% put / 10% get, 100,000 keys) alone, DURATION s after WARMUP s: ops/s;
#  4. the same benchmark again with backups running back to back through its whole run: ops/s, and the
#     ratio to 3; the first of these backups (taken while the load writes) is the one restored;
#  5. the source is stopped; a fresh 3-node target cluster (engine DST, 10 regions) gets that backup
#     by `restore`: its throughput; then `kv-benchmark verify --acked` of step 1's file against the
#     target: every write acknowledged before the backup started must be there with its value, and the
#     sequence must carry on past the 1,000 numbers handed out before the backup, not start at 0 again;
#  6. one byte of a copy of the backup flipped: `backup verify` and `restore` must both refuse it (exit 1).
# Prints one line per figure and PASS, or FAIL and exit 1. Stops only the processes it started.
# Usage: bench/backup-drill.sh [KEYS] [SRC_ENGINE] [DST_ENGINE]   (defaults: 1000000 memory rocksdb)
# Environment: DURATION (default 30), WARMUP (default 20), LOAD_SECS (a load round, default 60; rounds go on
# until KEYS puts are recorded, so a round can overshoot KEYS), KEEP=1 keeps the work dir.
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${1:-1000000}
src_engine=${2:-memory}
dst_engine=${3:-rocksdb}
duration=${DURATION:-30}
warmup=${WARMUP:-20}
load_secs=${LOAD_SECS:-60}
for e in "$src_engine" "$dst_engine"; do
  case "$e" in memory|rocksdb) ;; *) echo "engines must be memory or rocksdb" >&2; exit 2 ;; esac
done
for j in kv-server/target/kv-server.jar kv-client/target/kv-client.jar kv-benchmark/target/kv-benchmark.jar; do
  [ -f "$j" ] || mvn -q -B -o -DskipTests package
done
work=$(mktemp -d /tmp/kv-backup-drill.XXXXXX)
pids=()
bench_pid=""
cleanup() {
  [ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ]; then echo "work dir kept: $work"; else rm -rf "$work"; fi
} 2>/dev/null
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# start_cluster NAME ENGINE REGIONS: three nodes; sets $servers
start_cluster() {
  local name=$1 engine=$2 regions=$3
  local ports
  ports=($(python3 -c 'import socket
s=[socket.socket() for _ in range(3)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))'))
  local peers="127.0.0.1:${ports[0]}, 127.0.0.1:${ports[1]}, 127.0.0.1:${ports[2]}"
  servers="127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
  for i in 0 1 2; do
    cat >"$work/$name-$((i + 1)).yaml" <<EOF2
endpoint: 127.0.0.1:${ports[$i]}
dataDir: $work/$name-data-$((i + 1))
cluster:
  peers: [$peers]
  regionCount: $regions
store:
  engine: $engine
EOF2
  done
  for i in 1 2 3; do
    java -Xms256m -Xmx1g -XX:+UseParallelGC -jar kv-server/target/kv-server.jar --config "$work/$name-$i.yaml" \
      >>"$work/$name-node-$i.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 600); do kvc health >/dev/null 2>&1 && break; sleep 0.2; done
  kvc health >/dev/null || fail "$name cluster not healthy; logs in $work"
}
kvc() { java -jar kv-client/target/kv-client.jar --servers "$servers" "$@"; }
bench() { java -Xmx1g -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" "$@"; }
ops_per_sec() { awk '$1 == "total" && NF == 9 {print $9}' "$1"; }

start_cluster source "$src_engine" 24
source_pids=("${pids[@]}")
echo "source: 3 nodes, $src_engine, 24 regions; putting $keys fresh keys with --record-acked ..."
acked="$work/acked.txt"
touch "$acked"
round=0
while [ "$(wc -l <"$acked")" -lt "$keys" ]; do
  round=$((round + 1))
  bench --keys 1000 --read-ratio 0 --duration "$load_secs" --warmup 0 --threads 4 --inflight 256 \
    --record-acked "$acked" --max-error-rate 1 >"$work/load-$round.txt" 2>&1 || fail "load round $round; see $work"
  echo "  round $round: $(wc -l <"$acked") acknowledged puts recorded"
done

seq_before=$(kvc sequence get backup-drill-seq --step 1000) || fail "sequence get: $seq_before"
seq_end=$(echo "$seq_before" | awk '{print $2}')
out=$(kvc backup "$work/backup-idle" --quiet) || fail "backup without load: $out"
echo "backup, no other load: $out"

bench --duration "$duration" --warmup "$warmup" >"$work/bench-alone.txt" 2>&1 || fail "benchmark alone; see $work"
alone=$(ops_per_sec "$work/bench-alone.txt")
echo "benchmark alone: $alone ops/s"

bench --duration "$duration" --warmup "$warmup" >"$work/bench-backup.txt" 2>&1 &
bench_pid=$!
n=0
while kill -0 "$bench_pid" 2>/dev/null; do
  n=$((n + 1))
  if ! kvc backup "$work/backup-load-$n" --quiet >"$work/backup-load-$n.txt" 2>&1; then
    kill -0 "$bench_pid" 2>/dev/null && fail "backup $n under load: $(cat "$work/backup-load-$n.txt")"
  fi
  [ "$n" = 1 ] && echo "backup under load: $(cat "$work/backup-load-1.txt")"
done
wait "$bench_pid" || fail "benchmark during backups; see $work/bench-backup.txt"
bench_pid=""
during=$(ops_per_sec "$work/bench-backup.txt")
python3 -c "import sys; a, d = float(sys.argv[1]), float(sys.argv[2]); print(f'benchmark while $n backups ran back to back: {d:.0f} ops/s, {d / a:.2f} of alone')" "$alone" "$during"
for p in "${source_pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done
pids=()

start_cluster target "$dst_engine" 10
echo "target: 3 fresh nodes, $dst_engine, 10 regions"
out=$(kvc restore "$work/backup-load-1" --quiet) || fail "restore: $out"
echo "restore: $out"
java -jar kv-benchmark/target/kv-benchmark.jar verify --acked "$acked" --servers "$servers" >"$work/verify.txt" 2>&1 || { cat "$work/verify.txt"; fail "verify --acked"; }
echo "verify --acked: $(grep checked "$work/verify.txt")"
seq_after=$(kvc sequence get backup-drill-seq --step 1) || fail "sequence get on the target: $seq_after"
seq_start=$(echo "$seq_after" | awk '{print $1}')
echo "sequence backup-drill-seq: [${seq_before/$'\t'/, }) before the backup, next [${seq_after/$'\t'/, }) on the target"
[ "$seq_start" -ge "$seq_end" ] || fail "the restored sequence hands out $seq_start again (the source had handed out up to $seq_end)"

cp -r "$work/backup-load-1" "$work/backup-corrupt"
victim=$(ls -S "$work/backup-corrupt"/*.kvb | head -1)
python3 - "$victim" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read()); b[len(b) // 2] ^= 0x01; open(sys.argv[1], 'wb').write(b)
PY
set +e
verify_err=$(java -jar kv-client/target/kv-client.jar backup verify "$work/backup-corrupt" 2>&1); verify_code=$?
restore_err=$(kvc restore "$work/backup-corrupt" --force --quiet 2>&1); restore_code=$?
set -e
echo "one flipped byte in $(basename "$victim"): backup verify exit $verify_code ($verify_err); restore exit $restore_code ($restore_err)"
[ "$verify_code" = 1 ] && [ "$restore_code" = 1 ] || fail "a corrupt backup was not refused"
case "$verify_err$restore_err" in *"$(basename "$victim")"*) ;; *) fail "the error does not name the file" ;; esac
echo "PASS"
