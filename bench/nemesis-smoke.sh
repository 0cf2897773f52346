#!/usr/bin/env bash
# A short nemesis run per engine, as CI runs it: every fault kind in turn against a local 3-node
# cluster, then the linearizability check. Exits non-zero on any violation, lost acknowledged write,
# undecided key or missing recovery. Usage: bench/nemesis-smoke.sh [DURATION per engine, default 60s]
# Partition and loss need root (network namespaces); without root only kill, pause and clock run.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-60s}

if [ "$(id -u)" = 0 ]; then
  need=()
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
  command -v iptables >/dev/null 2>&1 || need+=(iptables)
  ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || need+=(faketime)
  if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
  fi
  faults=kill,pause,partition,loss,clock
else
  faults=kill,pause,clock
fi

if [ ! -f kv-benchmark/target/kv-benchmark.jar ]; then
  mvn -q -B -DskipTests package
fi

status=0
for engine in memory rocksdb; do
  out=target/nemesis-$engine
  echo "== nemesis smoke: $engine, $duration, faults $faults (report in $out)"
  if ! java -jar kv-benchmark/target/kv-benchmark.jar nemesis --duration "$duration" --engine "$engine" \
      --faults "$faults" --out "$out"; then
    echo "== nemesis smoke FAILED for $engine; node logs and history in $out"
    status=1
  fi
done
exit $status
