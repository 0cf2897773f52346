#!/usr/bin/env bash
# Where a Raft entry's CPU goes under load (issue #55): a local 3-node cluster (24 regions, MemoryDB, the embedded
# benchmark's server JVM options) under S1's 90/10 load at THREADS x INFLIGHT. In the measured window: each server's
# CPU, context switches and syscalls (perf stat), the Raft entries its leaders proposed, the ReadIndex rounds and the
# AppendEntries it received (its /metrics), per operation and per entry; with --flame also an async-profiler CPU
# profile of every server, summed by thread pool.
#
#   bench/profile.sh [--threads N] [--inflight N] [--warmup S] [--duration S] [--flame] [--keep DIR]
#
# Defaults: 8 threads x 128 in flight (1,024), 40 s warm-up, 30 s measured. --keep DIR keeps the benchmark's
# result, the collapsed stacks (DIR/node-I.collapsed, for flame graphs) and the nodes' logs. Needs perf (Debian
# linux-perf); --flame fetches async-profiler 4.1 from Maven Central once (tools.profiler:async-profiler). Written by
# hand: glue between our jars, perf and the profiler, nothing a library does.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=8 inflight=128 warmup=40 duration=30 flame=0 keep=
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --inflight) inflight=$2; shift 2 ;;
    --warmup) warmup=${2%s}; shift 2 ;;
    --duration) duration=${2%s}; shift 2 ;;
    --flame) flame=1; shift ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "profile: unknown argument '$1'" >&2; sed -n '8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
for v in threads inflight warmup duration; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "profile: --$v must be a positive number, not '${!v}'" >&2; exit 2; }
done
[ "$duration" -ge 10 ] || { echo "profile: --duration must be at least 10 s" >&2; exit 2; }
if [ -n "$keep" ] && [ -d "$keep" ] && [ -n "$(ls -A "$keep")" ]; then
  echo "profile: --keep $keep is not empty: name a new or empty directory" >&2; exit 2
fi
command -v perf >/dev/null || { echo "profile: needs perf (apt-get install linux-perf)" >&2; exit 2; }

source bench/lib/local-cluster.sh
kv_build_jars
bench_pid=
cleanup() {
  [ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null || true
  [ -n "$keep" ] && [ -n "${work:-}" ] && cp "$work"/node-*.log "$keep"/ 2>/dev/null || true
  kv_cluster_cleanup
}
trap cleanup EXIT

lib=
if [ "$flame" = 1 ]; then
  jar=~/.m2/repository/tools/profiler/async-profiler/4.1/async-profiler-4.1.jar
  [ -f "$jar" ] || mvn -q -B dependency:get -Dartifact=tools.profiler:async-profiler:4.1 >/dev/null
fi

kv_cluster_init memory 24
out=${keep:-$work/out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
mports=($(kv_free_ports 3))
for i in 1 2 3; do printf 'metrics:\n  port: %s\n' "${mports[$((i - 1))]}" >>"$work/server-$i.yaml"; done
if [ "$flame" = 1 ]; then
  unzip -q -o -j "$jar" linux-x64/libasyncProfiler.so -d "$work"
  lib=$work/libasyncProfiler.so
fi
kv_cluster_start -Xms256m -Xmx768m -XX:+UseParallelGC
kv_cluster_await_health

echo "profile: S1 at $threads x $inflight in flight, ${warmup} s warm-up, ${duration} s measured; cluster in $work"
java -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" --threads "$threads" --inflight "$inflight" \
  --warmup "${warmup}s" --duration "${duration}s" --out "$out/bench" >"$out/bench.log" 2>&1 &
bench_pid=$!

scrape() { # scrape FILE: every node's metrics, one block a node
  local i
  for i in 1 2 3; do
    echo "# node $i"
    python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
      "http://127.0.0.1:${mports[$((i - 1))]}/metrics"
  done >"$1"
}
# the measured window starts when the benchmark's progress lines stop saying warm-up (after its preload)
for _ in $(seq $(((warmup + 120) * 5))); do
  grep -E '^ +[0-9.]+s ' "$out/bench.log" 2>/dev/null | grep -qv 'warm-up' && break
  kill -0 "$bench_pid" 2>/dev/null || break
  sleep 0.2
done
grep -E '^ +[0-9.]+s ' "$out/bench.log" | grep -qv 'warm-up' \
  || { echo "profile: the benchmark never reached its measured window; its output:" >&2; tail -20 "$out/bench.log" >&2; exit 1; }
window=$((duration - 3))
proc_cpu() { # proc_cpu FILE: each server's utime + stime in clock ticks, all its threads (from /proc)
  local p
  for p in "${pids[@]}"; do awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$p/stat"; done >"$1"
}
scrape "$out/metrics-0.txt"
proc_cpu "$out/cpu-0.txt"
if [ -n "$lib" ]; then
  for p in "${pids[@]}"; do jcmd "$p" JVMTI.agent_load "$lib" "\"start,event=cpu,interval=1ms,threads\"" >/dev/null; done
fi
perf_pids=()
for i in 1 2 3; do
  perf stat -x, -e task-clock,context-switches,raw_syscalls:sys_enter -p "${pids[$((i - 1))]}" -o "$out/perf-$i.csv" \
    -- sleep "$window" &
  perf_pids+=($!)
done
wait "${perf_pids[@]}"
proc_cpu "$out/cpu-1.txt"
scrape "$out/metrics-1.txt"
if [ -n "$lib" ]; then
  for i in 1 2 3; do
    jcmd "${pids[$((i - 1))]}" JVMTI.agent_load "$lib" "\"stop,file=$out/node-$i.collapsed,collapsed\"" >/dev/null
  done
fi
wait "$bench_pid" || { echo "profile: the benchmark failed; its output:" >&2; tail -20 "$out/bench.log" >&2; exit 1; }
bench_pid=

python3 - "$out" "$window" "$(getconf CLK_TCK)" <<'EOF'
import glob, json, re, sys, collections
out, window, tick = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
r = json.load(open(glob.glob(out + "/bench/*.json")[0]))
ops = r["ops"]["total"]["opsPerSec"] * window

def metrics(path):
    per = collections.defaultdict(lambda: collections.Counter())
    node = 0
    for line in open(path):
        if line.startswith("# node "):
            node = int(line.split()[2]); continue
        m = re.match(r"(kv_region_commit_seconds_count|kv_region_read_index_seconds_count|kv_region_apply_seconds_count|kv_node_append_entries_received)(?:_total)?(\{[^}]*\})? ([0-9.eE+]+)", line)
        if m:
            per[node][m[1]] += float(m[3])
    return per
m0, m1 = metrics(out + "/metrics-0.txt"), metrics(out + "/metrics-1.txt")
d = {n: m1[n] - m0[n] for n in (1, 2, 3)}
entries = sum(d[n]["kv_region_commit_seconds_count"] for n in d)
reads = sum(d[n]["kv_region_read_index_seconds_count"] for n in d)

def perf(path):
    v = {}
    for line in open(path):
        f = line.strip().split(",")
        if len(f) > 3 and f[0] not in ("", "<not counted>", "<not supported>"):
            v[f[2]] = float(f[0])
    return v
p = {n: perf(f"{out}/perf-{n}.csv") for n in (1, 2, 3)}
cpu_ms = sum(p[n]["task-clock"] for n in p)
proc = [float(b) - float(a) for a, b in zip(open(out + "/cpu-0.txt"), open(out + "/cpu-1.txt"))]
proc_ms = 1000 * sum(proc) / tick
if abs(cpu_ms - proc_ms) > 0.2 * proc_ms:
    print(f"profile: WARNING: perf counted {cpu_ms / 1000:.1f} s of CPU but /proc says {proc_ms / 1000:.1f} s: perf missed "
          "threads, so its context switches and syscalls are too low; the CPU figures below are /proc's")
cpu_ms = proc_ms
cs = sum(p[n]["context-switches"] for n in p)
sc = sum(p[n]["raw_syscalls:sys_enter"] for n in p)
print(f"window {window:.0f} s: {ops / window:,.0f} ops/s, {entries / window:,.0f} Raft entries/s "
      f"({ops / max(entries, 1):.1f} operations an entry), {reads / window:,.0f} ReadIndex rounds/s, "
      f"the servers at {cpu_ms / 1000 / window:.2f} cores")
print(f"per operation: {cpu_ms * 1000 / ops:.1f} us of server CPU, {cs / ops:.2f} context switches, {sc / ops:.2f} syscalls")
print(f"per entry (all 3 nodes): {cpu_ms / max(entries, 1):.2f} ms of CPU, {cs / max(entries, 1):.1f} context switches, "
      f"{sc / max(entries, 1):.1f} syscalls")
for n in (1, 2, 3):
    print(f"node {n}: {p[n]['task-clock'] / 1000 / window:.2f} cores, {p[n]['context-switches'] / window:,.0f} context switches/s, "
          f"{p[n]['raw_syscalls:sys_enter'] / window:,.0f} syscalls/s, {d[n]['kv_region_commit_seconds_count'] / window:,.0f} entries/s "
          f"proposed, {d[n]['kv_node_append_entries_received'] / window:,.0f} AppendEntries/s received")

stacks = sorted(glob.glob(out + "/node-*.collapsed"))
if stacks:
    pools = collections.Counter()
    total = 0
    for path in stacks:
        for line in open(path):
            stack, _, n = line.rstrip().rpartition(" ")
            thread = re.sub(r"\s*tid=\d+\]?$", "", stack.split(";", 1)[0].strip("[]"))
            thread = re.sub(r"[-_ #]?\d+", "-N", thread)
            pools[thread] += int(n); total += int(n)
    print(f"profile: {total} samples over the 3 nodes; by thread pool (share of the servers' CPU):")
    for t, n in pools.most_common(16):
        print(f"  {100.0 * n / total:5.1f}%  {t}")
EOF
