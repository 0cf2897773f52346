#!/usr/bin/env bash
# #24's idle figures: three server JVMs (default 24 regions, MemoryDB) started and left alone; the CPU the three use
# (utime + stime from /proc/PID/stat, so other tenants of the host do not count) in 20 s windows ending 1, 3, 5 and
# 10 minutes after launch, and each node's RSS at the end of each window. The bar: at most 0.05 cores for the three
# from one minute after start on, and RSS flat once started.
# Usage: bench/idle-cost.sh [--engine memory|rocksdb] [--regions N] [--minutes 1,3,5,10] [--server-jvm-arg ARG]...
#                           [--yaml TEXT] [--threads]
#   --server-jvm-arg  an extra JVM argument for the three servers (repeatable; none by default: the JVM's defaults)
#   --yaml            YAML appended to each server's config, e.g. 'raft: {electionHeartbeatFactor: 10}' (none by default)
#   --threads         also print, for each window, the cores by thread name (digits dropped) summed over the nodes
# Prints one line per window and a last line with the bar's verdict; exits 0 either way (it measures, CI does not
# judge speed). Written by hand: glue between our jars and /proc, nothing a library does.
set -euo pipefail
cd "$(dirname "$0")/.."
engine=memory
regions=24
minutes=1,3,5,10
jvm_args=()
yaml=
threads=0
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=$2; shift 2 ;;
    --regions) regions=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --server-jvm-arg) jvm_args+=("$2"); shift 2 ;;
    --server-jvm-arg=*) jvm_args+=("${1#*=}"); shift ;;
    --yaml) yaml=$2; shift 2 ;;
    --threads) threads=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$engine" == memory || "$engine" == rocksdb ]] || { echo "--engine must be memory or rocksdb, not '$engine'" >&2; exit 2; }
[[ "$regions" =~ ^[1-9][0-9]*$ ]] || { echo "--regions must be a positive number, not '$regions'" >&2; exit 2; }
[[ "$minutes" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "--minutes must be a comma-separated list of whole minutes, not '$minutes'" >&2; exit 2; }
[ -f kv-server/target/kv-server.jar ] || mvn -q -B -DskipTests package

# shellcheck source=lib/local-cluster.sh
. bench/lib/local-cluster.sh
trap kv_cluster_cleanup EXIT

hz=$(getconf CLK_TCK)
ticks() { local p t=0; for p in "${pids[@]}"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
# utime + stime of every thread of the nodes, one "name ticks" line each (/proc/PID/task/*/stat; the name is field 2)
thread_ticks() {
  python3 - "$@" <<'PY'
import glob, re, sys
for pid in sys.argv[1:]:
    for f in glob.glob(f"/proc/{pid}/task/*/stat"):
        try:
            s = open(f).read()
        except OSError:
            continue
        name = re.sub(r"[0-9]+", "N", s[s.index("(") + 1:s.rindex(")")])
        fields = s[s.rindex(")") + 2:].split()
        print(name.replace(" ", "_"), int(fields[11]) + int(fields[12]))
PY
}
rss() { local p out=(); for p in "${pids[@]}"; do out+=("$(awk '/^VmRSS/ {printf "%d", $2 / 1024}' "/proc/$p/status")"); done; echo "${out[*]}"; }

kv_cluster_init "$engine" "$regions" "$yaml"
launch=$(date +%s.%N)
kv_cluster_start ${jvm_args[@]+"${jvm_args[@]}"}
kv_cluster_await_health
echo "idle: $engine, $regions regions, server JVM arguments: ${jvm_args[*]:-(none)}, extra YAML: ${yaml:-(none)}, healthy $(python3 -c "import time; print(f'{time.time() - $launch:.1f}')") s after launch; load average $(cut -d' ' -f1-3 /proc/loadavg)"

worst=0
for m in ${minutes//,/ }; do
  end=$(python3 -c "print($launch + $m * 60)")
  begin=$(python3 -c "print($end - 20)")
  wait_s=$(python3 -c "import time; print(max(0.0, $begin - time.time()))")
  sleep "$wait_s"
  [ "$threads" = 1 ] && thread_ticks "${pids[@]}" >"$work/threads-0"
  c0=$(ticks); t0=$(date +%s.%N)
  sleep 20
  c1=$(ticks); t1=$(date +%s.%N)
  [ "$threads" = 1 ] && thread_ticks "${pids[@]}" >"$work/threads-1"
  line=$(python3 -c "
c = ($c1 - $c0) / $hz / ($t1 - $t0)
print(f'{c:.3f}')")
  echo "idle: ${m} min after launch: $line cores for the ${#pids[@]} nodes over 20 s; RSS $(rss) MiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  worst=$(python3 -c "print(max($worst, $line))")
  if [ "$threads" = 1 ]; then
    python3 - "$work/threads-0" "$work/threads-1" "$hz" "$(python3 -c "print($t1 - $t0)")" "$m" <<'PY'
import collections, sys
def load(p):
    d = collections.Counter()
    for line in open(p):
        n, t = line.split()
        d[n] += int(t)
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
hz, secs = int(sys.argv[3]), float(sys.argv[4])
diff = sorted(((b[n] - a.get(n, 0), n) for n in b), reverse=True)
print(f"idle: {sys.argv[5]} min, by thread name: " + ", ".join(f"{n} {t / hz / secs:.3f}" for t, n in diff if t > 0))
PY
  fi
done
python3 -c "
w = $worst
print(f'idle: highest {w:.3f} cores; bar at most 0.050: ' + ('met' if w <= 0.05 else 'not met'))"
