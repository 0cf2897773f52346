#!/usr/bin/env bash
# Issue #26's bar: the README's test command (`mvn -B test`) RUNS times in a row on a clean clone of HEAD while the
# benchmark loads the machine beside it (its embedded 3-node cluster, open loop at RATE ops/s). Prints each run's
# exit code, time, load average and failing tests; the runs' outputs stay in the work dir it names.
# Usage: bench/suite-beside-load.sh [RUNS] [RATE]   (default 3 runs, 20000 ops/s)
#   MVN_ARGS="-Dtest.forks=2" bench/suite-beside-load.sh 3   passes more options to each `mvn -B test`
# Stops only the benchmark it started (by PID), on failure too.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
rate=${2:-20000}
case "$runs$rate" in *[!0-9]*) echo "usage: $0 [RUNS] [RATE]" >&2; exit 2 ;; esac
work=$(mktemp -d /tmp/kv-suite-load.XXXXXX)
git clone -q . "$work/repo"
cd "$work/repo"
echo "commit $(git log -1 --format='%h %s' | cut -c1-100); outputs in $work"
mvn -q -B -DskipTests package >"$work/build.txt" 2>&1 || { tail -20 "$work/build.txt"; exit 1; }
java -jar kv-benchmark/target/kv-benchmark.jar --rate "$rate" --warmup 0 --duration 24h >"$work/bench.txt" 2>&1 &
bench_pid=$!
trap 'kill "$bench_pid" 2>/dev/null; wait "$bench_pid" 2>/dev/null || true' EXIT
while ! grep -q 'ops/s' "$work/bench.txt" 2>/dev/null; do
  kill -0 "$bench_pid" 2>/dev/null || { tail -5 "$work/bench.txt"; echo "the benchmark ended early" >&2; exit 1; }
  sleep 2
done
failed=0
for i in $(seq 1 "$runs"); do
  t0=$SECONDS
  echo "run $i: start $(date +%T), load average $(uptime | sed 's/.*load average: //')"
  rc=0
  # shellcheck disable=SC2086 # MVN_ARGS: options, split on purpose
  mvn -B test ${MVN_ARGS:-} >"$work/run-$i.txt" 2>&1 || rc=$?
  echo "run $i: exit $rc after $(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s, load average $(uptime | sed 's/.*load average: //')"
  grep -E '^\[(INFO|ERROR)\] Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$' "$work/run-$i.txt" | sed 's/^/  /' || true
  grep -E '<<< (FAILURE|ERROR)!$' "$work/run-$i.txt" | grep -v 'Tests run' | sed 's/^/  /' || true
  [ "$rc" = 0 ] || failed=$((failed + 1))
done
echo "benchmark beside: $(grep -c 'ops/s' "$work/bench.txt") progress lines, last: $(grep 'ops/s' "$work/bench.txt" | tail -1)"
echo "$((runs - failed)) of $runs runs green"
[ "$failed" = 0 ]
