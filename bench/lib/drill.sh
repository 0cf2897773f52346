# Sourced by the drills that load a local cluster (bench/lib/local-cluster.sh, sourced first) while they change it:
#   drill_init NAME     makes $out (/tmp/kv-NAME.XXXXXX) for the drill's own files and sets the EXIT trap: the
#                       benchmark ($bench_pid) stopped, the cluster's PIDs stopped, $out removed (KEEP=1 keeps it, with
#                       the nodes' configs and logs, and prints its path)
#   fail MESSAGE        prints FAIL: MESSAGE and exits 1
#   load, now, since T  the load average as a note; a timestamp; seconds since timestamp T
#   wait_for SECONDS DESCRIPTION COMMAND...
#                       polls COMMAND every second; fails with DESCRIPTION (after `kvc node list`) when it never
#                       succeeds within SECONDS
#   replica_counts LIVE "REGIONS MIN MAX LED": replicas per region on the live nodes LIVE (host:port,...), and how
#                       many regions have a leader, from `kvc regions --json`
#   drill_gc_log        the JVM option that logs a server's GC pauses to $out/gc-PID.log (call after drill_init)
#   drill_gc_pauses     prints the longest GC pauses the servers logged: a second of 0 ops/s, or a client TIMEOUT,
#                       next to a pause of seconds is the collector, not the cluster
# Bash only; written by hand because it is glue between our own jars, nothing a library does.

bench_pid=""

drill_init() {
  out=$(mktemp -d "/tmp/kv-$1.XXXXXX")
  trap drill_cleanup EXIT
}

drill_cleanup() {
  [ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ] && [ -n "${work:-}" ]; then cp "$work"/*.yaml "$work"/*.log "$out/" 2>/dev/null || true; fi
  kv_cluster_cleanup || true
  if [ "${KEEP:-0}" = 1 ]; then echo "work dir kept: $out"; else rm -rf "$out"; fi
} 2>/dev/null

fail() { echo "FAIL: $*" >&2; drill_gc_pauses >&2; exit 1; }

drill_gc_log() { echo "-Xlog:gc:file=$out/gc-%p.log:time"; }
drill_gc_pauses() {
  ls "$out"/gc-*.log >/dev/null 2>&1 || return 0
  python3 - "$out" <<'PY'
import glob, re, sys
pauses = []
for f in glob.glob(sys.argv[1] + "/gc-*.log"):
    pid = re.search(r"gc-(\d+)\.log", f)[1]
    for line in open(f, errors="replace"):
        m = re.search(r"^\[([^\]]+)\].*(Pause \w+(?: \([^)]*\))?).* ([\d.]+)ms$", line)
        if m:
            pauses.append((float(m[3]), m[1][11:23], pid, m[2]))
pauses.sort(reverse=True)
over = [p for p in pauses if p[0] >= 1000]
top = ", ".join(f"{ms / 1000:.1f} s at {t} (pid {pid}, {kind})" for ms, t, pid, kind in pauses[:3])
print(f"drill: servers' GC: {len(pauses)} pauses, {len(over)} of 1 s or more; longest: {top or 'none'}")
PY
}
load() { echo "(load average: $(uptime | sed 's/.*load average: //'))"; }
now() { date +%s.%N; }
since() { python3 -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$1"; }

wait_for() {
  local limit=$1 what=$2 t
  shift 2
  t=$(now)
  while ! "$@"; do
    python3 -c "import sys,time; sys.exit(0 if time.time()-float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$t" "$limit" \
      || { kvc node list || true; fail "$what: not reached in $limit s"; }
    sleep 1
  done
}

replica_counts() {
  kvc regions --json 2>/dev/null | python3 -c '
import json, sys
rs = json.load(sys.stdin)
live = set(sys.argv[1].split(","))
c = [sum(1 for p in r["peers"] if p in live) for r in rs]
print(len(rs), min(c), max(c), sum(1 for r in rs if r["leader"]))' "$1" || echo "0 0 0 0"
}
