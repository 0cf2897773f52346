#!/usr/bin/env bash
# Region split and merge drills of issue #20 on real 3-node clusters (server JVMs in temp dirs on free loopback ports,
# bench/lib/local-cluster.sh), a fresh cluster for each phase, engine and run. Phases (all by default, in this order):
#  auto        1 region at start, split.maxKeys MAXKEYS, split.checkIntervalMs 1000; KEYS fresh keys put by the
#              benchmark with --record-acked (open loop at RATE puts/s, 4 x 256 in flight at most, runs sized to
#              the puts still missing, until that many are recorded); then wait until at least MIN_REGIONS regions
#              exist, their count has not changed for 15 s, every region has a leader and the leaders are spread
#              within 1 per node (all from `kv-client regions --json`). Prints the region count, how long the
#              splits took, leaders per node, keys per region (exact: one scan of all keys, bucketed by the
#              regions' ranges); then kill -9 of all three nodes, a restart, the time to health, the region
#              count once every region listed before the kill is back and all are led (within 120 s; a region
#              more is accepted only when an automatic split after the restart made it: the limits are checked
#              again then, and RocksDB's key estimate moves when memtables are flushed; it is printed with the
#              split's reason), and `kv-benchmark verify --acked` of every recorded put.
#              Full: 1,000,000 keys at 10,000/s, maxKeys 55,000, >= 16 regions. --short: 50,000 keys at
#              5,000/s, maxKeys 5,000, >= 8 regions.
#  storm       MemoryDB, 1 region at start, the default benchmark (8 x 512 in flight, 90% put / 10% get, 100,000
#              keys); after its warm-up regions are split by hand (`kv-client split`, at the middle key, breadth
#              first: 1 -> 2 -> 4 -> 8 -> 16) one every few seconds (start to start) until 16 regions.
#              From the per-second progress lines: errors, median ops/s, the lowest second as a fraction of the
#              median (issue #20's bar: >= 0.5), the same over the seconds after the last split, and the regions
#              at the end. Full: 20 s warm-up, 150 s measured, a split every 5 s. --short: 10 s, 60 s, every 3 s.
#              (The splits go through one `kv-client batch` JVM started before the first, so no JVM start competes
#              with the cluster for these cores in the second a split is measured.)
#  merge       MemoryDB, 1 region at start split by hand into 16 at even keys before the load; the default benchmark;
#              after its warm-up adjacent regions are merged by hand (`kv-client merge`, one pair every few seconds,
#              start to start) until 1 region is left or the run ends; then the rest without load. Figures as
#              for storm: errors, median ops/s, the lowest second as a fraction of the median, merges under load
#              and in all, refused ones, regions at the end (must be 1). Full: 20 s warm-up, 150 s measured, a
#              merge every 5 s. --short: 10 s, 60 s, every 3 s. (Each merge is one CLI JVM.)
#  throughput  S1's shape (MemoryDB, split.enabled false, the default benchmark, 8 x 512 in flight) against
#              (a) 24 regions configured at start and (b) 1 region split by hand 23 times at the same keys as the
#              configured layout (the 2-byte prefixes floor(i * 65536 / 24), i = 1..23), leaders balanced in both;
#              ROUNDS rounds, a and b interleaved (a first in odd rounds, b first in even ones); ops/s of each,
#              the medians and b/a (issue #20's bar: >= 0.9). Full: 60 s warm-up, 30 s measured, 1 round.
#              --short: 10 s warm-up, 10 s measured.
#  idle        MemoryDB, 24, 96 and 384 regions configured, no load: after SETTLE s, the three server processes'
#              utime + stime (/proc/PID/stat) over 20 s: cores used and cores per region. Full: 180 s settling.
#              --short: 30 s.
# Every figure line starts with the phase's name; `uptime`'s load average is printed before each measurement
# (the machine may be shared). Exits 1 (FAIL) when a check fails: errors, a missing/wrong acknowledged write,
# too few regions, leaders not spread, another region count 120 s after the restart, the cluster not healthy in time
# (checks after which a phase can go on print "FAIL (going on)" and the run goes on). The bars (0.5, 0.9) are printed, not
# enforced: on a shared 2-core machine one run is noise. Stops only the processes it started.
# Usage: bench/split-drill.sh [--short] [--engines memory,rocksdb] [--rounds N] [auto] [storm] [merge] [throughput] [idle]
#   --engines   engines of the auto phase (default: rocksdb,memory)
#   --rounds    rounds of the throughput phase (default 1)
# Environment: KEEP=1 keeps the work dir (logs, benchmark outputs) and prints its path.
set -euo pipefail
cd "$(dirname "$0")/.."
short=0
engines=rocksdb,memory
rounds=1
phases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --short) short=1 ;;
    --engines) engines=$2; shift ;;
    --engines=*) engines=${1#*=} ;;
    --rounds) rounds=$2; shift ;;
    --rounds=*) rounds=${1#*=} ;;
    auto|storm|merge|throughput|idle) phases+=("$1") ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#phases[@]} -gt 0 ] || phases=(auto storm merge throughput idle)
IFS=, read -r -a engine_list <<<"$engines"
for e in "${engine_list[@]}"; do
  case "$e" in memory|rocksdb) ;; *) echo "engines must be memory or rocksdb" >&2; exit 2 ;; esac
done
case "$rounds" in '' | *[!0-9]* | 0) echo "--rounds needs a positive number" >&2; exit 2 ;; esac

. bench/lib/local-cluster.sh
for j in kv-server/target/kv-server.jar kv-client/target/kv-client.jar kv-benchmark/target/kv-benchmark.jar; do
  [ -f "$j" ] || mvn -q -B -o -DskipTests package
done
out=$(mktemp -d /tmp/kv-split-drill.XXXXXX)
bg_pids=()
cleanup() {
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ] && [ -n "${work:-}" ] && [ -n "${cluster_name:-}" ]; then
    mkdir -p "$out/$cluster_name"; cp "$work"/*.yaml "$work"/*.log "$out/$cluster_name/" 2>/dev/null || true
  fi
  kv_cluster_cleanup || true # it returns 1 when no cluster is up (work empty)
  if [ "${KEEP:-0}" = 1 ]; then echo "work dir kept: $out"; else rm -rf "$out"; fi
} 2>/dev/null
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
failed=()
check_failed() { echo "FAIL (going on): $*" >&2; failed+=("$*"); } # a failed check after which the phase can go on
load() { echo "(load average: $(uptime | sed 's/.*load average: //'))"; }
now() { date +%s.%N; }
secs_since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
server_jvm=(-Xms256m -Xmx768m -XX:+UseParallelGC ${SERVER_JVM_EXTRA:-})
# the CLI with a cheaper JVM start (C1 only, serial GC), for the storm's splits under load
kvc_quick() { java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -jar kv-client/target/kv-client.jar --servers "$servers" "$@"; }
bench() { java -Xmx1g -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" "$@"; }
ops_per_sec() { awk '$1 == "total" && NF == 9 {print $9}' "$1"; }
errors_of() { awk '$1 == "total" && $3 == "error" {e += $2} END {print e + 0}' "$@"; } # benchmark reports' errors

# start NAME ENGINE REGIONS [YAML]: a fresh cluster, healthy; its files move to $out/NAME when it stops
cluster_name=""
start() {
  cluster_name=$1
  kv_cluster_init "$2" "$3" "${4:-}"
  kv_cluster_start "${server_jvm[@]}"
  kv_cluster_await_health || fail "$cluster_name: cluster not healthy; logs in $work"
}
# stop: kill -9 the cluster's nodes, keep its logs in $out/NAME (for KEEP=1), remove its data
stop() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
  mkdir -p "$out/$cluster_name"
  cp "$work"/*.yaml "$work"/*.log "$out/$cluster_name/" 2>/dev/null || true
  rm -rf "$work"
  work=""
}

# regions_summary: "COUNT LED A/B/C SPREAD MIN_EPOCH_ID" from `regions --json` (SPREAD = max - min leaders per node)
regions_summary() {
  kvc regions --json 2>/dev/null | python3 -c '
import json, sys
rs = json.load(sys.stdin)
nodes = sys.argv[1].split(",")
per = [sum(1 for r in rs if r["leader"] == n) for n in nodes]
led = sum(1 for r in rs if r["leader"])
low = min(rs, key=lambda r: (r["epoch"], r["id"]))
print(len(rs), led, "/".join(map(str, per)), max(per) - min(per), low["id"])' "$servers"
}

# wait_converged MIN TIMEOUT: until >= MIN regions, all led, leaders within 1 per node, count unchanged for 15 s;
# sets conv_count, conv_per_node, conv_last_change (epoch seconds of the last count change seen)
wait_converged() {
  local min=$1 timeout=$2 t_end count led per spread _ last=-1 stable_since
  t_end=$(($(date +%s) + timeout))
  stable_since=$(now)
  conv_last_change=$(now)
  while [ "$(date +%s)" -lt "$t_end" ]; do
    if read -r count led per spread _ < <(regions_summary); then
      if [ "$count" != "$last" ]; then
        [ "$last" = -1 ] || conv_last_change=$(now)
        last=$count
        stable_since=$(now)
      fi
      if [ "$count" -ge "$min" ] && [ "$led" = "$count" ] && [ "$spread" -le 1 ] \
        && python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) - float(sys.argv[1]) >= 15 else 1)" \
          "$stable_since" "$(now)"; then
        conv_count=$count
        conv_per_node=$per
        return 0
      fi
    fi
    sleep 1
  done
  echo "last seen: ${count:-?} regions, ${led:-?} led, leaders per node ${per:-?}" >&2
  return 1
}

phase_auto() {
  local engine=$1 keys max_keys min_regions rate acked t0 t_load round r0 count led per spread _
  if [ "$short" = 1 ]; then keys=50000; max_keys=5000; min_regions=8; rate=5000
  else keys=1000000; max_keys=55000; min_regions=16; rate=10000; fi
  start "auto-$engine" "$engine" 1 "split:
  enabled: true
  maxKeys: $max_keys
  checkIntervalMs: 1000"
  echo "auto ($engine): 1 region, split.maxKeys $max_keys, putting $keys fresh keys with --record-acked ... $(load)"
  acked="$out/auto-$engine-acked.txt"
  : >"$acked"
  # a watcher: the region count every second, with the time since the load started
  t0=$(now)
  ( while true; do
      read -r count led per spread _ < <(regions_summary) && echo "$(secs_since "$t0") $count $led $per"
      sleep 1
    done >"$out/auto-$engine-regions.txt" 2>/dev/null ) &
  bg_pids+=($!)
  # open-loop runs at RATE puts/s sized to the puts still missing, until KEYS puts are recorded
  round=0
  local have=0
  while [ "$have" -lt "$keys" ]; do
    round=$((round + 1))
    bench --keys 1000 --read-ratio 0 --rate "$rate" --duration $(((keys - have + rate - 1) / rate)) --warmup 0 \
      --threads 4 --inflight 256 --record-acked "$acked" --max-error-rate 1 >"$out/auto-$engine-load-$round.txt" 2>&1 \
      || fail "auto ($engine): load round $round; see $out (KEEP=1 keeps it)"
    have=$(wc -l <"$acked")
  done
  t_load=$(secs_since "$t0")
  echo "auto ($engine): $have acknowledged puts in $t_load s ($round benchmark run(s) at $rate puts/s, open loop), errors: $(errors_of "$out"/auto-"$engine"-load-*.txt)"
  wait_converged "$min_regions" 600 || fail "auto ($engine): regions did not converge; logs in $work"
  kill "${bg_pids[-1]}" 2>/dev/null; wait "${bg_pids[-1]}" 2>/dev/null || true; unset 'bg_pids[-1]'
  python3 - "$out/auto-$engine-regions.txt" "$conv_last_change" "$t0" "$t_load" "$engine" "$conv_count" "$conv_per_node" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
last_change = float(sys.argv[2]) - float(sys.argv[3])
first = next((float(r[0]) for r in rows if int(r[1]) > 1), float("nan"))
eng, count, per = sys.argv[5], sys.argv[6], sys.argv[7]
print(f"auto ({eng}): {count} regions (from 1); first split seen {first:.0f} s after the load started, last "
      f"{last_change:.0f} s after it (the load took {float(sys.argv[4]):.0f} s); leaders per node {per}")
PY
  kvc regions --json >"$out/auto-$engine-regions.json"
  kvc --hex scan "" --keys-only --page-size 1000 | python3 -c '
import bisect, json, statistics, sys
rs = sorted(json.load(open(sys.argv[1])), key=lambda r: r["startKey"])
starts = [bytes.fromhex(r["startKey"]) for r in rs]
n = [0] * len(rs)
for line in sys.stdin:
    n[bisect.bisect_right(starts, bytes.fromhex(line.strip())) - 1] += 1
print(f"auto ({sys.argv[2]}): {sum(n)} keys; keys per region (exact, by scan): min {min(n)}, median {statistics.median(n):.0f}, "
      f"max {max(n)}; split.maxKeys {sys.argv[3]}; regions over it: {sum(1 for x in n if x > int(sys.argv[3]))}")' \
    "$out/auto-$engine-regions.json" "$engine" "$max_keys"
  # the reference for after the restart is the count now: a split may still have come after the count settled
  local before
  kvc regions --json >"$out/auto-$engine-before.json" 2>/dev/null || true
  read -r before _ < <(regions_summary) || before=$conv_count
  [ "$before" = "$conv_count" ] || echo "auto ($engine): $before regions just before the kill (one more split since they settled)"
  conv_count=$before
  echo "auto ($engine): kill -9 of all three nodes, restart ..."
  local p f
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  local log_lines=()
  for f in "$work"/node-*.log; do log_lines+=("$(wc -l <"$f")"); done
  r0=$(now)
  kv_cluster_start "${server_jvm[@]}"
  kv_cluster_await_health || fail "auto ($engine): not healthy after the restart; logs in $work"
  read -r count led per spread _ < <(regions_summary)
  echo "auto ($engine): healthy $(secs_since "$r0") s after the restart: $count regions, $led led, leaders per node $per"
  # a region split off another starts when its parent's replay passes the split (with MemoryDB, once the parent has
  # a leader again): every region is back when each one listed before the kill is listed again and all are led,
  # which may take a while after health
  local t_back=$(($(date +%s) + 120)) missing=x extra=-
  count=0 led=-1
  while [ "$(date +%s)" -lt "$t_back" ]; do
    read -r count led missing extra < <(kvc regions --json 2>/dev/null | python3 -c '
import json, sys
before = {r["id"] for r in json.load(open(sys.argv[1]))}
rs = json.load(sys.stdin)
after = {r["id"] for r in rs}
extra = ",".join(map(str, sorted(after - before))) or "-"
print(len(rs), sum(1 for r in rs if r["leader"]), len(before - after), extra)' "$out/auto-$engine-before.json") || true
    [ "$missing" = 0 ] && [ "$led" = "$count" ] && break
    sleep 1
  done
  read -r count led per spread _ < <(regions_summary) || true
  echo "auto ($engine): $count regions, $led led, $(secs_since "$r0") s after the restart (leaders per node $per)"
  if [ "$missing" != 0 ]; then
    check_failed "auto ($engine): $missing of the $conv_count regions before the kill not back (or not led) 120 s after the restart"
  fi
  if [ "$extra" != - ] && [ "$missing" = 0 ]; then
    # the region limits are checked again after the restart: a region that was near split.maxKeys (RocksDB's
    # estimate moves when its memtable is flushed) may split then, which is a new split, not a lost one; anything
    # else is a region that should not exist
    # the node logs' lines since the restart (the logs are appended to)
    local i=0
    for f in "$work"/node-*.log; do
      tail -n +"$((log_lines[i] + 1))" "$f" | sed "s|^|$(basename "$f" .log) |"
      i=$((i + 1))
    done >"$out/auto-$engine-after-restart.log"
    if python3 - "$out/auto-$engine-after-restart.log" "$extra" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
ok = True
for child in sys.argv[2].split(","):
    took = next((l for l in lines if re.search(r"split at index \d+: keeps .*, region %s takes" % child, l)), None)
    parent = re.search(r"region (\d+): split at index", took).group(1) if took else None
    why = parent and next((l for l in lines if re.search(r"region %s .*: splitting it at its middle key \(" % parent, l)), None)
    if why:
        print(f"auto: region {child} split off region {parent} after the restart: {why.split('(', 1)[1].rstrip(')')}")
    else:
        print(f"auto: region {child} is new after the restart, with no automatic split after it that made it")
        ok = False
sys.exit(0 if ok else 1)
PY
    then
      echo "auto ($engine): every region before the kill is back; the extra ones are automatic splits made after the restart"
    else
      check_failed "auto ($engine): regions after the restart that no split after it made ($extra); see $out/auto-$engine-after-restart.log (KEEP=1)"
    fi
  fi
  if [ "$missing" != 0 ] || [ "$extra" != - ]; then
    # say which regions differ and when each node decided and applied its splits
    kvc regions --json 2>/dev/null | python3 -c '
import json, sys
before = {r["id"]: r for r in json.load(open(sys.argv[1]))}
after = {r["id"]: r for r in json.load(sys.stdin)}
for i in sorted(set(before) ^ set(after)):
    r = after.get(i) or before[i]
    side = "only after" if i in after else "only before"
    print("  region %d %s the restart: [%s, %s) epoch %d" % (i, side, r["startKey"], r["endKey"], r["epoch"]))
' "$out/auto-$engine-before.json" || true
    echo "  kill at $(date -d "@$r0" +%T 2>/dev/null || echo "$r0"); the last split lines of each node's log:"
    for f in "$work"/node-*.log; do
      grep -h "splitting it at\|: split at index" "$f" | tail -3 | sed "s|^|  $(basename "$f"): |" || true
    done
  fi
  java -jar kv-benchmark/target/kv-benchmark.jar verify --acked "$acked" --servers "$servers" >"$out/auto-$engine-verify.txt" 2>&1 \
    || { head -20 "$out/auto-$engine-verify.txt"; check_failed "auto ($engine): verify --acked"; }
  echo "auto ($engine): verify --acked: $(grep checked "$out/auto-$engine-verify.txt")"
  stop
}

phase_storm() {
  local warmup duration every count led per spread low bench_pid t_last_split n=0 split_at
  if [ "$short" = 1 ]; then warmup=10; duration=60; every=3; else warmup=20; duration=150; every=5; fi
  start storm memory 1 "split:
  enabled: false"
  echo "storm: MemoryDB, 1 region, the default benchmark, ${warmup} s warm-up + ${duration} s, a split by hand every ${every} s after the warm-up until 16 regions $(load)"
  # java itself in the background (not the bench function's subshell), so $! is the PID to stop on a failure
  java -Xmx1g -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" --warmup "$warmup" --duration "$duration" \
    >"$out/storm-bench.txt" 2>&1 &
  bench_pid=$!
  bg_pids+=($bench_pid)
  # the warm-up starts after the preload: wait for the first progress line, then for the warm-up's end
  while ! grep -q 'ops/s' "$out/storm-bench.txt" 2>/dev/null; do
    kill -0 "$bench_pid" 2>/dev/null || fail "storm: the benchmark ended early; $(tail -3 "$out/storm-bench.txt")"
    sleep 0.2
  done
  sleep "$warmup"
  : >"$out/storm-splits.txt"
  # one CLI JVM for all splits (kv-client batch), started before the first: a JVM start per split would take
  # CPU from the cluster on these same cores in the very second the split is measured
  mkfifo "$out/storm-cli.fifo"
  java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -jar kv-client/target/kv-client.jar --servers "$servers" batch --status \
    <"$out/storm-cli.fifo" >"$out/storm-cli.out" 2>"$out/storm-cli.err" &
  local cli_pid=$!
  bg_pids+=($cli_pid)
  exec 7>"$out/storm-cli.fifo"
  # storm_split REGION: runs `split REGION` in that JVM; prints its output, returns its exit code
  storm_split() {
    local before code
    before=$(grep -c '^# exit' "$out/storm-cli.out" || true)
    echo "split $1" >&7
    while [ "$(grep -c '^# exit' "$out/storm-cli.out" || true)" -le "$before" ]; do
      kill -0 "$cli_pid" 2>/dev/null || { echo "the batch CLI ended: $(tail -2 "$out/storm-cli.err")"; return 1; }
      sleep 0.05
    done
    awk -v n="$before" '/^# exit/ {c++; next} c == n' "$out/storm-cli.out"
    code=$(grep '^# exit' "$out/storm-cli.out" | tail -1 | awk '{print $3}')
    [ "$code" = 0 ] || { tail -1 "$out/storm-cli.err"; return 1; }
  }
  # breadth first: split the region at the queue's head at its middle key, queue both halves at the tail
  local queue=(1) region t_split new
  while kill -0 "$bench_pid" 2>/dev/null && [ "$n" -lt 15 ]; do
    region=${queue[0]}; queue=("${queue[@]:1}")
    t_split=$(now)
    split_at=$(grep -o '^ *[0-9.]*s ' "$out/storm-bench.txt" | tail -1 | tr -d ' s')
    if new=$(storm_split "$region" 2>&1); then
      n=$((n + 1))
      echo "$new" >>"$out/storm-splits.txt"
      echo "split $n of region $region launched at benchmark time $split_at s, done at $(grep -o '^ *[0-9.]*s ' "$out/storm-bench.txt" | tail -1 | tr -d ' s') s" >>"$out/storm-splits.txt"
      t_last_split=$split_at
      queue+=("$region" "$(echo "$new" | awk '$1 == "region" {print $2}' | sed -n 2p)")
    else
      echo "split of region $region failed at benchmark time $split_at s: $new" >>"$out/storm-splits.txt"
      queue=("$region" "${queue[@]}")
    fi
    python3 -c "import sys, time; time.sleep(max(0, float(sys.argv[2]) - (time.time() - float(sys.argv[1]))))" "$t_split" "$every"
  done
  exec 7>&- # the batch CLI reads the end of its input and exits
  wait "$cli_pid" 2>/dev/null || true
  wait "$bench_pid" || echo "storm: the benchmark exited non-zero: $(grep -i 'error rate\|exceed' "$out/storm-bench.txt" | head -2)"
  unset 'bg_pids[-1]' 'bg_pids[-1]'
  read -r count led per spread _ < <(regions_summary)
  python3 - "$out/storm-bench.txt" "$n" "$count" "$per" "${t_last_split:-0}" "$(grep -c failed "$out/storm-splits.txt" || true)" "$((warmup + duration))" <<'PY'
import re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
pat = re.compile(r'^\s*([\d.]+)s\s+([\d,]+) ops/s\s+errors ([\d,]+)')
rows = [(float(m[1]), float(m[2].replace(',', '')), int(m[3].replace(',', ''))) for m in map(pat.match, lines)
        if m and 'warm-up' not in m.string]
# the measurement only: not the drain's partial interval after its end
rows = [r for r in rows if r[0] <= float(sys.argv[7]) + 0.5]
# nor the drain's last line (a part of a second, printed 0.2 s or more after the last whole one)
rows = [r for i, r in enumerate(rows) if i == 0 or r[0] - rows[i - 1][0] >= 0.9]
ops = [r[1] for r in rows]
med = statistics.median(ops)
low_i = min(range(len(ops)), key=ops.__getitem__)
errors = rows[-1][2] if rows else -1
total = [l for l in lines if l.split()[:1] == ['total'] and len(l.split()) == 9]
last_split = float(sys.argv[5])
after = [r[1] for r in rows if r[0] > last_split + 1]
print(f"storm: {sys.argv[2]} splits by hand ({sys.argv[6]} refused), {sys.argv[3]} regions at the end, leaders per node {sys.argv[4]}")
print(f"storm: {len(ops)} measured seconds: errors {errors}; median {med:,.0f} ops/s; lowest second {ops[low_i]:,.0f} ops/s "
      f"at {rows[low_i][0]:.0f} s = {ops[low_i] / med:.2f} of the median (bar: >= 0.5); run average {total[0].split()[8] if total else '?'} ops/s")
if after:
    print(f"storm: after the last split (from {last_split + 1:.0f} s): median {statistics.median(after):,.0f} ops/s, lowest "
          f"{min(after):,.0f} = {min(after) / statistics.median(after):.2f} of that median")
print("storm: ops/s per second: " + " ".join(f"{o / 1000:.0f}k" for o in ops))
print("storm: splits launched at benchmark seconds: " + " ".join(l.split()[9] for l in open(sys.argv[1].replace("bench", "splits")) if l.startswith("split ") and "launched" in l))
PY
  local errors
  errors=$(errors_of "$out/storm-bench.txt")
  [ "$errors" = 0 ] || check_failed "storm: $errors errors; see $out/storm-bench.txt (KEEP=1 keeps it)"
  [ "$count" -ge 16 ] || check_failed "storm: only $count regions at the end"
  stop
  # from the nodes' logs: how long each new region had no leader (its split's first apply to its first leader)
  python3 - "$out/storm"/node-*.log <<'PY'
import re, statistics, sys
first_split, first_leader = {}, {}
for f in sys.argv[1:]:
    for l in open(f):
        m = re.match(r'(\d\d):(\d\d):(\d\d\.\d+) .*region \d+: split at index \d+: .* region (\d+) takes', l)
        if m:
            t = int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3])
            first_split[m[4]] = min(t, first_split.get(m[4], t))
        m = re.match(r'(\d\d):(\d\d):(\d\d\.\d+) .*region (\d+): leader now', l)
        if m:
            t = int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3])
            first_leader[m[4]] = min(t, first_leader.get(m[4], t))
gaps = [first_leader[r] - t for r, t in first_split.items() if r in first_leader]
if gaps:
    print(f"storm: a new region had no leader for {min(gaps):.1f}-{max(gaps):.1f} s (median {statistics.median(gaps):.1f}) after "
          f"its split applied (node logs: 'split at index' to 'leader now'), over {len(gaps)} splits")
PY
}

phase_merge() {
  local warmup duration every bench_pid n=0 refused=0 t_merge at count led per spread k pair
  if [ "$short" = 1 ]; then warmup=10; duration=60; every=3; else warmup=20; duration=150; every=5; fi
  start merge memory 1 "split:
  enabled: false"
  # 16 regions at even 2-byte prefixes, highest first: region 1 keeps [start, key), so each split is of region 1
  for k in $(python3 -c 'print(" ".join(f"{i * 65536 // 16:04x}" for i in range(15, 0, -1)))'); do
    kvc --hex split 1 --at "$k" >>"$out/merge-splits.txt" 2>&1 || fail "merge: split 1 --at $k"
  done
  wait_converged 16 300 || fail "merge: 16 regions not led and balanced"
  echo "merge: MemoryDB, 16 regions, the default benchmark, ${warmup} s warm-up + ${duration} s, a merge of two adjacent regions by hand every ${every} s after the warm-up until 1 region $(load)"
  java -Xmx1g -jar kv-benchmark/target/kv-benchmark.jar --servers "$servers" --warmup "$warmup" --duration "$duration" \
    >"$out/merge-bench.txt" 2>&1 &
  bench_pid=$!
  bg_pids+=($bench_pid)
  while ! grep -q 'ops/s' "$out/merge-bench.txt" 2>/dev/null; do
    kill -0 "$bench_pid" 2>/dev/null || fail "merge: the benchmark ended early; $(tail -3 "$out/merge-bench.txt")"
    sleep 0.2
  done
  sleep "$warmup"
  : >"$out/merge-merges.txt"
  while kill -0 "$bench_pid" 2>/dev/null; do
    t_merge=$(now)
    # the adjacent pair at a cursor that walks the key space, so the merged regions stay of like sizes
    pair=$(kvc_quick regions --json 2>/dev/null | python3 -c '
import json, sys
rs = sorted(json.load(sys.stdin), key=lambda r: r["startKey"])
if len(rs) > 1:
    i = int(sys.argv[1]) % (len(rs) - 1)
    print(rs[i]["id"], rs[i + 1]["id"])' "$n") || pair=""
    [ -n "$pair" ] || break # one region left (or no answer: the loop ends with the benchmark)
    at=$(grep -o '^ *[0-9.]*s ' "$out/merge-bench.txt" | tail -1 | tr -d ' s')
    # shellcheck disable=SC2086 # two ids
    if kvc_quick merge $pair >>"$out/merge-merges.txt" 2>&1; then
      n=$((n + 1))
      echo "merge $n of regions $pair launched at benchmark time $at s" >>"$out/merge-merges.txt"
    else
      refused=$((refused + 1))
      echo "merge of regions $pair refused at benchmark time $at s" >>"$out/merge-merges.txt"
    fi
    python3 -c "import sys, time; time.sleep(max(0, float(sys.argv[2]) - (time.time() - float(sys.argv[1]))))" "$t_merge" "$every"
  done
  wait "$bench_pid" || echo "merge: the benchmark exited non-zero: $(grep -i 'error rate\|exceed' "$out/merge-bench.txt" | head -2)"
  unset 'bg_pids[-1]'
  local under_load=$n
  # the rest without load, down to one region: every merge must be able to finish
  while pair=$(kvc_quick regions --json 2>/dev/null | python3 -c '
import json, sys
rs = sorted(json.load(sys.stdin), key=lambda r: r["startKey"])
if len(rs) > 1:
    print(rs[0]["id"], rs[1]["id"])') && [ -n "$pair" ]; do
    # shellcheck disable=SC2086 # two ids
    if kvc_quick merge $pair >>"$out/merge-merges.txt" 2>&1; then
      n=$((n + 1))
    else
      refused=$((refused + 1))
      [ "$refused" -lt 20 ] || break
    fi
  done
  read -r count led per spread _ < <(regions_summary)
  python3 - "$out/merge-bench.txt" "$under_load" "$refused" "$count" "$((warmup + duration))" "$n" <<'PY'
import re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
pat = re.compile(r'^\s*([\d.]+)s\s+([\d,]+) ops/s\s+errors ([\d,]+)')
rows = [(float(m[1]), float(m[2].replace(',', '')), int(m[3].replace(',', ''))) for m in map(pat.match, lines)
        if m and 'warm-up' not in m.string]
rows = [r for r in rows if r[0] <= float(sys.argv[5]) + 0.5]
# and not the drain's last line (a part of a second, printed 0.2 s or more after the last whole one)
rows = [r for i, r in enumerate(rows) if i == 0 or r[0] - rows[i - 1][0] >= 0.9]
ops = [r[1] for r in rows]
med = statistics.median(ops)
low_i = min(range(len(ops)), key=ops.__getitem__)
print(f"merge: {sys.argv[2]} merges by hand under load, {sys.argv[6]} in all ({sys.argv[3]} refused or rolled back), "
      f"{sys.argv[4]} regions at the end")
print(f"merge: {len(ops)} measured seconds: errors {rows[-1][2] if rows else -1}; median {med:,.0f} ops/s; lowest second "
      f"{ops[low_i]:,.0f} ops/s at {rows[low_i][0]:.0f} s = {ops[low_i] / med:.2f} of the median")
print("merge: ops/s per second: " + " ".join(f"{o / 1000:.0f}k" for o in ops))
PY
  local errors
  errors=$(errors_of "$out/merge-bench.txt")
  [ "$errors" = 0 ] || check_failed "merge: $errors errors; see $out/merge-bench.txt (KEEP=1 keeps it)"
  [ "$count" = 1 ] || check_failed "merge: $count regions at the end, not 1"
  stop
}

# the configured layout's split keys, hex: floor(i * 65536 / 24), i = 1..23
even_splits_hex() { python3 -c 'print(" ".join(f"{i * 65536 // 24:04x}" for i in range(1, 24)))'; }

throughput_run() { # a (24 configured) or b (1 split 23 times), ROUND; sets tput (ops/s)
  local which=$1 round=$2 warmup duration k
  if [ "$short" = 1 ]; then warmup=10; duration=10; else warmup=60; duration=30; fi
  if [ "$which" = a ]; then
    start "throughput-$round-a" memory 24 "split:
  enabled: false"
  else
    start "throughput-$round-b" memory 1 "split:
  enabled: false"
    # split region 1 at the highest key first: region 1 keeps [start, key), so each split is of region 1
    for k in $(even_splits_hex | tr ' ' '\n' | sort -r); do
      kvc --hex split 1 --at "$k" >>"$out/throughput-$round-b-splits.txt" 2>&1 || fail "throughput: split 1 --at $k"
    done
  fi
  wait_converged 24 300 || fail "throughput ($which): 24 regions not led and balanced"
  [ "$conv_count" = 24 ] || fail "throughput ($which): $conv_count regions"
  echo "throughput round $round ($which): 24 regions, leaders per node $conv_per_node $(load)"
  bench --warmup "$warmup" --duration "$duration" >"$out/throughput-$round-$which.txt" 2>&1 \
    || fail "throughput ($which): benchmark failed; $(tail -3 "$out/throughput-$round-$which.txt")"
  stop
  tput=$(ops_per_sec "$out/throughput-$round-$which.txt")
  echo "throughput round $round ($which): $tput ops/s, errors $(errors_of "$out/throughput-$round-$which.txt")"
}

phase_throughput() {
  local r a b as=() bs=() first
  echo "throughput: S1's shape (MemoryDB, default benchmark, 8 x 512 in flight), (a) 24 regions configured, (b) 1 region split by hand at the same 23 keys; $rounds round(s)"
  for r in $(seq "$rounds"); do
    if [ $((r % 2)) = 1 ]; then
      throughput_run a "$r"; a=$tput; throughput_run b "$r"; b=$tput; first=a
    else
      throughput_run b "$r"; b=$tput; throughput_run a "$r"; a=$tput; first=b
    fi
    as+=("$a"); bs+=("$b")
    echo "throughput round $r ($first first): a $a ops/s, b $b ops/s, b/a $(python3 -c "import sys; print(f'{float(sys.argv[2]) / float(sys.argv[1]):.2f}')" "$a" "$b")"
  done
  python3 -c '
import statistics, sys
n = len(sys.argv) // 2
a = list(map(float, sys.argv[1:1 + n])); b = list(map(float, sys.argv[1 + n:]))
print(f"throughput: median a {statistics.median(a):,.0f} ops/s, b {statistics.median(b):,.0f} ops/s, "
      f"b/a {statistics.median(b) / statistics.median(a):.2f} (bar: >= 0.9)")' "${as[@]}" "${bs[@]}"
}

cpu_ticks() { local p t=0; for p in "${pids[@]}"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }

phase_idle() {
  local settle n c0 c1 t0 t1 hz
  if [ "$short" = 1 ]; then settle=30; else settle=180; fi
  hz=$(getconf CLK_TCK)
  for n in 24 96 384; do
    start "idle-$n" memory "$n"
    sleep "$settle"
    echo "idle: $n regions, ${settle} s after health, measuring 20 s $(load)"
    c0=$(cpu_ticks); t0=$(now)
    sleep 20
    c1=$(cpu_ticks); t1=$(now)
    python3 -c '
import sys
n, c0, c1, t0, t1, hz = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
cores = (c1 - c0) / hz / (t1 - t0)
print(f"idle: {n} regions: {cores:.3f} cores for the 3 nodes, {cores / n * 1000:.2f} millicores per region")' \
      "$n" "$c0" "$c1" "$t0" "$t1" "$hz"
    stop
  done
}

for ph in "${phases[@]}"; do
  case "$ph" in
    auto) for e in "${engine_list[@]}"; do phase_auto "$e"; done ;;
    storm) phase_storm ;;
    merge) phase_merge ;;
    throughput) phase_throughput ;;
    idle) phase_idle ;;
  esac
done
if [ ${#failed[@]} -gt 0 ]; then printf 'FAIL: %s\n' "${failed[@]}"; exit 1; fi
echo "PASS"
