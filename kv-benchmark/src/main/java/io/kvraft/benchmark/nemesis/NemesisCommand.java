package io.kvraft.benchmark.nemesis;

import io.kvraft.benchmark.BenchmarkMain;
import io.kvraft.benchmark.ClusterSession;
import io.kvraft.benchmark.DurationConverter;
import io.kvraft.benchmark.UsageException;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.client.admin.MergedRegions;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.config.ServerConfig.RaftConfig;
import io.kvraft.server.launch.LocalClusterConfigs;
import io.kvraft.server.launch.ProcessCluster;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.PrintStream;
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
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

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
    private static final String NODE_PORT = "7001";
    /** The most nodes of a run, the join events' spare included (NetLab's addresses .1 to .5). */
    static final int MAX_NODES = 5;
    /** Replicas per region when the cluster has more nodes than that (replication.factor). */
    static final int FACTOR = 3;
    /** How long the nodes get after the run to agree on the region map. */
    private static final Duration REGION_MAP_WAIT = Duration.ofSeconds(60);
    /** ... with join or replace events: a rebuild of every replica of a node (24 moves) may still be under way. */
    private static final Duration REGION_MAP_WAIT_MEMBERSHIP = Duration.ofSeconds(180);
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
        PrintStream log = parent.stderr();
        long durationNs = duration.toNanos();
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
        boolean join = kinds.contains(Nemesis.Fault.JOIN);
        int total = nodes + (join ? 1 : 0); // with join events the last one is the spare, not started at first
        boolean network = kinds.stream().anyMatch(Nemesis.Fault::needsNetwork);
        boolean clock = kinds.contains(Nemesis.Fault.CLOCK);
        String why = network ? NetLab.unavailableReason() : null;
        if (why != null) {
            throw new UsageException(why + "; or leave partition and loss out of --faults");
        }
        Path faketime = clock ? findFaketime() : null;
        long s = seed != null ? seed : System.currentTimeMillis();
        Files.createDirectories(out);
        Path dataRoot = Files.createTempDirectory("kv-nemesis-");
        log.printf(Locale.ROOT, "nemesis: %s of %s%s, %d nodes, engine %s, reads %s%s, seed %d, data in %s%n",
                DurationConverter.text(duration),
                String.join(",", kinds.stream().map(Nemesis.Fault::label).toList()),
                splitDuringFaults ? " (and a split during each)" : "", nodes, engine, readMode,
                raftKeys.isEmpty() ? "" : ", raft " + String.join(" ", raftKeys), s, dataRoot);
        NetLab lab = null;
        ProcessCluster cluster = null;
        KvClient client = null;
        Transport regionsTransport = null; // the replace events ask the replaced node for its own regions over it
        try {
            lab = network ? NetLab.create(total) : null;
            List<String> all = new ArrayList<>();
            List<Integer> ports = LocalClusterConfigs.freePorts(total);
            for (int i = 0; i < total; i++) {
                all.add(lab != null ? lab.nodeIp(i) + ":" + NODE_PORT : "127.0.0.1:" + ports.get(i));
            }
            List<String> endpoints = all.subList(0, nodes);
            List<Path> files = new ArrayList<>(LocalClusterConfigs.write(dataRoot.resolve("conf"), endpoints, engine,
                    raftYaml(),
                    // a merge a fault holds up is rolled back well inside this client's 8 s deadline, so its outcome is known
                    "intervalMs: 1000", "merge:\n  timeoutMs: 4000\n" + membershipYaml()));
            if (join) {
                Path spare = dataRoot.resolve("conf").resolve("server-" + total + ".yaml");
                Files.writeString(spare, joinYaml(Files.readString(files.get(0)), all.get(nodes), endpoints));
                files.add(spare);
            }
            List<Path> clockFiles = new ArrayList<>();
            for (int i = 0; clock && i < total; i++) {
                Path f = dataRoot.resolve("clock-" + (i + 1));
                Files.writeString(f, "+0\n");
                clockFiles.add(f);
            }
            NetLab netLab = lab;
            ProcessCluster.Launch launch = new ProcessCluster.Launch(
                    i -> netLab != null ? netLab.prefix(i) : List.of(),
                    i -> faketime == null ? Map.of() : Map.of("LD_PRELOAD", faketime.toString(),
                            "FAKETIME_TIMESTAMP_FILE", clockFiles.get(i).toString(),
                            "FAKETIME_DONT_FAKE_MONOTONIC", "1", "FAKETIME_CACHE_DURATION", "1",
                            // the fix libfaketime turns on for this glibc makes timed waits misfire: a node took 90 s to start
                            "FAKETIME_FORCE_MONOTONIC_FIX", "0"));
            log.println("starting " + nodes + " nodes at " + String.join(", ", endpoints)
                    + (join ? "; the spare node that join events start: " + all.get(nodes) : ""));
            cluster = ProcessCluster.start(files, dataRoot, serverJvmArgs, Duration.ofSeconds(120), launch, nodes);
            client = parent.connector().apply(new ClientConfig(endpoints, 2_000L, 8_000L, readMode, null, null));
            List<RegionInfo> regions = tilingRegions(client, REGION_MAP_WAIT);
            log.println("register keys in each of the " + regions.size() + " regions");
            KeySpace space = KeySpace.place(regions.stream().map(RegionInfo::startKey)
                    .sorted(Arrays::compareUnsigned).toList(), keysPerRegion);
            List<byte[]> keys = space.keys();
            List<byte[]> freshPrefixes = space.freshPrefixes();
            long origin = System.nanoTime();
            Map<Nemesis.Fault, List<Double>> recoveries = new java.util.EnumMap<>(Nemesis.Fault.class);
            SplitEvent splits = kinds.contains(Nemesis.Fault.SPLIT) || splitDuringFaults
                    ? new SplitEvent(SplitEvent.Admin.of(client), keys, new Random(s + 1)) : null;
            MergeEvent merges = kinds.contains(Nemesis.Fault.MERGE)
                    ? new MergeEvent(MergeEvent.Admin.of(client), keys, new Random(s + 2)) : null;
            DrainEvent drains = kinds.contains(Nemesis.Fault.DRAIN)
                    ? new DrainEvent(DrainEvent.Admin.of(client), all, drainHold().toMillis(), new Random(s + 3))
                    : null;
            JoinEvent joins = join ? new JoinEvent(DrainEvent.Admin.of(client), NodeProcesses.of(cluster), nodes,
                    all.get(nodes), drainHold().toMillis()) : null;
            ReplaceEvent replaces = null;
            if (kinds.contains(Nemesis.Fault.REPLACE)) {
                Transport t = new Transport(cluster.configs().get(0).tls());
                regionsTransport = t;
                replaces = new ReplaceEvent(DrainEvent.Admin.of(client), node -> {
                    RegionMapCheck.NodeView v = RegionMapCheck.fetch(t, List.of(node)).get(0);
                    if (v.regions() == null) {
                        throw new KvException(io.kvraft.common.ErrorCode.UNAVAILABLE, v.error());
                    }
                    return v.regions();
                }, NodeProcesses.of(cluster), endpoints, drainHold().toMillis(), new Random(s + 4));
            }
            Nemesis nemesis = new Nemesis(cluster, lab, clockFiles, kinds, hold.toMillis(), new Random(s), log, origin,
                    splits, merges, drains).splitDuringFaults(splitDuringFaults).membership(joins, replaces);
            RegisterWorkload load = new RegisterWorkload(client, keys, freshPrefixes, threads, rate, s, origin);
            log.printf(Locale.ROOT, "%d regions, %d keys, %d client threads at %.0f ops/s%n", regions.size(), keys.size(),
                    threads, rate);
            load.start();
            List<KvClient> lockClients = new ArrayList<>();
            for (int i = 0; workload.equals("lock") && i < 4; i++) {
                lockClients.add(parent.connector().apply(new ClientConfig(endpoints, 2_000L, 8_000L, null, null, null)));
            }
            LockWorkload locks = lockClients.isEmpty() ? null : new LockWorkload(lockClients, 3, s);
            if (locks != null) {
                locks.start();
            }
            Progress progress = new Progress(load, nemesis, log, origin);
            progress.start();
            Histogram during;
            long lastHealNs;
            Nemesis.Fault lastFault = null;
            try {
                int n = 0;
                long end = origin + durationNs;
                long base = origin; // the schedule's origin: moved on when a cycle runs past the next one's start
                try {
                    sleepUntil(Math.min(slot(base, 0), end));
                    // until the cycle taken as the last: its start is the last that is before the end
                    boolean any = System.nanoTime() < end;
                    while (any) {
                        boolean last = slot(base, n + 1) >= end;
                        lastFault = nemesis.cycle(n++, last);
                        if (last) {
                            break; // the last fault's recovery is awaited below
                        }
                        base = rebase(base, slot(base, n), System.nanoTime(), interval.toNanos() - hold.toNanos());
                        recoveries.computeIfAbsent(lastFault, k -> new ArrayList<>())
                                .add(watchRecovery(cluster, load, nemesis.healedNs(), slot(base, n)));
                    }
                } finally {
                    nemesis.healAll();
                }
                lastHealNs = System.nanoTime();
                during = load.latency.getIntervalHistogram();
                log.printf(Locale.ROOT, "[%6.1f s] last heal; waiting for recovery%n", (lastHealNs - origin) / 1e9);
            } catch (RuntimeException | InterruptedException e) {
                progress.stop();
                load.stop();
                if (locks != null) {
                    locks.stop();
                    lockClients.forEach(KvClient::close);
                }
                throw e;
            }
            Recovery rec = awaitRecovery(cluster, load, lastHealNs, recoveryTimeout);
            if (lastFault != null) {
                recoveries.computeIfAbsent(lastFault, k -> new ArrayList<>()).add(rec.recovered() ? rec.seconds() : Double.NaN);
            }
            nemesis.finishJoins(); // the spare out again, under the workload, once the last fault's recovery is measured
            load.stop();
            progress.stop();
            LockChecker.Result lockCheck = null;
            if (locks != null) {
                locks.stop();
                lockClients.forEach(KvClient::close);
                lockCheck = LockChecker.check(new ArrayList<>(locks.holds), new ArrayList<>(locks.ranges));
            }
            Histogram after = load.latency.getIntervalHistogram();
            int unread = load.finalReads(System.nanoTime() + TimeUnit.SECONDS.toNanos(60));
            long[] lost = verifyFresh(client, load);
            RegionMapCheck.Result regionMap;
            try (Transport transport = new Transport(cluster.configs().get(0).tls())) {
                // the nodes running now: the join events' spare only when it stayed a member
                List<String> servers = new ArrayList<>();
                for (int i = 0; i < total; i++) {
                    if (cluster.isRunning(i)) {
                        servers.add(all.get(i));
                    }
                }
                boolean membership = kinds.stream().anyMatch(Nemesis.Fault::isMembership);
                regionMap = RegionMapCheck.await(() -> RegionMapCheck.fetch(transport, servers),
                        servers.size() > FACTOR ? FACTOR : 0, membership ? REGION_MAP_WAIT_MEMBERSHIP : REGION_MAP_WAIT,
                        Duration.ofMillis(500));
            }
            log.printf(Locale.ROOT, "region map: %s%n", regionMap.text());
            List<Op> history = new ArrayList<>(load.history);
            log.printf(Locale.ROOT, "checking %,d operations on %d keys (budget %s)%n", history.size(), keys.size(),
                    DurationConverter.text(checkBudget));
            HistoryCheck.Summary check = HistoryCheck.check(history, checkBudget.toNanos());
            Report report = new Report(DurationConverter.text(duration), engine, kinds, keys.size(), load, nemesis, check, lost, unread, rec,
                    recoveries, during, after, origin, regions.size(), regionMap);
            report.write(out, history);
            parent.stdout().print(report.text());
            if (lockCheck != null) {
                parent.stdout().print(LockChecker.text(lockCheck));
                Files.writeString(out.resolve("locks.txt"), LockChecker.text(lockCheck));
            }
            return lockCheck == null || lockCheck.ok() ? report.exitCode() : BenchmarkMain.EXIT_FAILED;
        } finally {
            if (regionsTransport != null) {
                regionsTransport.close();
            }
            if (client != null) {
                client.close();
            }
            if (cluster != null) {
                for (int i = 0; i < total; i++) {
                    if (cluster.isRunning(i)) {
                        try {
                            cluster.resume(i); // a paused JVM cannot handle SIGTERM
                        } catch (RuntimeException ignored) {
                            // not paused
                        }
                    }
                }
                cluster.close();
            }
            if (lab != null) {
                lab.close();
            }
            for (int i = 1; i <= total; i++) {
                Path nodeLog = dataRoot.resolve("node" + i + ".log");
                if (Files.isRegularFile(nodeLog)) {
                    Files.copy(nodeLog, out.resolve("node" + i + ".log"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                }
            }
            ClusterSession.deleteQuietly(dataRoot);
        }
    }

    /** How long a drain waits for its node to hold no replica: --drain-hold, or --hold when not given. */
    Duration drainHold() {
        return drainHold != null ? drainHold : hold;
    }

    /**
     * The schedule's origin after a cycle that ended at {@code now}: unchanged when the next fault's start
     * {@code nextSlot} is still ahead; else (a drain held longer than the interval leaves, a slow split) moved on so
     * that the next fault starts {@code gapNanos} (the usual gap between a heal and the next fault) from now. The
     * faults after it move with it, and the run's last fault is still a kill, if past --duration.
     */
    static long rebase(long base, long nextSlot, long now, long gapNanos) {
        long late = now - nextSlot;
        return late > 0 ? base + late + gapNanos : base;
    }

    /** When fault n (0-based) starts: the hold ends on a multiple of --interval from {@code origin}. */
    private long slot(long origin, int n) {
        return origin + interval.toNanos() * (n + 1) - hold.toNanos();
    }

    /**
     * Between a heal and the next fault: seconds until every region is led and no operation fails any more,
     * or NaN if that did not happen before {@code untilNs} (errors in its last second count as not yet).
     */
    private static double watchRecovery(ProcessCluster cluster, RegisterWorkload load, long healNs, long untilNs)
            throws InterruptedException {
        long ledNs = -1;
        while (System.nanoTime() < untilNs) {
            if (ledNs < 0 && cluster.unled() == null) {
                ledNs = System.nanoTime();
            }
            Thread.sleep(Math.max(1, Math.min(200, TimeUnit.NANOSECONDS.toMillis(untilNs - System.nanoTime())))); // poll
        }
        long lastErr = load.lastErrorNs.get();
        if (ledNs < 0 || untilNs - lastErr < TimeUnit.SECONDS.toNanos(1)) {
            return Double.NaN;
        }
        return Math.max(0, Math.max(ledNs, lastErr) - healNs) / 1e9;
    }

    /** Recovery: all regions led, and the last error seen after the heal; within {@code limitSeconds} or not. */
    record Recovery(double ledAfterSeconds, double lastErrorAfterSeconds, boolean recovered, double limitSeconds) {
        double seconds() {
            return Math.max(ledAfterSeconds, lastErrorAfterSeconds);
        }
    }

    /** Polls until every region is led, then runs on until 10 s pass without an error (at most {@code timeout}). */
    private static Recovery awaitRecovery(ProcessCluster cluster, RegisterWorkload load, long healNs, Duration timeout)
            throws InterruptedException {
        long limit = healNs + timeout.toNanos();
        double limitSeconds = timeout.toMillis() / 1e3;
        long ledNs = -1;
        while (System.nanoTime() < limit) {
            if (ledNs < 0 && cluster.unled() == null) {
                ledNs = System.nanoTime();
            }
            long lastErr = load.lastErrorNs.get();
            long quietSince = Math.max(lastErr, healNs);
            if (ledNs >= 0 && System.nanoTime() - Math.max(quietSince, ledNs) > TimeUnit.SECONDS.toNanos(10)) {
                return new Recovery((ledNs - healNs) / 1e9, Math.max(0, lastErr - healNs) / 1e9, true, limitSeconds);
            }
            Thread.sleep(200); // polling interval
        }
        long lastErr = load.lastErrorNs.get();
        return new Recovery(ledNs < 0 ? Double.NaN : (ledNs - healNs) / 1e9, Math.max(0, lastErr - healNs) / 1e9, false,
                limitSeconds);
    }

    /** Reads back every acknowledged fresh-key put: {checked, missing or wrong, unreadable}. */
    private static long[] verifyFresh(KvClient client, RegisterWorkload load) {
        List<long[]> acked = new ArrayList<>(load.freshAcked);
        long bad = 0;
        long unreadable = 0;
        for (int from = 0; from < acked.size(); from += 500) {
            List<long[]> chunk = acked.subList(from, Math.min(acked.size(), from + 500));
            List<byte[]> ks = chunk.stream().map(a -> load.freshKey((int) a[0], a[1])).toList();
            List<byte[]> got = null;
            for (int attempt = 0; attempt < 5 && got == null; attempt++) {
                try {
                    got = client.multiGet(ks).get(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    KvException.unwrap(e);
                }
            }
            if (got == null) {
                unreadable += chunk.size();
                continue;
            }
            for (int i = 0; i < chunk.size(); i++) {
                if (!Arrays.equals(got.get(i), RegisterWorkload.encode(chunk.get(i)[2]))) {
                    bad++;
                }
            }
        }
        return new long[]{acked.size(), bad, unreadable};
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
    private String raftYaml() {
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

    /**
     * The cluster's regions once the nodes' answers tile the key space: a node that has just started may not list its
     * regions yet, and with more nodes than replicas per region no one node lists them all.
     */
    private static List<RegionInfo> tilingRegions(KvClient client, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            MergedRegions views = new MergedRegions().add(client.admin().regions().join());
            if (views.covers()) {
                return views.regions();
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the nodes' regions do not tile the key space after "
                        + timeout.toSeconds() + " s: " + views.regions().size() + " regions listed");
            }
            Thread.sleep(200); // polling interval: the nodes list their regions within a second of starting
        }
    }

    private static void sleepUntil(long nanoTime) throws InterruptedException {
        long wait = nanoTime - System.nanoTime();
        if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait); // the fault schedule
        }
    }

    /** A line every 10 s: operations so far and the fault in force. */
    private static final class Progress {
        private final Thread thread;
        private volatile boolean running = true;

        Progress(RegisterWorkload load, Nemesis nemesis, PrintStream log, long origin) {
            thread = new Thread(() -> {
                while (running) {
                    try {
                        Thread.sleep(10_000); // report interval
                    } catch (InterruptedException e) {
                        return;
                    }
                    log.printf(Locale.ROOT, "[%6.1f s] ops ok %,d, failed %,d, indeterminate %,d; faults so far %d, now: %s%n",
                            (System.nanoTime() - origin) / 1e9, load.ok.get(), load.failed.get(), load.unknown.get(),
                            nemesis.events.size(), nemesis.current());
                }
            }, "nemesis-progress");
            thread.setDaemon(true);
        }

        void start() {
            thread.start();
        }

        void stop() {
            running = false;
            thread.interrupt();
        }
    }
}
