# Sourced by bench scripts: a cluster of server JVMs (3, or KV_NODES) in a temp dir on free loopback ports.
#   kv_free_ports N                  N distinct free loopback ports
#   kv_cluster_init ENGINE REGIONS [YAML]
#                                    makes $work, picks ports, writes $work/server-{1,2,3,...}.yaml, sets $servers
#                                    and the array nodes (host:port of each); YAML (optional) is appended to each
#                                    server file, e.g. a split: section
#   kv_cluster_start [JVM ARGS...]   starts the nodes (their PIDs in the array pids, by node), logs in $work;
#                                    KV_NODE_WRAP_I (e.g. KV_NODE_WRAP_1="fiu-run -x") runs node I's java under a
#                                    command that execs it (its PID stays the JVM's)
#   kv_cluster_await_health          waits until every region has a leader (kv-client health); fails at once, with
#                                    the nodes' log tails, when every node started has exited
#   kv_join_node I SEEDS [JVM ARGS...]  writes server-I.yaml for a new node on a free port that joins the cluster through
#                                    SEEDS (host:port,...), with the settings of server-1.yaml after its cluster: section,
#                                    and starts it; nodes[I-1] and pids[I-1] name it
#   kvc ARGS...                      the admin CLI against the cluster ($servers)
#   kv_node_tail I                   the end of node I's log and, had its JVM crashed, its crash report's fault and stack
# The caller's EXIT trap must run kv_cluster_cleanup, which kills only the PIDs started here.
# Bash only; written by hand because it is glue between our own jars, nothing a library does.

pids=()

# kv_free_ports N: N distinct free loopback ports, space-separated (held open together while picked)
kv_free_ports() {
  python3 -c 'import socket, sys
s=[socket.socket() for _ in range(int(sys.argv[1]))]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))' "$1"
}

kv_cluster_init() {
  local engine=$1 regions=$2 extra=${3:-} i n=${KV_NODES:-3}
  work=$(mktemp -d /tmp/kv-bench.XXXXXX)
  ports=($(kv_free_ports "$n"))
  nodes=()
  for i in "${!ports[@]}"; do nodes+=("127.0.0.1:${ports[$i]}"); done
  local peers
  peers=$(IFS=,; echo "${nodes[*]}" | sed 's/,/, /g')
  servers=$(IFS=,; echo "${nodes[*]}")
  for i in "${!ports[@]}"; do
    cat >"$work/server-$((i + 1)).yaml" <<EOF2
endpoint: 127.0.0.1:${ports[$i]}
dataDir: $work/data-$((i + 1))
cluster:
  peers: [$peers]
  regionCount: $regions
store:
  engine: $engine
EOF2
    [ -n "$extra" ] && printf '%s\n' "$extra" >>"$work/server-$((i + 1)).yaml"
  done
  return 0
}

kv_cluster_start() {
  local i wrap
  pids=()
  for ((i = 1; i <= ${#nodes[@]}; i++)); do
    wrap=KV_NODE_WRAP_$i
    ${!wrap:-} java -XX:ErrorFile="$work/hs_err_%p.log" -XX:+ExitOnOutOfMemoryError "$@" -jar kv-server/target/kv-server.jar --config "$work/server-$i.yaml" >>"$work/node-$i.log" 2>&1 &
    pids+=($!)
  done
}

# kv_node_start I [JVM ARGS...]: starts node I (1-based) again; its PID replaces the old one in pids
kv_node_start() {
  local i=$1
  shift
  java -XX:ErrorFile="$work/hs_err_%p.log" -XX:+ExitOnOutOfMemoryError "$@" -jar kv-server/target/kv-server.jar --config "$work/server-$i.yaml" >>"$work/node-$i.log" 2>&1 &
  pids[$((i - 1))]=$!
}

kv_join_node() {
  local i=$1 seeds=$2 port
  shift 2
  port=$(kv_free_ports 1)
  nodes[$((i - 1))]="127.0.0.1:$port"
  {
    echo "endpoint: 127.0.0.1:$port"
    echo "dataDir: $work/data-$i"
    echo "cluster:"
    echo "  join: [${seeds//,/, }]"
    # everything of node 1's file from its store: section on (the same engine, placement, split settings)
    sed -n '/^store:/,$p' "$work/server-1.yaml"
  } >"$work/server-$i.yaml"
  java -XX:ErrorFile="$work/hs_err_%p.log" -XX:+ExitOnOutOfMemoryError "$@" -jar kv-server/target/kv-server.jar --config "$work/server-$i.yaml" >>"$work/node-$i.log" 2>&1 &
  pids[$((i - 1))]=$!
}

# The drills poll with the CLI, one short JVM a second: C1 only, the serial collector and a class-data archive of the
# CLI's own classes (written by the first run after a build, used by the later ones) cut one call's CPU from about
# 2.8 s to 0.9 s on 2 cores, CPU the cluster under test had been losing. JVM warnings go to stderr, never into the
# output a drill parses (the archive's own, about classes it leaves out, not at all).
kvc_jvm() {
  local jsa=kv-client/target/kv-client.jsa
  if [ -f "$jsa" ] && [ "$jsa" -nt kv-client/target/kv-client.jar ]; then
    echo "-XX:SharedArchiveFile=$jsa"
  else
    echo "-XX:ArchiveClassesAtExit=$jsa"
  fi
}
kvc() {
  java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xlog:disable -Xlog:all=warning:stderr -Xlog:cds*=off:stderr "$(kvc_jvm)" \
    -jar kv-client/target/kv-client.jar --servers "$servers" "$@"
}

kv_cluster_await_health() {
  local p i alive
  for _ in $(seq 600); do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    if [ "$alive" = 0 ]; then # a bad config or jar: no node will ever answer
      echo "cluster not healthy: every node has exited; logs in $work" >&2
      for ((i = 1; i <= ${#pids[@]}; i++)); do kv_node_tail "$i" >&2; done
      return 1
    fi
    kvc health >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "cluster not healthy after the wait; logs in $work" >&2
  return 1
}

kv_node_tail() {
  local f
  tail -15 "$work/node-$1.log" 2>/dev/null | sed "s/^/  node $1: /"
  # of a crash report, what names the fault: the signal, the problematic frame, the thread and its stack's top
  for f in "$work"/hs_err_*.log; do
    [ -f "$f" ] && awk '/^# +SIG|^# +Internal Error|^# +fatal error/ {print; next}
      /^# Problematic frame:/ {print; getline; print; next}
      /^Current thread/ {print; next}
      /^(Native|Java) frames:/ {n = 14} /^$/ {n = 0} n > 0 {print; n--}' "$f" | sed "s/^/  $(basename "$f"): /"
  done
  return 0
}

kv_cluster_cleanup() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [ -n "${work:-}" ] && rm -rf "$work"
}

kv_build_jars() {
  local j
  for j in kv-server/target/kv-server.jar kv-client/target/kv-client.jar kv-benchmark/target/kv-benchmark.jar; do
    [ -f "$j" ] || mvn -q -B -DskipTests package
  done
}
