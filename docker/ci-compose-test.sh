#!/usr/bin/env bash
# CI test of the Docker bring-up: 3 servers + 8 benchmark clients with docker-compose, for real.
# Starts its own dockerd (own data root, exec root and socket in a temp dir, stopped by PID), builds
# the image on a Debian base made with debootstrap (no registry needed), runs a short light benchmark
# on 8 clients, merges their results and checks: 8 clients, zero errors, non-zero throughput; then the
# README's backup commands from the stack (kvctl backup onto the backups volume, backup verify, tar off it).
# Everything is torn down on exit, failure included. Needs root. Run from anywhere:
#   docker/ci-compose-test.sh
# Tunables (environment): BENCH_ARGS (the workload of each client), KV_DOCKER_CACHE (where the
# debootstrap base is cached), BENCH_CLIENTS (8), TMPDIR (where the dockerd's root goes, /tmp).
# The image's build stage (JDK_IMAGE) and runtime (BASE_IMAGE) both start from the debootstrap base.
set -euo pipefail
cd "$(dirname "$0")/.."
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
    "${DC[@]}" --profile tools down -v -t 2 >/dev/null 2>&1
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
log "OK: $clients clients, $opsps ops/s, p99 $p99 ms, $errors errors; image $KV_IMAGE $((size / 1024 / 1024)) MiB;" \
    "took $((SECONDS - START)) s"
