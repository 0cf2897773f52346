package io.kvraft.benchmark.nemesis;

import io.kvraft.benchmark.BenchmarkMain;
import io.kvraft.benchmark.DurationConverter;
import io.kvraft.benchmark.UsageException;
import io.kvraft.server.config.RaftConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code kv-benchmark nemesis}: starts a local 24-region cluster of real processes (3 nodes, or up to 5 with 3
 * replicas per region), runs a register workload (get, put, compare-and-put with unique values, scan, range delete)
 * while a nemesis injects and heals faults, splits and merges regions, drains nodes, lets a spare node join and leave
 * and replaces nodes by empty ones, then checks the recorded
 * history for linearizability key by key, reads back every acknowledged write to a fresh key, and compares the
 * nodes' region maps.
 */
@Command(name = "nemesis", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:no violation, no lost write, every key decided, the cluster recovered, the nodes' region"
                + " maps agree",
                "1:a violation, a lost acknowledged write, an undecided key, a malformed scan, no recovery after the"
                        + " last heal, or region maps that differ between nodes, do not tile the key space or keep a replica"
                        + " move's learner",
                "2:bad usage, or a fault this machine cannot inject"},
        description = {"Fault-injection run with a linearizability check, against a local cluster it starts (--nodes):"
                + " get, put, compare-and-put, scans and range deletes on register keys in every region, checked key by"
                + " key, and puts to fresh keys read back at the end. Region splits and merges are events among the"
                + " faults; at the end every node's own list of regions must be the same (id, range, epoch) and tile the"
                + " key space (with more nodes than replicas: every region on 3 of them, agreed on by those and tiling"
                + " the key space together). Drains, a spare node that joins and leaves, and nodes replaced by empty"
                + " ones are events too (drain, join, replace).",
                "partition and loss need root, iproute2 and iptables (nodes run in network namespaces);"
                        + " clock needs libfaketime (Debian: faketime)."})
public final class NemesisCommand implements Callable<Integer> {

    private static final Duration MIN_DURATION = Duration.ofSeconds(10);
    /** The most nodes of a run, the join events' spare included (NetLab's addresses .1 to .5). */
    static final int MAX_NODES = 5;
    /** Replicas per region when the cluster has more nodes than that (replication.factor). */
    static final int FACTOR = 3;
    /** The raft: keys the nemesis writes itself ({@link #ownRaftKeys()}), so --raft may not set them. */
    static final String OWN_RAFT_KEYS = "electionTimeoutMs, startupElectionTimeoutMs, snapshotIntervalSecs";

    @ParentCommand
    BenchmarkMain parent;

    @Option(names = "--duration", defaultValue = "2m", paramLabel = "TIME", converter = DurationConverter.class,
            description = "How long faults are injected, at least 10 s: " + DurationConverter.HELP
                    + " (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--faults", defaultValue = "kill,kill-majority,pause,split,merge,partition,loss,clock", split = ",",
            paramLabel = "FAULT",
            description = "Faults to inject in turn: kill, kill-majority (kill -9 of a majority of the nodes at once,"
                    + " 2 of 3, so every region and the cluster map lose theirs, until they are started again together"
                    + " with their data), pause, partition, loss, clock, split (a split of the"
                    + " region holding a random register key, between two of its register keys), merge (of two"
                    + " adjacent regions, preferring one that holds few register keys) and drain (needs --nodes 4 or"
                    + " more: a node UP and live is marked draining, so its replicas move to the other nodes, until it"
                    + " holds none or --drain-hold passes, then marked UP again, so replicas move back during the faults"
                    + " after it), join (needs --nodes 4 or fewer: a spare node N+1 starts on an empty data directory"
                    + " with cluster.join and replicas move onto it, up to --drain-hold; it stays a member through the"
                    + " faults after it, and the next join event drains it, removes it (node remove) once it holds no"
                    + " replica and stops it, the run's end too; the other faults hit nodes 1..N only) and replace"
                    + " (kill -9 of a node the map has UP, its data directory wiped, started again at its address with"
                    + " the same YAML, so the cluster rebuilds its replicas; waits up to --drain-hold for that; skipped"
                    + " while a region lacks a replica, a node lacks replicas the map lists on it or a node is not live,"
                    + " so never two at once; works with 3 nodes, where the other 2 replicas of each region are a"
                    + " majority); a split, merge, drain, join or replace"
                    + " has nothing to heal, and one refused, failed, skipped or rolled back is counted, not a failure"
                    + " (default: ${DEFAULT-VALUE}).")
    List<String> faults;

    @Option(names = "--nodes", defaultValue = "3", paramLabel = "N",
            description = "Server nodes, 3 to 5 (default: ${DEFAULT-VALUE}); with more than 3, each region has "
                    + FACTOR + " replicas (replication.factor) and the cluster map's leader moves them (placement.intervalMs"
                    + " 1000), which drain events need; join and replace events set the same with 3 nodes too.")
    int nodes;

    @Option(names = "--split-during-faults",
            description = "Also split a region during every other fault: half-way through its hold, right after a kill"
                    + " (the node down), not during a kill-majority (no region could take it); counted with the split"
                    + " events. Off by default.")
    boolean splitDuringFaults;

    @Option(names = "--interval", defaultValue = "10", paramLabel = "TIME", converter = DurationConverter.class,
            description = "One fault starts every this long, at least 2 s: " + DurationConverter.HELP
                    + " (default: ${DEFAULT-VALUE}).")
    Duration interval;

    @Option(names = "--hold", defaultValue = "4s", paramLabel = "TIME", converter = DurationConverter.class,
            description = "How long a fault lasts before it is healed, at least 500ms and shorter than --interval: "
                    + DurationConverter.HELP + " (default: ${DEFAULT-VALUE}); a kill keeps the node down for half of it.")
    Duration hold;

    @Option(names = "--drain-hold", paramLabel = "TIME", converter = DurationConverter.class,
            description = "How long a drain waits for its node to hold no replica before it undrains the node, at least"
                    + " 500ms: " + DurationConverter.HELP + " (default: --hold). Replicas move three at a time"
                    + " (placement.movesAtOnce), each in 0.2-1 s here, so a 4 s drain moves a few; a longer one (e.g."
                    + " 30s) moves most of a node's replicas, and the faults after it start later, each after the usual"
                    + " gap. Join events wait this long for a first replica on the joined node, or for it to drain"
                    + " before its removal; replace events for the rebuild (after the new node joined the map).")
    Duration drainHold;

    @Option(names = "--engine", defaultValue = "memory", paramLabel = "ENGINE",
            description = "Store engine of the nodes: memory or rocksdb (default: ${DEFAULT-VALUE}).")
    String engine;

    @Option(names = "--keys-per-region", defaultValue = "10", paramLabel = "N",
            description = "Register keys per region; 24 regions (default: ${DEFAULT-VALUE}). A range delete stays within"
                    + " the upper half of one region's keys and the lower half of the next region's, clear of the fresh keys.")
    int keysPerRegion;

    @Option(names = "--workload", defaultValue = "register", paramLabel = "NAME",
            description = "register, or lock: the register workload plus 4 lock clients on 3 locks and a sequence, "
                    + "checked by the lock checker (default: ${DEFAULT-VALUE}).")
    String workload;

    @Option(names = "--threads", defaultValue = "8", paramLabel = "N",
            description = "Client threads, one operation at a time each (default: ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--rate", defaultValue = "200", paramLabel = "OPS",
            description = "Operations per second over all threads (default: ${DEFAULT-VALUE}).")
    double rate;

    @Option(names = "--read-mode", defaultValue = "read_index", paramLabel = "MODE",
            description = "The client's reads and scans: read_index, leader_lease or follower (any replica, after the"
                    + " leader's ReadIndex); not stale, which is not linearizable (default: ${DEFAULT-VALUE}).")
    String readMode;

    @Option(names = "--election-timeout-ms", defaultValue = "1000", paramLabel = "MS",
            description = "The nodes' raft.electionTimeoutMs (default: ${DEFAULT-VALUE}).")
    int electionTimeoutMs;

    @Option(names = "--raft", paramLabel = "KEY=VALUE",
            description = "A raft: key of the nodes' YAML, repeatable, e.g. --raft replicatorPipeline=false --raft"
                    + " maxRequestsPerEntry=1 --raft maxProposalsInflight=256 (S4's replication); not the keys"
                    + " the nemesis sets itself: " + OWN_RAFT_KEYS + ".")
    List<String> raftKeys = new ArrayList<>();

    @Option(names = "--check-budget", defaultValue = "300", paramLabel = "TIME", converter = DurationConverter.class,
            description = "Time the linearizability checker may take; keys left undecided fail the run: "
                    + DurationConverter.HELP + " (default: ${DEFAULT-VALUE}).")
    Duration checkBudget;

    @Option(names = "--recovery-timeout", defaultValue = "60s", paramLabel = "TIME", converter = DurationConverter.class,
            description = "After the last heal, every region must be led again and the load run 10 s without an error"
                    + " within this long, or the run fails: " + DurationConverter.HELP + ", at least 15s"
                    + " (default: ${DEFAULT-VALUE}).")
    Duration recoveryTimeout;

    @Option(names = "--seed", paramLabel = "N", description = "Random seed for the workload and the nemesis (default: the time).")
    Long seed;

    @Option(names = "--out", defaultValue = "nemesis-out", paramLabel = "DIR",
            description = "Where report.txt, history.txt, faults.txt and violations.txt go (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--server-jvm-arg", paramLabel = "ARG",
            description = "A JVM option for each server, repeatable; added after the defaults -Xms256m -Xmx768m"
                    + " -XX:+UseParallelGC (an -Xmx, -Xms or -XX:+Use...GC of yours replaces the default one).")
    List<String> serverJvmArgs = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        List<Nemesis.Fault> kinds = parseFaults();
        validate();
        if (kinds.contains(Nemesis.Fault.DRAIN) && nodes <= FACTOR) {
            throw new UsageException("--faults: drain needs --nodes 4 or more (with " + nodes + " nodes and "
                    + FACTOR + " replicas per region no replica can move, so every drain would be refused)");
        }
        if (kinds.contains(Nemesis.Fault.JOIN) && nodes >= MAX_NODES) {
            throw new UsageException("--faults: join needs a free slot for its spare node: --nodes " + (MAX_NODES - 1)
                    + " or fewer (a run has at most " + MAX_NODES + " nodes), got " + nodes);
        }
        boolean network = kinds.stream().anyMatch(Nemesis.Fault::needsNetwork);
        boolean clock = kinds.contains(Nemesis.Fault.CLOCK);
        String why = network ? NetLab.unavailableReason() : null;
        if (why != null) {
            throw new UsageException(why + "; or leave partition and loss out of --faults");
        }
        Path faketime = clock ? findFaketime() : null;
        return new NemesisRun(this, kinds, faketime).call();
    }

    /** How long a drain waits for its node to hold no replica: --drain-hold, or --hold when not given. */
    Duration drainHold() {
        return drainHold != null ? drainHold : hold;
    }

    private List<Nemesis.Fault> parseFaults() {
        LinkedHashSet<Nemesis.Fault> set = new LinkedHashSet<>();
        for (String f : faults) {
            if (f.isBlank()) {
                continue;
            }
            try {
                set.add(Nemesis.Fault.parse(f));
            } catch (IllegalArgumentException e) {
                throw new UsageException("--faults: " + e.getMessage());
            }
        }
        if (set.isEmpty()) {
            throw new UsageException("--faults: name at least one of " + Nemesis.Fault.NAMES);
        }
        return List.copyOf(set);
    }

    /**
     * The nodes' replication: and placement: sections with more nodes than {@link #FACTOR}: that many replicas per region,
     * and the map's leader looking for a replica to move every second; "" with {@link #FACTOR} nodes or fewer (every
     * node holds every region, the servers' default).
     */
    String membershipYaml() {
        boolean events = faults != null && faults.stream().map(f -> f.trim().toLowerCase(Locale.ROOT))
                .anyMatch(f -> f.equals("join") || f.equals("replace"));
        return nodes > FACTOR || events ? "replication:\n  factor: " + FACTOR + "\nplacement:\n  intervalMs: 1000\n"
                : "";
    }

    /**
     * The join events' spare node's YAML: {@code base} (node 1's) with its endpoint and {@code cluster.join} naming the
     * first nodes instead of {@code cluster.peers}, so it starts with no region and joins the running cluster.
     */
    static String joinYaml(String base, String endpoint, List<String> members) {
        List<String> out = new ArrayList<>();
        boolean peers = false;
        boolean first = false;
        for (String line : base.split("\n", -1)) {
            if (line.startsWith("endpoint:")) {
                out.add("endpoint: " + endpoint);
                first = true;
            } else if (line.matches("\\s+peers:.*")) {
                out.add(line.substring(0, line.indexOf("peers:")) + "join: [" + String.join(", ", members) + "]");
                peers = true;
            } else {
                out.add(line);
            }
        }
        if (!first || !peers) {
            throw new IllegalArgumentException("no endpoint: or cluster.peers line in the nodes' YAML");
        }
        return String.join("\n", out);
    }

    /** The raft: keys the nemesis sets whatever --raft says: failover quick enough to test, and snapshots during the run. */
    Map<String, String> ownRaftKeys() {
        Map<String, String> keys = new LinkedHashMap<>();
        keys.put("electionTimeoutMs", String.valueOf(electionTimeoutMs));
        keys.put("startupElectionTimeoutMs", String.valueOf(electionTimeoutMs));
        keys.put("snapshotIntervalSecs", "30");
        return keys;
    }

    /** The nodes' raft: section as YAML lines: the nemesis's own keys, then the --raft ones (validated by {@link #validate()}). */
    String raftYaml() {
        Map<String, String> keys = ownRaftKeys();
        for (String kv : raftKeys) {
            int eq = kv.indexOf('=');
            keys.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return String.join("\n", keys.entrySet().stream().map(e -> e.getKey() + ": " + e.getValue()).toList());
    }

    private void validate() {
        if (readMode.equals("stale")) {
            throw new UsageException("--read-mode stale: stale reads are not linearizable, so the checker would rightly fail them;"
                    + " use read_index, leader_lease or follower");
        }
        if (!readMode.equals("read_index") && !readMode.equals("leader_lease") && !readMode.equals("follower")) {
            throw new UsageException("--read-mode: read_index, leader_lease or follower, got '" + readMode + "'");
        }
        List<String> known = Arrays.stream(RaftConfig.class.getRecordComponents()).map(RecordComponent::getName).toList();
        List<String> seen = new ArrayList<>();
        for (String kv : raftKeys) {
            int eq = kv.indexOf('=');
            String key = eq < 0 ? "" : kv.substring(0, eq);
            if (!key.matches("[A-Za-z]+") || eq == kv.length() - 1 || kv.substring(eq + 1).matches(".*[\\s:#{}\\[\\],].*")) {
                throw new UsageException("--raft: KEY=VALUE with a raft: key of the server YAML and a plain value,"
                        + " got '" + kv + "'");
            }
            if (!known.contains(key)) {
                throw new UsageException("--raft: no raft." + key + " in the server YAML; the keys are " + known);
            }
            if (ownRaftKeys().containsKey(key)) {
                throw new UsageException("--raft: the nemesis sets raft." + key + " itself"
                        + (key.equals("electionTimeoutMs") ? " (use --election-timeout-ms)" : ""));
            }
            if (seen.contains(key)) {
                throw new UsageException("--raft: raft." + key + " is given twice");
            }
            seen.add(key);
        }
        if (drainHold != null && drainHold.toMillis() < 500) {
            throw new UsageException("--drain-hold: at least 500ms, got " + DurationConverter.text(drainHold));
        }
        if (nodes < 3 || nodes > 5) {
            throw new UsageException("--nodes: 3 to 5, got " + nodes);
        }
        if (!workload.equals("register") && !workload.equals("lock")) {
            throw new UsageException("--workload: register or lock, got '" + workload + "'");
        }
        if (!engine.equals("memory") && !engine.equals("rocksdb")) {
            throw new UsageException("--engine: memory or rocksdb, got '" + engine + "'");
        }
        if (duration.compareTo(MIN_DURATION) < 0) {
            throw new UsageException("--duration: at least 10 s, got " + DurationConverter.text(duration));
        }
        if (interval.toMillis() < 2000 || hold.toMillis() < 500 || hold.compareTo(interval) >= 0) {
            throw new UsageException("--hold (" + DurationConverter.text(hold) + ") must be at least 500ms and shorter"
                    + " than --interval (" + DurationConverter.text(interval) + ", at least 2s)");
        }
        if (recoveryTimeout.toMillis() < 15_000) {
            throw new UsageException("--recovery-timeout: at least 15s (the load must run 10 s without an error), got "
                    + DurationConverter.text(recoveryTimeout));
        }
        if (keysPerRegion < 1 || threads < 1 || rate <= 0 || checkBudget.toMillis() < 1000 || electionTimeoutMs < 100) {
            throw new UsageException("--keys-per-region, --threads and --rate must be positive, --check-budget at least 1s;"
                    + " --election-timeout-ms at least 100");
        }
    }

    private static Path findFaketime() {
        for (String dir : List.of("/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime",
                "/usr/lib/faketime", "/usr/local/lib/faketime")) {
            // not libfaketimeMT: it serialises every clock call, 4 us each here, and a node then took a minute to start
            Path p = Path.of(dir, "libfaketime.so.1");
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        throw new UsageException("the clock fault needs libfaketime (Debian: apt-get install faketime);"
                + " or leave clock out of --faults");
    }
}
