#!/usr/bin/env bash
# A short nemesis run per engine, as CI runs it: every fault kind and the split and merge events in turn against a
# local 3-node cluster, then the linearizability, lost-write and region-map checks. Exits non-zero on any violation, lost acknowledged write,
# undecided key or missing recovery, and also when a fault kind cannot be injected or was not injected:
# a smoke run that quietly drops faults would pass without testing them.
# Usage: bench/nemesis-smoke.sh [DURATION per engine, default 80s, at least 80s so each of the 7 kinds gets a turn
# (one every 10 s, the last one a kill)]
# Partition and loss need root (network namespaces); CI runs this as root. To run fewer kinds on purpose
# (say without root), name them: NEMESIS_FAULTS=kill,pause,split,merge,clock bench/nemesis-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-80s}
faults=${NEMESIS_FAULTS:-kill,pause,split,merge,partition,loss,clock}

fail() {
  echo "== nemesis smoke FAILED: $*" >&2
  exit 1
}

wants() { [[ ",$faults," == *",$1,"* ]]; }

if wants partition || wants loss; then
  [ "$(id -u)" = 0 ] || fail "partition and loss faults need root (network namespaces), and this is uid $(id -u);" \
    "run as root as CI does, or name the faults to run: NEMESIS_FAULTS=kill,pause,split,merge,clock $0 $duration"
fi
if [ "$(id -u)" = 0 ]; then
  need=()
  if wants partition || wants loss; then
    command -v ip >/dev/null 2>&1 || need+=(iproute2)
    command -v iptables >/dev/null 2>&1 || need+=(iptables)
  fi
  if wants clock; then
    ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || need+=(faketime)
  fi
  if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq || fail "apt-get update failed; cannot install ${need[*]} for the faults $faults"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" \
      || fail "cannot install ${need[*]} for the faults $faults"
  fi
fi
# nemesis itself refuses (exit 2, with the reason) a fault it cannot inject; these say why before the build
if wants partition || wants loss; then
  command -v ip >/dev/null 2>&1 || fail "the partition and loss faults need 'ip' (iproute2)"
  command -v iptables >/dev/null 2>&1 || fail "the partition and loss faults need 'iptables'"
fi
if wants clock; then
  ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || fail "the clock fault needs libfaketime (Debian: faketime)"
fi

if [ ! -f kv-benchmark/target/kv-benchmark.jar ]; then
  mvn -q -B -DskipTests package
fi

status=0
for engine in memory rocksdb; do
  out=target/nemesis-$engine
  echo "== nemesis smoke: $engine, $duration, faults $faults (report in $out)"
  code=0
  java -jar kv-benchmark/target/kv-benchmark.jar nemesis --duration "$duration" --engine "$engine" \
      --faults "$faults" --out "$out" || code=$?
  if [ "$code" != 0 ]; then
    echo "== nemesis smoke FAILED for $engine (exit $code: 1 = a violation, lost write, undecided key, no" \
      "recovery or differing region maps; 2 = a fault or option refused); node logs and history in $out" >&2
    status=1
    continue
  fi
  # every kind asked for must have been injected at least once (the report's line "faults N injected: kill 2, ...")
  injected=$(grep -m1 '^faults ' "$out/report.txt" || true)
  for kind in ${faults//,/ }; do
    if [[ "$injected" != *"$kind "[1-9]* ]]; then
      echo "== nemesis smoke FAILED for $engine: no $kind fault was injected ($injected); run longer than $duration" >&2
      status=1
    fi
  done
done
exit $status
