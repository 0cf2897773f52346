#!/usr/bin/env bash
# Runs the reference scenarios (conf/scenarios/s1..s4, and s3b: S3 with the leader's coalescing left on) on a
# fresh local 3-node cluster each, with the same workload, and prints one summary line per run; with --repeat N
# they run N times, interleaved (s1 s2 s3 s3b s4, s1 s2 ...) so that the machine's drift hits them alike, and
# the medians and the ratios of the medians follow.
# Usage: bench/run-scenarios.sh [--repeat N] [--scenarios s1,s3,e] [extra kv-benchmark options, e.g. --inflight 16 --duration 60]
# --scenarios picks scenarios by the name before the first '-' (default: the reference ones, s*); e-memory-scan
# (S1's servers, YCSB E's scans) runs only when named. A scenario's benchmark.args file, if any, holds the options
# of its workload (passed as a picocli @file, before the extra options).
# Defaults: one round; 8 threads x 512 = 4,096 requests in flight, 60 s warm-up (fresh JVMs JIT-compile for
# about a minute on two cores), 30 s measured; pass --warmup to choose another warm-up. A round takes ~14 min.
# Results (full reports and JSON) go to out/scenarios/<scenario>/ (run-K/ with --repeat).
set -euo pipefail
cd "$(dirname "$0")/.."
jar=kv-benchmark/target/kv-benchmark.jar
[ -f "$jar" ] || mvn -q -B -DskipTests package
repeat=1
only=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat=${2:?--repeat needs a count}; shift 2 ;;
    --repeat=*) repeat=${1#--repeat=}; shift ;;
    --scenarios) only=${2:?--scenarios needs names, e.g. s1,e}; shift 2 ;;
    --scenarios=*) only=${1#--scenarios=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
if ! [[ "$repeat" =~ ^[1-9][0-9]*$ ]]; then
  echo "run-scenarios: --repeat must be a positive whole number, got '$repeat'" >&2
  exit 2
fi
# the scenario directories to run: the reference ones (s*), or those --scenarios names
scenarios=()
if [ -z "$only" ]; then
  scenarios=(conf/scenarios/s*/)
else
  IFS=, read -ra names <<<"$only"
  for n in "${names[@]}"; do
    match=(conf/scenarios/"$n"-*/)
    if [ ! -d "${match[0]}" ] || [ "${#match[@]}" -ne 1 ]; then
      echo "run-scenarios: --scenarios: no scenario '$n' (known: $(ls conf/scenarios | sed 's/-.*//' | paste -sd, -))" >&2
      exit 2
    fi
    scenarios+=("${match[0]}")
  done
fi
warmup=(--warmup 60)
for a in "${args[@]+"${args[@]}"}"; do case "$a" in --warmup|--warmup=*) warmup=() ;; esac; done
mkdir -p out/scenarios
results=$(mktemp)
trap 'rm -f "$results"' EXIT
fmt='%-36s %4s %10s %9s %9s %9s %14s %s\n'
printf "$fmt" scenario run ops/s p50_ms p99_ms p99.9_ms server_us/op peak_rss_MiB
for run in $(seq 1 "$repeat"); do
  for s in "${scenarios[@]}"; do
    name=$(basename "$s")
    dir=out/scenarios/$name
    workload=()
    [ -f "$s/benchmark.args" ] && workload=("@${s%/}/benchmark.args")
    [ "$repeat" -gt 1 ] && dir=$dir/run-$run
    mkdir -p "$dir"
    java -jar "$jar" --conf-dir "$s" --out "$dir" --client-id "$name" "${warmup[@]}" \
      "${workload[@]+"${workload[@]}"}" "${args[@]+"${args[@]}"}" \
      >"$dir/report.txt" 2>"$dir/progress.txt" || true
    total=$(grep -m1 -E '^total ' "$dir/report.txt" || true)
    ops=$(awk '{print $9}' <<<"$total"); p50=$(awk '{print $2}' <<<"$total")
    p99=$(awk '{print $4}' <<<"$total"); p999=$(awk '{print $5}' <<<"$total")
    # the measured window's figure: the report prints it first, the whole run's (warm-up included) after it
    cpu=$(sed -n 's/^server CPU: \([0-9.]*\) us per operation.*/\1/p' "$dir/report.txt")
    rss=$(sed -n 's/^peak RSS per node (MiB): //p' "$dir/report.txt")
    printf "$fmt" "$name" "$run" "${ops:-FAILED}" "$p50" "$p99" "$p999" "$cpu" "$rss"
    [ -n "$ops" ] && echo "$name ${ops//,/} $p50 $p99 $p999 ${cpu:-0}" >>"$results"
  done
done
[ "$repeat" -gt 1 ] || exit 0
# column $2 of the runs of scenario $1, median (the mean of the two middle ones for an even count)
median() {
  awk -v s="$1" -v c="$2" '$1 == s {print $c}' "$results" | sort -g |
    awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else if (NR) printf "%.3f\n", (v[NR/2] + v[NR/2+1]) / 2}'
}
echo
printf '%-36s %5s %10s %9s %9s %9s %14s\n' "median of $repeat runs" runs ops/s p50_ms p99_ms p99.9_ms server_us/op
declare -A med
for s in "${scenarios[@]}"; do
  name=$(basename "$s")
  n=$(awk -v s="$name" '$1 == s' "$results" | wc -l)
  med[$name]=$(median "$name" 2)
  printf '%-36s %5s %10s %9s %9s %9s %14s\n' "$name" "$n" "${med[$name]:-FAILED}" "$(median "$name" 3)" \
    "$(median "$name" 4)" "$(median "$name" 5)" "$(median "$name" 6)"
done
ratio() { awk -v a="$2" -v b="$3" -v l="$1" 'BEGIN {if (a > 0 && b > 0) printf "%s = %.2f\n", l, a / b; else print l " = n/a"}'; }
key() { for k in "${!med[@]}"; do if [[ "$k" == "$1"* ]]; then echo "$k"; fi; done; }
s1=$(key s1-); s2=$(key s2-); s3=$(key s3-); s3b=$(key s3b-); s4=$(key s4-)
# the median throughput of scenario key $1, or 0 when no such scenario ran
medof() { if [ -n "$1" ]; then echo "${med[$1]:-0}"; else echo 0; fi; }
echo "ratios of the medians (reference directions: S1/S3 >= 2, S3/S4 >= 1, S1/S2 > 1):"
ratio "  S1/S3" "$(medof "$s1")" "$(medof "$s3")"
ratio "  S3/S4" "$(medof "$s3")" "$(medof "$s4")"
ratio "  S1/S2" "$(medof "$s1")" "$(medof "$s2")"
ratio "  S1/S3b (client batching alone)" "$(medof "$s1")" "$(medof "$s3b")"
