#!/usr/bin/env bash
# The flake loop: every cluster and process test class (those that start an InProcessCluster, a ProcessCluster or
# server processes of their own) RUNS times in a row on a clean clone of HEAD, while the benchmark loads the machine
# beside them (its embedded 3-node cluster, open loop at RATE ops/s). Prints each run's time and failures as it goes,
# then each class's failures over all runs; exits 1 if any class failed once.
# Usage: bench/flake-loop.sh [RUNS] [RATE] [CLASS,...]   (default 10 runs, 20000 ops/s, every such class)
#   CLASS,... narrows it to those test classes (simple names, as Maven's -Dtest takes them).
# RATE 0 runs them without the load. Stops only the benchmark it started (by PID), on failure too. The runs' outputs
# and surefire reports stay in the work dir it names.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
rate=${2:-20000}
only=${3:-}
case "$runs$rate" in *[!0-9]*) echo "usage: $0 [RUNS] [RATE] [CLASS,...]" >&2; exit 2 ;; esac
work=$(mktemp -d /tmp/kv-flake-loop.XXXXXX)
git clone -q . "$work/repo"
cd "$work/repo"
if [ -n "$only" ]; then
  classes=$only
else
  classes=$(grep -rlE 'InProcessCluster\.start|ProcessCluster\.start|new ProcessBuilder\(|BenchmarkMain\.execute\(new String\[\]\{"nemesis"' \
      --include='*Test.java' kv-client/src/test kv-server/src/test kv-benchmark/src/test \
    | sed 's|.*/||; s|\.java$||' | sort -u | paste -sd, -)
fi
[ -n "$classes" ] || { echo "no test classes to run" >&2; exit 2; }
echo "commit $(git log -1 --format='%h %s' | cut -c1-100); outputs in $work"
echo "classes ($(tr ',' '\n' <<<"$classes" | wc -l)): $classes"
mvn -q -B -DskipTests package >"$work/build.txt" 2>&1 || { tail -20 "$work/build.txt"; exit 1; }
bench_pid=
stop_bench() {
  if [ -n "$bench_pid" ]; then
    kill "$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
  fi
}
trap stop_bench EXIT
if [ "$rate" != 0 ]; then
  java -jar kv-benchmark/target/kv-benchmark.jar --rate "$rate" --warmup 0 --duration 24h >"$work/bench.txt" 2>&1 &
  bench_pid=$!
  while ! grep -q 'ops/s' "$work/bench.txt" 2>/dev/null; do
    kill -0 "$bench_pid" 2>/dev/null || { tail -5 "$work/bench.txt"; echo "the benchmark ended early" >&2; exit 1; }
    sleep 2
  done
fi
for i in $(seq 1 "$runs"); do
  t0=$SECONDS
  echo "run $i: start $(date +%T), load average $(uptime | sed 's/.*load average: //')"
  rc=0
  # every module's classes run even when one fails; the reports say which failed
  mvn -B -o test -Dtest="$classes" -Dsurefire.failIfNoSpecifiedTests=false -Dmaven.test.failure.ignore=true \
    >"$work/run-$i.txt" 2>&1 || rc=$?
  mkdir -p "$work/reports-$i"
  for m in kv-client kv-server kv-benchmark; do
    if [ -d "$m/target/surefire-reports" ]; then
      cp -r "$m/target/surefire-reports" "$work/reports-$i/$m"
    fi
  done
  echo "run $i: mvn exit $rc after $(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s"
  grep -E '<<< (FAILURE|ERROR)!$' "$work/run-$i.txt" | grep -v 'Tests run' | sed 's/^/  /' || true
done
stop_bench
if [ -n "$bench_pid" ]; then
  echo "benchmark beside: $(grep -c 'ops/s' "$work/bench.txt") progress lines, last: $(grep 'ops/s' "$work/bench.txt" | tail -1)"
fi
python3 - "$work" "$runs" <<'EOF'
import glob, os, sys, xml.etree.ElementTree as ET
work, runs = sys.argv[1], int(sys.argv[2])
seen, failures = {}, {}
for i in range(1, runs + 1):
    for path in glob.glob(f"{work}/reports-{i}/*/TEST-*.xml"):
        suite = ET.parse(path).getroot()
        name = suite.get('name').rsplit('.', 1)[-1]
        seen[name] = seen.get(name, 0) + 1
        for case in suite.iter('testcase'):
            for problem in case.findall('failure') + case.findall('error'):
                message = ((problem.get('message') or problem.get('type') or '').strip().splitlines() or [''])[0]
                failures.setdefault(name, []).append(f"run {i}: {case.get('name')}: {message[:160]}")
print(f"{'class':<48} runs  failed")
for name in sorted(seen):
    print(f"{name:<48} {seen[name]:4d}  {len(failures.get(name, [])):6d}")
    for line in failures.get(name, []):
        print(f"    {line}")
total = sum(len(v) for v in failures.values())
print(f"{len(seen)} classes, {runs} runs: {total} failed tests")
sys.exit(1 if total else 0)
EOF
