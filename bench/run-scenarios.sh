#!/usr/bin/env bash
# Runs the four reference scenarios (conf/scenarios/s1..s4) one after another on a fresh local
# 3-node cluster each, with the same workload, and prints one summary line per scenario.
# Usage: bench/run-scenarios.sh [extra kv-benchmark options, e.g. --inflight 16 --duration 60]
# Defaults: 8 threads x 512 = 4,096 requests in flight, 60 s warm-up (fresh JVMs JIT-compile for about
# a minute on two cores), 30 s measured; pass --warmup to choose another warm-up.
# Results (full reports and JSON) go to out/scenarios/<scenario>/.
set -euo pipefail
cd "$(dirname "$0")/.."
jar=kv-benchmark/target/kv-benchmark.jar
[ -f "$jar" ] || mvn -q -B -DskipTests package
mkdir -p out/scenarios
warmup=(--warmup 60)
for a in "$@"; do case "$a" in --warmup|--warmup=*) warmup=() ;; esac; done
printf '%-34s %10s %9s %9s %9s %14s %s\n' scenario ops/s p50_ms p99_ms p99.9_ms server_us/op peak_rss_MiB
for s in conf/scenarios/s*/; do
  name=$(basename "$s")
  dir=out/scenarios/$name
  mkdir -p "$dir"
  java -jar "$jar" --conf-dir "$s" --out "$dir" --client-id "$name" "${warmup[@]}" "$@" >"$dir/report.txt" 2>"$dir/progress.txt" || true
  total=$(grep -m1 -E '^total ' "$dir/report.txt" || true)
  ops=$(awk '{print $9}' <<<"$total"); p50=$(awk '{print $2}' <<<"$total")
  p99=$(awk '{print $4}' <<<"$total"); p999=$(awk '{print $5}' <<<"$total")
  cpu=$(sed -n 's/^server CPU: \([0-9.]*\) us per operation.*/\1/p' "$dir/report.txt")
  rss=$(sed -n 's/^peak RSS per node (MiB): //p' "$dir/report.txt")
  printf '%-34s %10s %9s %9s %9s %14s %s\n' "$name" "${ops:-FAILED}" "$p50" "$p99" "$p999" "$cpu" "$rss"
done
