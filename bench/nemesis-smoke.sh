#!/usr/bin/env bash
# A short nemesis run per engine, as CI runs it: every fault kind and the split and merge events in turn against a
# local 3-node cluster (MemoryDB with ReadIndex reads, RocksDB with leader-lease reads), then the linearizability,
# lost-write and region-map checks. Exits non-zero on any violation, lost acknowledged write,
# undecided key or missing recovery, and also when a fault kind cannot be injected or was not injected:
# a smoke run that quietly drops faults would pass without testing them.
# Usage: bench/nemesis-smoke.sh [DURATION per engine, default 90s, at least 90s so each of the 8 kinds gets a turn
# (one every 10 s, the last one a kill)]
# NEMESIS_ROCKSDB_FAULTS and NEMESIS_ROCKSDB_DURATION (default: the same as MemoryDB's) give the RocksDB run other
# kinds and time; CI runs it with the kinds that touch the engine or the leader-lease reads (kill, kill-majority,
# pause, split, merge, clock) in 70 s, the network kinds (partition, loss) on MemoryDB only.
# Partition and loss need root (network namespaces); CI runs this as root. To run fewer kinds on purpose
# (say without root), name them: NEMESIS_FAULTS=kill,kill-majority,pause,split,merge,clock bench/nemesis-smoke.sh
# NEMESIS_MEMBERSHIP=1 (off by default) adds a second run per engine on 4 nodes with 3 replicas per region, for
# NEMESIS_MEMBERSHIP_DURATION (default 150s): drain,join,replace,pause,kill (NEMESIS_MEMBERSHIP_FAULTS) in turn:
# a drain, spare node 5 joins (and stays), a node is killed, wiped and started empty (replace), a pause, a kill, ...
# Drains, joins and replaces wait NEMESIS_DRAIN_HOLD (default 10s, a few replica moves) for their replicas, so
# replicas keep moving while the pauses and kills hit; those waits use up the run's time (150 s: 7-9 faults, the
# last a kill; a join or a replace takes 25-40 s on a loaded 2-core machine, most of it the new JVM's start, and
# 100 s then fit only 4, so the pause never came), and at its end the spare is drained and removed (a second join
# event in the run does that earlier), about 30 s more. It fails like the first,
# and also when no drain was taken or a node was left draining, no node joined or the spare was not removed by the
# end, or no replace was taken. NEMESIS_MEMBERSHIP_ENGINES limits it to some engines (default "memory rocksdb"; CI:
# memory). NEMESIS_MEMBERSHIP=only runs the membership runs alone.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-90s}
faults=${NEMESIS_FAULTS:-kill,kill-majority,pause,split,merge,partition,loss,clock}
membership=${NEMESIS_MEMBERSHIP:-0}
membership_faults=${NEMESIS_MEMBERSHIP_FAULTS:-drain,join,replace,pause,kill}
membership_duration=${NEMESIS_MEMBERSHIP_DURATION:-150s}
drain_hold=${NEMESIS_DRAIN_HOLD:-10s}

fail() {
  echo "== nemesis smoke FAILED: $*" >&2
  exit 1
}

wants() {
  { [ "$membership" != only ] && [[ ",$faults,${NEMESIS_ROCKSDB_FAULTS:-}," == *",$1,"* ]]; } \
    || { [ "$membership" != 0 ] && [[ ",$membership_faults," == *",$1,"* ]]; }
}

if wants partition || wants loss; then
  [ "$(id -u)" = 0 ] || fail "partition and loss faults need root (network namespaces), and this is uid $(id -u);" \
    "run as root as CI does, or name the faults to run: NEMESIS_FAULTS=kill,kill-majority,pause,split,merge,clock $0 $duration"
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
# one nemesis run: ENGINE OUT FAULTS [more nemesis options]; sets status=1 when it fails
run() {
  local engine=$1 out=$2 kinds=$3 time=$4 code=0 start=$SECONDS
  shift 4
  echo "== nemesis smoke: $engine, $time, faults $kinds${*:+, $*} (report in $out)"
  java -jar kv-benchmark/target/kv-benchmark.jar nemesis --duration "$time" --engine "$engine" \
      --faults "$kinds" --out "$out" "$@" || code=$?
  echo "== nemesis smoke: $engine, faults $kinds: exit $code after $((SECONDS - start)) s"
  if [ "$code" != 0 ]; then
    echo "== nemesis smoke FAILED for $engine (exit $code: 1 = a violation, lost write, undecided key, no" \
      "recovery or differing region maps; 2 = a fault or option refused); node logs and history in $out" >&2
    status=1
    return
  fi
  # every kind asked for must have been injected at least once (the report's line "faults N injected: kill 2, ...")
  injected=$(grep -m1 '^faults ' "$out/report.txt" || true)
  for kind in ${kinds//,/ }; do
    if [[ "$injected" != *"$kind "[1-9]* ]]; then
      echo "== nemesis smoke FAILED for $engine: no $kind fault was injected ($injected); run longer than $time" >&2
      status=1
    fi
  done
  # a drain must have been taken at least once (drained, or undrained with replicas left), and no node left draining:
  # "drains          3 asked: 1 drained, 2 partly, 0 refused, ...; 9 replicas moved off the drained nodes, every node undrained"
  if [[ ",$kinds," == *",drain,"* ]]; then
    drains=$(grep -m1 '^drains ' "$out/report.txt" || true)
    if [[ ! "$drains" =~ \ ([0-9]+)\ drained,\ ([0-9]+)\ partly ]] \
        || [ $((BASH_REMATCH[1] + BASH_REMATCH[2])) = 0 ]; then
      echo "== nemesis smoke FAILED for $engine: no drain was taken ($drains)" >&2
      status=1
    elif [[ "$drains" != *"every node undrained"* ]]; then
      echo "== nemesis smoke FAILED for $engine: a node was left draining ($drains)" >&2
      status=1
    fi
  fi
  # the spare joined at least once (with or without a replica yet) and was removed by the end:
  # "joins           3 asked: 1 joined, 0 empty, 1 removed, 1 draining, ...; node 5 out of the cluster at the end"
  if [[ ",$kinds," == *",join,"* ]]; then
    joins=$(grep -m1 '^joins ' "$out/report.txt" || true)
    if [[ ! "$joins" =~ \ ([0-9]+)\ joined,\ ([0-9]+)\ empty,\ ([0-9]+)\ removed ]] \
        || [ $((BASH_REMATCH[1] + BASH_REMATCH[2])) = 0 ] || [ "${BASH_REMATCH[3]}" = 0 ]; then
      echo "== nemesis smoke FAILED for $engine: no node joined, or none was removed ($joins)" >&2
      status=1
    elif [[ "$joins" != *"out of the cluster at the end"* ]]; then
      echo "== nemesis smoke FAILED for $engine: the spare node was not removed by the end ($joins)" >&2
      status=1
    fi
  fi
  # a replace was taken (rebuilt, or still rebuilding when its wait ended; the region-map check then wants every
  # region on 3 nodes): "replaces        1 asked: 0 rebuilt, 1 partly, 0 skipped, 0 failed"
  if [[ ",$kinds," == *",replace,"* ]]; then
    replaces=$(grep -m1 '^replaces ' "$out/report.txt" || true)
    if [[ ! "$replaces" =~ \ ([0-9]+)\ rebuilt,\ ([0-9]+)\ partly ]] \
        || [ $((BASH_REMATCH[1] + BASH_REMATCH[2])) = 0 ]; then
      echo "== nemesis smoke FAILED for $engine: no replace was taken ($replaces)" >&2
      status=1
    fi
  fi
}

for engine in memory rocksdb; do
  if [ "$membership" != only ]; then
    # each engine's run in its own read mode, so the smoke checks both linearizable leader reads
    if [ "$engine" = memory ]; then
      run "$engine" "target/nemesis-$engine" "$faults" "$duration" --read-mode read_index
    else
      run "$engine" "target/nemesis-$engine" "${NEMESIS_ROCKSDB_FAULTS:-$faults}" "${NEMESIS_ROCKSDB_DURATION:-$duration}" \
        --read-mode leader_lease
    fi
  fi
  if [ "$membership" != 0 ] && [[ " ${NEMESIS_MEMBERSHIP_ENGINES:-memory rocksdb} " == *" $engine "* ]]; then
    # 4 nodes (and a spare for the joins), 3 replicas per region: replicas move off a drained node and back, onto a
    # joined node and off it again, and onto a replaced node, while the kills and pauses hit
    run "$engine" "target/nemesis-membership-$engine" "$membership_faults" "$membership_duration" --nodes 4 \
      --drain-hold "$drain_hold"
  fi
done
exit $status
