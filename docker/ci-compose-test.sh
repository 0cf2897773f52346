#!/usr/bin/env bash
# CI test of the Docker bring-up: 3 servers + 8 benchmark clients with docker-compose, for real.
# Starts its own dockerd (own data root, exec root and socket in a temp dir, stopped by PID), builds
# the image on a Debian base made with debootstrap (no registry needed), runs a short light benchmark
# on 8 clients, merges their results and checks: 8 clients, zero errors, non-zero throughput; then the
# README's backup commands from the stack (kvctl backup onto the backups volume, backup verify, tar off it); with
# --grow, then grows the cluster from 3 to 5 servers (kv4, kv5 of profile "grow" join) and waits, up to 6 minutes,
# until all 5 are live and hold as many replicas as each other (within 1) with no move running; drains and removes kv5 and kv4
# (node drain, node remove), stops them, and checks that the 3 left are healthy. After the grow and after the
# shrink, a scan of the whole key space must equal the one before the grow, and 100 marker keys must read back.
# Prints the time until balanced and each drain's time.
# CI runs it without --grow: joins, drains, removals and a removed node's exit code 4 are proved on processes by
# bench/membership-drill.sh and the nemesis membership run, which CI runs too; --grow adds the compose profile's
# version of them (about 90 s more).
# Everything is torn down on exit, failure included. Needs root. Run from anywhere:
#   docker/ci-compose-test.sh [--grow]
# Tunables (environment): BENCH_ARGS (the workload of each client), KV_DOCKER_CACHE (where the
# debootstrap base is cached), BENCH_CLIENTS (8), TMPDIR (where the dockerd's root goes, /tmp).
# The image's build stage (JDK_IMAGE) and runtime (BASE_IMAGE) both start from the debootstrap base.
set -euo pipefail
cd "$(dirname "$0")/.."
grow=0
case "${1:-}" in
  --grow) grow=1 ;;
  "") ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "unknown argument: $1 (usage: docker/ci-compose-test.sh [--grow])" >&2; exit 2 ;;
esac
START=$SECONDS
CLIENTS=${BENCH_CLIENTS:-8}
export BENCH_ARGS=${BENCH_ARGS:---duration 20 --warmup 5 --threads 2 --inflight 16 --keys 10000}
export KV_IMAGE=kvraft:ci
export KV_SERVER_JAVA_OPTS=${KV_SERVER_JAVA_OPTS:--Xmx512m}
export KV_BENCH_JAVA_OPTS=${KV_BENCH_JAVA_OPTS:--Xmx256m -XX:TieredStopAtLevel=1}
BASE=kvci/debian-base:bookworm
CACHE=${KV_DOCKER_CACHE:-/var/cache/kvraft-docker}

log() { printf '[ci-compose %3ds] %s\n' $((SECONDS - START)) "$*"; }

# ---- tools from Debian, when missing -------------------------------------------------------------
need=()
[ -x /usr/sbin/dockerd ] || need+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# Debian's CLI matches Debian's engine (another docker CLI may come first on PATH)
DOCKER=docker
[ -x /usr/bin/docker ] && DOCKER=/usr/bin/docker

# ---- our own dockerd ------------------------------------------------------------------------------
W=$(mktemp -d "${TMPDIR:-/tmp}/kv-docker-ci.XXXXXX")
export DOCKER_HOST=unix://$W/docker.sock
FORWARD_POLICY=$(iptables -S FORWARD 2>/dev/null | awk '$1 == "-P" {print $3}')
DC=(docker-compose -f docker/docker-compose.yml -p kvci)
DPID=
cleanup() {
  local rc=$?
  set +e
  if [ -n "$DPID" ]; then
    log "tearing down"
    "${DC[@]}" --profile tools --profile grow down -v -t 2 >/dev/null 2>&1
    kill "$DPID" 2>/dev/null
    for _ in $(seq 60); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$DPID" 2>/dev/null
    wait "$DPID" 2>/dev/null
  fi
  # dockerd sets the FORWARD policy to DROP and never undoes it
  [ -n "$FORWARD_POLICY" ] && iptables -P FORWARD "$FORWARD_POLICY" 2>/dev/null
  rm -rf "$W" 2>/dev/null
  log "exit code $rc"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

/usr/sbin/dockerd --data-root "$W/data" --exec-root "$W/exec" -H "$DOCKER_HOST" --pidfile "$W/dockerd.pid" \
    >"$W/dockerd.log" 2>&1 &
DPID=$!
for _ in $(seq 120); do $DOCKER version >/dev/null 2>&1 && break; sleep 0.5; done
if ! $DOCKER version >/dev/null 2>&1; then
  tail -20 "$W/dockerd.log"; log "FAILED: dockerd did not start"; exit 1
fi
log "dockerd $($DOCKER version --format '{{.Server.Version}}') running as PID $DPID on $DOCKER_HOST"

# ---- base image: Debian made with debootstrap, cached as a tarball ---------------------------------
ROOTFS_TAR=$CACHE/debian-bookworm-minbase-slim.tar
if [ ! -s "$ROOTFS_TAR" ]; then
  log "debootstrap bookworm (cached in $CACHE)"
  mkdir -p "$CACHE"
  debootstrap --variant=minbase bookworm "$W/rootfs" >"$W/debootstrap.log" 2>&1 || { tail -20 "$W/debootstrap.log"; exit 1; }
  # without the package lists and downloaded .debs (80 MB); the Dockerfile runs apt-get update
  tar -C "$W/rootfs" --exclude='./var/lib/apt/lists/*' --exclude='./var/cache/apt/archives/*.deb' \
      -cf "$ROOTFS_TAR.part" . && mv "$ROOTFS_TAR.part" "$ROOTFS_TAR"
  rm -rf "$W/rootfs"
fi
$DOCKER import "$ROOTFS_TAR" "$BASE" >/dev/null

# ---- jars, image -----------------------------------------------------------------------------------
if [ ! -f kv-benchmark/target/kv-benchmark.jar ]; then   # the image's one jar (server, CLI, benchmark)
  log "building the jars"
  mvn -q -B -DskipTests package
fi
"${DC[@]}" config -q
log "building $KV_IMAGE on $BASE"
"${DC[@]}" build -q --build-arg BASE_IMAGE="$BASE" --build-arg JDK_IMAGE="$BASE" kv1

# ---- 3 servers, then the clients once the servers are healthy ---------------------------------------
log "starting kv1 kv2 kv3"
"${DC[@]}" up -d kv1 kv2 kv3
log "starting $CLIENTS bench clients (they wait for healthy servers): $BENCH_ARGS"
"${DC[@]}" up -d --scale bench="$CLIENTS" bench
log "cluster: $("${DC[@]}" exec -T kv1 kv-client --servers kv1:8181 health 2>&1 || true)"
mapfile -t benches < <($DOCKER ps -aq --filter label=com.docker.compose.project=kvci --filter label=com.docker.compose.service=bench)
[ "${#benches[@]}" -eq "$CLIENTS" ] || { log "FAILED: ${#benches[@]} bench containers, expected $CLIENTS"; exit 1; }
# warm-up + measured time + preload and drain, with room to spare on a loaded machine
codes=$(timeout 600 $DOCKER wait "${benches[@]}" | tr '\n' ' ') || { log "FAILED: bench clients still running after 600 s"; exit 1; }
log "bench clients exited with: $codes"
for c in $codes; do
  if [ "$c" != 0 ]; then
    "${DC[@]}" logs --no-color --tail 40 bench kv1 kv2 kv3
    log "FAILED: a bench client exited with $c"; exit 1
  fi
done

# ---- merge and check ---------------------------------------------------------------------------------
report=$("${DC[@]}" run --rm merge 2>&1) || { echo "$report"; log "FAILED: merge"; exit 1; }
echo "$report"
clients=$(awk '$1 == "clients:" {print $2}' <<<"$report")
errors=$(awk '$1 == "total" && $3 == "error" {print $2}' <<<"$report")
opsps=$(awk '$1 == "total" && NF == 9 {print $9}' <<<"$report")
p99=$(awk '$1 == "total" && NF == 9 {print $4}' <<<"$report")
[ "$clients" = "$CLIENTS" ] || { log "FAILED: the merged report shows '$clients' clients, expected $CLIENTS"; exit 1; }
[ "$errors" = 0 ] || { log "FAILED: the merged report shows '$errors' errors"; exit 1; }
awk -v r="$opsps" 'BEGIN { exit !(r + 0 > 0) }' || { log "FAILED: merged throughput '$opsps' ops/s"; exit 1; }

# ---- the README's backup from the stack: kvctl backs the loaded cluster up onto the backups volume -----
out=$("${DC[@]}" run --rm kvctl backup /backups/ci --rate-limit 20 2>&1) || { echo "$out"; log "FAILED: kvctl backup"; exit 1; }
log "$(grep '^backup ' <<<"$out" | tail -1)"
out=$("${DC[@]}" run --rm kvctl backup verify /backups/ci 2>&1) || { echo "$out"; log "FAILED: kvctl backup verify"; exit 1; }
grep -Eq '^backup /backups/ci OK: [1-9][0-9]* regions, [1-9][0-9,]* keys' <<<"$out" || { echo "$out"; log "FAILED: backup verify says otherwise"; exit 1; }
log "$(grep '^backup ' <<<"$out" | tail -1)"
"${DC[@]}" run --rm -T --entrypoint tar kvctl -C /backups -cf - ci >"$W/ci.tar" || { log "FAILED: tar off the volume"; exit 1; }
# the listing is read whole first: with pipefail, `tar | grep -q` fails when grep quits early and tar gets SIGPIPE
listing=$(tar -tf "$W/ci.tar") || { log "FAILED: the tar off the volume does not list"; exit 1; }
grep -qx 'ci/manifest.json' <<<"$listing" || { log "FAILED: the tar off the volume has no manifest.json"; exit 1; }

size=$($DOCKER image inspect "$KV_IMAGE" --format '{{.Size}}')
if [ "$grow" = 0 ]; then
  "${DC[@]}" --profile grow config -q || { log "FAILED: docker-compose --profile grow config"; exit 1; }
  log "OK: $clients clients, $opsps ops/s, p99 $p99 ms, $errors errors; image $KV_IMAGE $((size / 1024 / 1024)) MiB;" \
      "the grow profile's config is valid (--grow runs it); took $((SECONDS - START)) s"
  exit 0
fi

# ---- grow from 3 to 5 servers (kv4, kv5 join), then shrink back (drain, remove): no key may change --------
# The CLI runs in kv1's container (which stays in the cluster throughout), asking the three first servers.
SEEDS=kv1:8181,kv2:8181,kv3:8181
KV1=$("${DC[@]}" ps -q kv1)
kvc() { $DOCKER exec "$KV1" kv-client --servers "$SEEDS" "$@"; }
kvc_stdin() { $DOCKER exec -i "$KV1" kv-client --servers "$SEEDS" "$@"; } # commands on stdin: batch
# 0 when `node list` shows exactly the nodes given (removed ones aside), each up and live, holding as many replicas
# as each other within 1, and no replica move running. Leaves the listing in $list.
list=
balanced() { # NODE...
  list=$(kvc node list 2>&1) || return 1 # exit 1: some node not removed is not live
  awk -v want="$*" '
    BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) need[w[i]] = 1 }
    /^moving / { bad = 1 }
    $1 ~ /^[^ ]+:[0-9]+$/ && $2 != "removed" {
      if (!($1 in need) || $2 != "up" || $3 != "yes") bad = 1
      seen[$1] = 1; r = $4 + 0; if (cnt == 0 || r < lo) lo = r; if (cnt == 0 || r > hi) hi = r; cnt++
    }
    END { for (k in need) if (!(k in seen)) bad = 1; exit !(!bad && cnt == n && hi - lo <= 1) }' <<<"$list"
}
# one line for the log: each node's state and replicas, and the moves running
brief() { awk '$1 ~ /:[0-9]+$/ { printf "%s %s/%s/%s  ", $1, $2, $3, $4 } /^moving / { m++ } END { printf "moves running: %d", m }' <<<"$list"; }
wait_balanced() { # LIMIT_S WHAT NODE...: polls every 2 s, logs progress every 30 s
  local limit=$1 what=$2 t0=$SECONDS next=$((SECONDS + 30))
  shift 2
  until balanced "$@"; do
    if [ $((SECONDS - t0)) -ge "$limit" ]; then
      echo "$list"; log "FAILED: $what: not reached in $limit s"; exit 1
    fi
    if [ "$SECONDS" -ge "$next" ]; then log "  ... $(brief)"; next=$((SECONDS + 30)); fi
    sleep 2
  done
}
# every key as it was: the whole key space, scanned (linearizable reads), equal to the scan before the grow; and the
# marker keys read back one by one (each a linearizable get on its region's leader)
check_keys() { # WHEN
  local got
  kvc --hex scan "" >"$W/scan.txt" 2>"$W/scan.err" || { cat "$W/scan.err"; log "FAILED: scan $1"; exit 1; }
  if ! cmp -s "$W/scan-before.txt" "$W/scan.txt"; then
    diff "$W/scan-before.txt" "$W/scan.txt" | head -10
    log "FAILED: $1, the key space differs from before the grow: $(wc -l <"$W/scan.txt") pairs now," \
        "$(wc -l <"$W/scan-before.txt") before"; exit 1
  fi
  got=$(sed 's/^put \([^ ]*\) .*/get \1/' "$W/markers.txt" | kvc_stdin batch --stop-on-error 2>"$W/get.err") \
    || { echo "$got" | tail -3; cat "$W/get.err"; log "FAILED: reading the marker keys back $1"; exit 1; }
  [ "$got" = "$(cut -d' ' -f3 "$W/markers.txt")" ] || { echo "$got" | head -5; log "FAILED: marker keys $1 differ"; exit 1; }
  log "$1: all $(wc -l <"$W/scan.txt") pairs as before the grow; $(wc -l <"$W/markers.txt") marker keys read back"
}

markers=100
for i in $(seq -w 1 $markers); do echo "put ci-grow-$i v$i-$RANDOM$RANDOM"; done >"$W/markers.txt"
out=$(kvc_stdin batch --stop-on-error <"$W/markers.txt" 2>&1) || { echo "$out" | tail -5; log "FAILED: writing marker keys"; exit 1; }
kvc --hex scan "" >"$W/scan-before.txt" 2>"$W/scan.err" || { cat "$W/scan.err"; log "FAILED: scan before the grow"; exit 1; }
pairs=$(wc -l <"$W/scan-before.txt")
[ "$pairs" -gt "$markers" ] || { log "FAILED: the scan before the grow holds $pairs pairs (the benchmark's keys missing?)"; exit 1; }
wait_balanced 60 "3 nodes live and balanced before the grow" kv1:8181 kv2:8181 kv3:8181
log "before the grow: $pairs pairs (with $markers marker keys); $(brief)"

log "growing: up -d kv4 kv5 (they join through $SEEDS)"
t_grow=$SECONDS
"${DC[@]}" up -d kv4 kv5 || { log "FAILED: docker-compose up -d kv4 kv5"; exit 1; }
wait_balanced 360 "5 nodes live and balanced" kv1:8181 kv2:8181 kv3:8181 kv4:8181 kv5:8181
grow_s=$((SECONDS - t_grow))
echo "$list"
log "grow: 5 nodes live and balanced, no move running, $grow_s s after up -d kv4 kv5"
check_keys "after the grow"

drain_s=()
for n in kv5 kv4; do
  t_drain=$SECONDS
  out=$(kvc node drain "$n:8181" --timeout-s 600 2>&1) || { echo "$out"; kvc node list || true; log "FAILED: node drain $n:8181"; exit 1; }
  drain_s+=("$n $((SECONDS - t_drain)) s")
  log "drain: $(tail -1 <<<"$out") ($((SECONDS - t_drain)) s with the CLI)"
  out=$(kvc node remove "$n:8181" 2>&1) || { echo "$out"; log "FAILED: node remove $n:8181"; exit 1; }
  log "remove: $out"
  # a removed node is refused by the cluster at its next report and exits with code 4; stop it if it has not
  cid=$("${DC[@]}" ps -q "$n")
  if code=$(timeout 20 $DOCKER wait "$cid" 2>/dev/null); then
    log "$n exited by itself with code $code (4: refused, it was removed)"
  else
    log "$n still running 20 s after its removal: stopping it"
  fi
  "${DC[@]}" stop -t 20 "$n" >/dev/null 2>&1 || { log "FAILED: docker-compose stop $n"; exit 1; }
done
wait_balanced 120 "3 nodes live and balanced after the shrink" kv1:8181 kv2:8181 kv3:8181
echo "$list"
out=$(kvc health 2>&1) || { echo "$out"; log "FAILED: health after the shrink"; exit 1; }
log "after the shrink: $out"
check_keys "after the shrink"
log "grow/shrink: balanced on 5 nodes after $grow_s s; drained ${drain_s[0]}, ${drain_s[1]}"

log "OK: $clients clients, $opsps ops/s, p99 $p99 ms, $errors errors; image $KV_IMAGE $((size / 1024 / 1024)) MiB;" \
    "grow 3 -> 5 balanced in $grow_s s, drained ${drain_s[0]}, ${drain_s[1]}; took $((SECONDS - START)) s"
