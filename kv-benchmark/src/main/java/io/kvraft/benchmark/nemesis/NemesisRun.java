package io.kvraft.benchmark.nemesis;

import io.kvraft.benchmark.BenchmarkMain;
import io.kvraft.benchmark.ClusterSession;
import io.kvraft.benchmark.DurationConverter;
import io.kvraft.client.KvClient;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.KvException;
import io.kvraft.client.admin.MergedRegions;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.launch.LocalClusterConfigs;
import io.kvraft.server.launch.ProcessCluster;
import org.HdrHistogram.Histogram;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * One run of {@code kv-benchmark nemesis} with options its {@link NemesisCommand} has checked: the local cluster
 * started, the workload and the fault schedule run, the recovery after the last heal awaited, the history and the
 * nodes' region maps checked, the report written, and everything the run started stopped and removed.
 */
final class NemesisRun {

    private static final String NODE_PORT = "7001";
    /** How long the nodes get after the run to agree on the region map. */
    private static final Duration REGION_MAP_WAIT = Duration.ofSeconds(60);
    /** ... with join or replace events: a rebuild of every replica of a node (24 moves) may still be under way. */
    private static final Duration REGION_MAP_WAIT_MEMBERSHIP = Duration.ofSeconds(180);

    /** How the fault phase ended: the latency during it, when the last heal was, and the last fault. */
    private record Faulted(Histogram during, long lastHealNs, Nemesis.Fault lastFault) {
    }

    private final NemesisCommand cmd;
    private final List<Nemesis.Fault> kinds;
    private final boolean join;
    /** Nodes of the run: with join events the last one is the spare, not started at first. */
    private final int total;
    private final boolean network;
    private final boolean clock;
    private final Path faketime;
    private final PrintStream log;

    private Path dataRoot;
    private NetLab lab;
    private ProcessCluster cluster;
    private KvClient client;
    private Transport regionsTransport; // the replace events ask the replaced node for its own regions over it
    private final List<String> all = new ArrayList<>();
    private List<String> endpoints;
    private final List<KvClient> lockClients = new ArrayList<>();
    private LockWorkload locks;

    /** @param faketime libfaketime, when the clock fault is among {@code kinds}, else null */
    NemesisRun(NemesisCommand cmd, List<Nemesis.Fault> kinds, Path faketime) {
        this.cmd = cmd;
        this.kinds = kinds;
        this.join = kinds.contains(Nemesis.Fault.JOIN);
        this.total = cmd.nodes + (join ? 1 : 0);
        this.network = kinds.stream().anyMatch(Nemesis.Fault::needsNetwork);
        this.clock = kinds.contains(Nemesis.Fault.CLOCK);
        this.faketime = faketime;
        this.log = cmd.parent.stderr();
    }

    int call() throws Exception {
        long s = cmd.seed != null ? cmd.seed : System.currentTimeMillis();
        Files.createDirectories(cmd.out);
        dataRoot = Files.createTempDirectory("kv-nemesis-");
        log.printf(Locale.ROOT, "nemesis: %s of %s%s, %d nodes, engine %s, reads %s%s, seed %d, data in %s%n",
                DurationConverter.text(cmd.duration),
                String.join(",", kinds.stream().map(Nemesis.Fault::label).toList()),
                cmd.splitDuringFaults ? " (and a split during each)" : "", cmd.nodes, cmd.engine, cmd.readMode,
                cmd.raftKeys.isEmpty() ? "" : ", raft " + String.join(" ", cmd.raftKeys), s, dataRoot);
        try {
            List<Path> clockFiles = startCluster();
            List<RegionInfo> regions = tilingRegions(client, REGION_MAP_WAIT);
            log.println("register keys in each of the " + regions.size() + " regions");
            KeySpace space = KeySpace.place(regions.stream().map(RegionInfo::startKey)
                    .sorted(Arrays::compareUnsigned).toList(), cmd.keysPerRegion);
            List<byte[]> keys = space.keys();
            List<byte[]> freshPrefixes = space.freshPrefixes();
            long origin = System.nanoTime();
            Map<Nemesis.Fault, List<Double>> recoveries = new java.util.EnumMap<>(Nemesis.Fault.class);
            Nemesis nemesis = nemesis(clockFiles, keys, s, origin);
            RegisterWorkload load = new RegisterWorkload(client, keys, freshPrefixes, cmd.threads, cmd.rate, s, origin);
            log.printf(Locale.ROOT, "%d regions, %d keys, %d client threads at %.0f ops/s%n", regions.size(), keys.size(),
                    cmd.threads, cmd.rate);
            load.start();
            for (int i = 0; cmd.workload.equals("lock") && i < 4; i++) {
                lockClients.add(cmd.parent.connector().apply(new ClientConfig(endpoints, 2_000L, 8_000L, null, null, null)));
            }
            locks = lockClients.isEmpty() ? null : new LockWorkload(lockClients, 3, s);
            if (locks != null) {
                locks.start();
            }
            Progress progress = new Progress(load, nemesis, log, origin);
            progress.start();
            Faulted faulted = faults(nemesis, load, progress, recoveries, origin);
            return finish(nemesis, load, progress, recoveries, faulted, keys, regions, origin);
        } finally {
            cleanUp();
        }
    }

    /** Starts the cluster (in network namespaces for partition and loss) and the client; the clock files, if any. */
    private List<Path> startCluster() throws Exception {
        lab = network ? NetLab.create(total) : null;
        List<Integer> ports = LocalClusterConfigs.freePorts(total);
        for (int i = 0; i < total; i++) {
            all.add(lab != null ? lab.nodeIp(i) + ":" + NODE_PORT : "127.0.0.1:" + ports.get(i));
        }
        endpoints = all.subList(0, cmd.nodes);
        List<Path> files = new ArrayList<>(LocalClusterConfigs.write(dataRoot.resolve("conf"), endpoints, cmd.engine,
                cmd.raftYaml(),
                // a merge a fault holds up is rolled back well inside this client's 8 s deadline, so its outcome is known
                "intervalMs: 1000", "merge:\n  timeoutMs: 4000\n" + cmd.membershipYaml()));
        if (join) {
            Path spare = dataRoot.resolve("conf").resolve("server-" + total + ".yaml");
            Files.writeString(spare, NemesisCommand.joinYaml(Files.readString(files.get(0)), all.get(cmd.nodes), endpoints));
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
        log.println("starting " + cmd.nodes + " nodes at " + String.join(", ", endpoints)
                + (join ? "; the spare node that join events start: " + all.get(cmd.nodes) : ""));
        cluster = ProcessCluster.start(files, dataRoot, cmd.serverJvmArgs, Duration.ofSeconds(120), launch, cmd.nodes);
        client = cmd.parent.connector().apply(new ClientConfig(endpoints, 2_000L, 8_000L, cmd.readMode, null, null));
        return clockFiles;
    }

    /** The nemesis with the events among {@code kinds}, each with a seed of its own. */
    private Nemesis nemesis(List<Path> clockFiles, List<byte[]> keys, long s, long origin) {
        SplitEvent splits = kinds.contains(Nemesis.Fault.SPLIT) || cmd.splitDuringFaults
                ? new SplitEvent(SplitEvent.Admin.of(client), keys, new Random(s + 1)) : null;
        MergeEvent merges = kinds.contains(Nemesis.Fault.MERGE)
                ? new MergeEvent(MergeEvent.Admin.of(client), keys, new Random(s + 2)) : null;
        long drainHoldMs = cmd.drainHold().toMillis();
        DrainEvent drains = kinds.contains(Nemesis.Fault.DRAIN)
                ? new DrainEvent(DrainEvent.Admin.of(client), all, drainHoldMs, new Random(s + 3))
                : null;
        JoinEvent joins = join ? new JoinEvent(DrainEvent.Admin.of(client), NodeProcesses.of(cluster), cmd.nodes,
                all.get(cmd.nodes), drainHoldMs) : null;
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
            }, NodeProcesses.of(cluster), endpoints, drainHoldMs, new Random(s + 4));
        }
        return new Nemesis(cluster, lab, clockFiles, kinds, cmd.hold.toMillis(), new Random(s), log, origin,
                splits, merges, drains).splitDuringFaults(cmd.splitDuringFaults).membership(joins, replaces);
    }

    /** Runs the fault schedule to --duration, every fault healed at the end; the workload stops if it fails. */
    private Faulted faults(Nemesis nemesis, RegisterWorkload load, Progress progress,
                           Map<Nemesis.Fault, List<Double>> recoveries, long origin) throws InterruptedException {
        Nemesis.Fault lastFault = null;
        try {
            int n = 0;
            long end = origin + cmd.duration.toNanos();
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
                    base = rebase(base, slot(base, n), System.nanoTime(), cmd.interval.toNanos() - cmd.hold.toNanos());
                    recoveries.computeIfAbsent(lastFault, k -> new ArrayList<>())
                            .add(Recovery.watch(cluster, load, nemesis.healedNs(), slot(base, n)));
                }
            } finally {
                nemesis.healAll();
            }
            long lastHealNs = System.nanoTime();
            Histogram during = load.latency.getIntervalHistogram();
            log.printf(Locale.ROOT, "[%6.1f s] last heal; waiting for recovery%n", (lastHealNs - origin) / 1e9);
            return new Faulted(during, lastHealNs, lastFault);
        } catch (RuntimeException | InterruptedException e) {
            progress.stop();
            load.stop();
            if (locks != null) {
                locks.stop();
                lockClients.forEach(KvClient::close);
            }
            throw e;
        }
    }

    /** After the last heal: the recovery, the checks, the report; the run's exit code. */
    private int finish(Nemesis nemesis, RegisterWorkload load, Progress progress,
                       Map<Nemesis.Fault, List<Double>> recoveries, Faulted faulted, List<byte[]> keys,
                       List<RegionInfo> regions, long origin) throws Exception {
        Recovery rec = Recovery.await(cluster, load, faulted.lastHealNs(), cmd.recoveryTimeout);
        if (faulted.lastFault() != null) {
            recoveries.computeIfAbsent(faulted.lastFault(), k -> new ArrayList<>())
                    .add(rec.recovered() ? rec.seconds() : Double.NaN);
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
        RegionMapCheck.Result regionMap = regionMap();
        log.printf(Locale.ROOT, "region map: %s%n", regionMap.text());
        List<Op> history = new ArrayList<>(load.history);
        log.printf(Locale.ROOT, "checking %,d operations on %d keys (budget %s)%n", history.size(), keys.size(),
                DurationConverter.text(cmd.checkBudget));
        HistoryCheck.Summary check = HistoryCheck.check(history, cmd.checkBudget.toNanos());
        Report report = new Report(DurationConverter.text(cmd.duration), cmd.engine, kinds, keys.size(), load, nemesis,
                check, lost, unread, rec, recoveries, faulted.during(), after, origin, regions.size(), regionMap);
        report.write(cmd.out, history);
        cmd.parent.stdout().print(report.text());
        if (lockCheck != null) {
            cmd.parent.stdout().print(LockChecker.text(lockCheck));
            Files.writeString(cmd.out.resolve("locks.txt"), LockChecker.text(lockCheck));
        }
        return lockCheck == null || lockCheck.ok() ? report.exitCode() : BenchmarkMain.EXIT_FAILED;
    }

    /** Waits for the nodes running now (the join events' spare only when it stayed a member) to agree on the regions. */
    private RegionMapCheck.Result regionMap() throws InterruptedException {
        try (Transport transport = new Transport(cluster.configs().get(0).tls())) {
            List<String> servers = new ArrayList<>();
            for (int i = 0; i < total; i++) {
                if (cluster.isRunning(i)) {
                    servers.add(all.get(i));
                }
            }
            boolean membership = kinds.stream().anyMatch(Nemesis.Fault::isMembership);
            return RegionMapCheck.await(() -> RegionMapCheck.fetch(transport, servers),
                    servers.size() > NemesisCommand.FACTOR ? NemesisCommand.FACTOR : 0,
                    membership ? REGION_MAP_WAIT_MEMBERSHIP : REGION_MAP_WAIT, Duration.ofMillis(500));
        }
    }

    /** Stops what the run started (a paused node is resumed first), keeps the nodes' logs, removes the data. */
    private void cleanUp() throws Exception {
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
                Files.copy(nodeLog, cmd.out.resolve("node" + i + ".log"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        }
        ClusterSession.deleteQuietly(dataRoot);
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
        return origin + cmd.interval.toNanos() * (n + 1) - cmd.hold.toNanos();
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
}
