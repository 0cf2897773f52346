#!/usr/bin/env bash
# Restart time of a loaded cluster: starts 3 nodes (engine memory or rocksdb) in a temp dir on free
# loopback ports, preloads KEYS keys with the benchmark, stops all three nodes at once (kill -9, or
# SIGTERM with --graceful), starts them again and measures the time from launching the JVMs until
# every region has a leader (kv-client health) and until a linearizable read of a preloaded key
# answers. Stops only the processes it started, also on failure.
# Usage: bench/restart-time.sh [memory|rocksdb] [KEYS] [--graceful]
set -euo pipefail
cd "$(dirname "$0")/.."
engine=${1:-memory}
keys=${2:-1000000}
mode=kill
[ "${3:-}" = "--graceful" ] && mode=graceful
case "$engine" in memory|rocksdb) ;; *) echo "engine must be memory or rocksdb" >&2; exit 2 ;; esac
. bench/lib/local-cluster.sh
kv_build_jars
trap kv_cluster_cleanup EXIT 2>/dev/null
kv_cluster_init "$engine" 24
start_all() { kv_cluster_start -Xms256m -Xmx1g -XX:+UseParallelGC; }
now() { date +%s.%N; }
await_health() { kv_cluster_await_health; }
start_all
await_health
echo "preloading $keys keys ($engine) ..."
java -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" --keys "$keys" --duration 1 --warmup 0 \
  --threads 1 --inflight 1 --max-error-rate 1 >"$work/preload.txt" 2>&1
# the benchmark's key number 12345 (KeyGenerator: SplitMix64 of the index, then the index, big-endian)
key=$(python3 -c 'import struct
def mix(i):
    m=(1<<64)-1; z=(i+0x9E3779B97F4A7C15)&m
    z=((z^(z>>30))*0xBF58476D1CE4E5B9)&m; z=((z^(z>>27))*0x94D049BB133111EB)&m
    return z^(z>>31)
i=12345
print(struct.pack(">QQ",mix(i),i).hex())')
java -jar kv-client/target/kv-client.jar --servers "$servers" --hex get "$key" >/dev/null || {
  echo "preloaded key $key not found before the restart" >&2; exit 1; }
du_data=$(du -sh "$work"/data-1 | cut -f1)
if [ "$mode" = kill ]; then
  kill -9 "${pids[@]}"
else
  kill -TERM "${pids[@]}"
fi
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
t0=$(now)
start_all
await_health
t1=$(now)
java -jar kv-client/target/kv-client.jar --servers "$servers" --hex get "$key" >/dev/null || {
  echo "preloaded key $key missing after the restart" >&2; exit 1; }
t2=$(now)
python3 -c "print('engine %s, %s keys (%s per node on disk), stop by %s: all 24 regions led %.1f s after launch, first read answered at %.1f s' % ('$engine', '$keys', '$du_data', '$mode', $t1-$t0, $t2-$t0))"
