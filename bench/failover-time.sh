#!/usr/bin/env bash
# Failover time after kill -9 of a leader's node, on an idle cluster (three server JVMs, 24 regions, MemoryDB, the
# default settings: a 5 s election timeout): each round waits --quiet seconds with no load (so idle regions are quiet,
# their jraft heartbeats stretched when raft.nodeHeartbeats is on), kills the node leading the most regions, and reads
# from the surviving nodes' logs when each of its regions had a new leader ("leader now" lines, millisecond
# timestamps). Prints per round the killed node's region count and the first, median and last of those times after
# the kill; then starts the node again and waits for health.
# Usage: bench/failover-time.sh [--rounds N] [--quiet SECONDS] [--yaml TEXT]
#   --rounds  kills, one after another (default 3)
#   --quiet   idle seconds before each kill (default 40)
#   --yaml    YAML appended to each server's config, e.g. 'raft: {nodeHeartbeats: false}' (none by default)
# Exits 0 once all rounds ran (it measures; nothing is judged). Written by hand: glue between our jars, their logs and
# kill, nothing a library does.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3
quiet=40
yaml=
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --quiet) quiet=$2; shift 2 ;;
    --yaml) yaml=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "--rounds must be a positive number, not '$rounds'" >&2; exit 2; }
[[ "$quiet" =~ ^[0-9]+$ ]] || { echo "--quiet must be whole seconds, not '$quiet'" >&2; exit 2; }

# shellcheck source=lib/local-cluster.sh
. bench/lib/local-cluster.sh
trap kv_cluster_cleanup EXIT
kv_build_jars

kv_cluster_init memory 24 "$yaml"
kv_cluster_start
kv_cluster_await_health
echo "failover: memory, 24 regions, extra YAML: ${yaml:-(none)}; quiet ${quiet} s before each kill"

for ((round = 1; round <= rounds; round++)); do
  sleep "$quiet"
  # the node leading the most regions, and those regions
  read -r victim led < <(kvc regions --json 2>/dev/null | python3 -c '
import json, sys, collections
regions = json.load(sys.stdin)
regions = regions.get("regions", regions) if isinstance(regions, dict) else regions
by = collections.defaultdict(list)
for r in regions:
    if r.get("leader"):
        by[r["leader"]].append(str(r["id"]))
node, ids = max(by.items(), key=lambda kv: len(kv[1]))
print(node, ",".join(ids))')
  idx=-1
  for i in "${!nodes[@]}"; do [ "${nodes[$i]}" = "$victim" ] && idx=$i; done
  [ "$idx" -ge 0 ] || { echo "failover: leader $victim is not one of ${nodes[*]}" >&2; exit 1; }
  n=$((idx + 1))
  for i in "${!nodes[@]}"; do wc -l <"$work/node-$((i + 1)).log" >"$work/lines-$((i + 1))"; done
  killed_at=$(date +%s.%N)
  kill -9 "${pids[$idx]}"
  wait "${pids[$idx]}" 2>/dev/null || true
  # "HH:MM:SS.mmm ... region N: leader now, term T" lines written after the kill, on the survivors; polled until each
  # of the killed node's regions has one (up to 120 s): a survivor may still name the dead node as leader meanwhile
  for _ in $(seq 600); do
    report=$(for i in "${!nodes[@]}"; do
      [ "$i" -eq "$idx" ] && continue
      tail -n +"$(($(cat "$work/lines-$((i + 1))") + 1))" "$work/node-$((i + 1)).log"
    done | python3 -c '
import re, sys, datetime, statistics
killed = float(sys.argv[1]); ids = set(sys.argv[2].split(",")); victim = sys.argv[3]; rnd = sys.argv[4]
day = datetime.datetime.fromtimestamp(killed).date()
first = {}
for line in sys.stdin:
    m = re.match(r"(\d\d:\d\d:\d\d\.\d\d\d).*region (\d+): leader now, term", line)
    if m and m.group(2) in ids and m.group(2) not in first:
        t = datetime.datetime.combine(day, datetime.time.fromisoformat(m.group(1))).timestamp()
        first[m.group(2)] = t - killed
times = sorted(first.values())
if len(times) < len(ids):
    print(f"failover: round {rnd}: killed {victim} ({len(ids)} regions led); new leaders {len(times)}/{len(ids)} so far")
    sys.exit(1)
print(f"failover: round {rnd}: killed {victim} ({len(ids)} regions led); new leaders {len(times)}/{len(ids)} after"
      f" {times[0]:.1f} s first, {statistics.median(times):.1f} s median, {times[-1]:.1f} s last")
' "$killed_at" "$led" "$victim" "$round") && break
    sleep 0.2
  done
  echo "$report"
  kv_node_start "$n"
  kv_cluster_await_health
done
