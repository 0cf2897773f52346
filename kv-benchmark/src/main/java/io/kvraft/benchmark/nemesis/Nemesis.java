package io.kvraft.benchmark.nemesis;

import io.kvraft.server.launch.ProcessCluster;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Injects one fault at a time into a local process cluster and heals it: kill -9 and restart of a
 * node (half the time the one leading most regions), SIGSTOP/SIGCONT, isolation of a node both ways,
 * packet loss, and a wall-clock jump; and, as events among them, a split of a region ({@link SplitEvent}), a
 * merge of two adjacent regions ({@link MergeEvent}), a drain of a node, undrained at its end ({@link DrainEvent}), a
 * spare node that joins or, the next time, is drained and removed ({@link JoinEvent}), and a node replaced by an empty
 * one at its address ({@link ReplaceEvent}), which have nothing to heal. Every injection and heal is logged with its
 * time. The faults hit the cluster's first nodes, not the spare.
 */
final class Nemesis {

    enum Fault {
        KILL, KILL_MAJORITY, PAUSE, PARTITION, LOSS, CLOCK, SPLIT, MERGE, DRAIN, JOIN, REPLACE;

        /** The names --faults takes, as its help and errors list them. */
        static final String NAMES = "kill, kill-majority, pause, partition, loss, clock, split, merge, drain, join,"
                + " replace";

        static Fault parse(String s) {
            try {
                String name = s.trim().toLowerCase(Locale.ROOT);
                if (name.contains("_")) {
                    throw new IllegalArgumentException(name); // the names are kill-majority, not kill_majority
                }
                return valueOf(name.toUpperCase(Locale.ROOT).replace('-', '_'));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown fault '" + s.trim() + "' (known: " + NAMES + ")");
            }
        }

        /** The name --faults takes and reports print: kill-majority for KILL_MAJORITY. */
        String label() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }

        boolean needsNetwork() {
            return this == PARTITION || this == LOSS;
        }

        /**
         * A split, a merge, a drain, a join or a replace: an event with nothing to heal (a drain undoes itself at its
         * end, a replace restarts its node, a joined node is removed by the next join event or at the run's end).
         */
        boolean isEvent() {
            return this == SPLIT || this == MERGE || this == DRAIN || this == JOIN || this == REPLACE;
        }

        /** A join or a replace: needs the cluster map and placement (replication.factor given to the nodes). */
        boolean isMembership() {
            return this == JOIN || this == REPLACE;
        }
    }

    /**
     * One injected fault: what, where (-1 for a split or a merge, and for a drain that picked no node), and when
     * (seconds from the run's start).
     */
    record Event(Fault fault, int node, String detail, double injectedAt, double healedAt) {
    }

    private final ProcessCluster cluster;
    private final NetLab lab;            // null without network faults
    private final List<Path> clockFiles; // empty without clock faults
    private final List<Fault> faults;
    private final long holdMs;
    private final Random rnd;
    private final PrintStream log;
    private final long originNs;
    private final SplitEvent splits; // null without split events
    private final MergeEvent merges; // null without merge events
    private final DrainEvent drains; // null without drain events
    private JoinEvent joins;         // null without join events
    private ReplaceEvent replaces;   // null without replace events
    private int nodes;
    private volatile boolean splitDuringFaults;
    private volatile long healedNs;
    final List<Event> events = new java.util.concurrent.CopyOnWriteArrayList<>();
    private volatile String current = "none";

    Nemesis(ProcessCluster cluster, NetLab lab, List<Path> clockFiles, List<Fault> faults, long holdMs, Random rnd,
            PrintStream log, long originNs) {
        this(cluster, lab, clockFiles, faults, holdMs, rnd, log, originNs, null);
    }

    Nemesis(ProcessCluster cluster, NetLab lab, List<Path> clockFiles, List<Fault> faults, long holdMs, Random rnd,
            PrintStream log, long originNs, SplitEvent splits) {
        this(cluster, lab, clockFiles, faults, holdMs, rnd, log, originNs, splits, null);
    }

    Nemesis(ProcessCluster cluster, NetLab lab, List<Path> clockFiles, List<Fault> faults, long holdMs, Random rnd,
            PrintStream log, long originNs, SplitEvent splits, MergeEvent merges) {
        this(cluster, lab, clockFiles, faults, holdMs, rnd, log, originNs, splits, merges, null);
    }

    /** The cluster's node count is that of {@code cluster} (3 without one, in tests). */
    Nemesis(ProcessCluster cluster, NetLab lab, List<Path> clockFiles, List<Fault> faults, long holdMs, Random rnd,
            PrintStream log, long originNs, SplitEvent splits, MergeEvent merges, DrainEvent drains) {
        if (faults.contains(Fault.SPLIT) && splits == null) {
            throw new IllegalArgumentException("split events need a SplitEvent");
        }
        if (faults.contains(Fault.MERGE) && merges == null) {
            throw new IllegalArgumentException("merge events need a MergeEvent");
        }
        if (faults.contains(Fault.DRAIN) && drains == null) {
            throw new IllegalArgumentException("drain events need a DrainEvent");
        }
        this.splits = splits;
        this.merges = merges;
        this.drains = drains;
        this.nodes = cluster != null ? cluster.servers().size() : 3;
        this.cluster = cluster;
        this.lab = lab;
        this.clockFiles = clockFiles;
        this.faults = faults;
        this.holdMs = holdMs;
        this.rnd = rnd;
        this.log = log;
        this.originNs = originNs;
    }

    String current() {
        return current;
    }

    /** When the last cycle healed its fault (System.nanoTime()); a split during it may have been answered later. */
    long healedNs() {
        return healedNs;
    }

    /** The split events' outcomes; null without split events. */
    SplitEvent splits() {
        return splits;
    }

    /** The merge events' outcomes; null without merge events. */
    MergeEvent merges() {
        return merges;
    }

    /** The drain events' outcomes; null without drain events. */
    DrainEvent drains() {
        return drains;
    }

    /** The join events' outcomes; null without join events. */
    JoinEvent joins() {
        return joins;
    }

    /** The replace events' outcomes; null without replace events. */
    ReplaceEvent replaces() {
        return replaces;
    }

    /** The cluster's first nodes, the ones faults hit (without the spare of the join events). */
    int nodes() {
        return nodes;
    }

    /**
     * The join and replace events (either may be null when not among the faults). With join events the cluster's last
     * node is their spare ({@link JoinEvent#slot()}): the other faults leave it alone.
     */
    Nemesis membership(JoinEvent joins, ReplaceEvent replaces) {
        if (faults.contains(Fault.JOIN) && joins == null) {
            throw new IllegalArgumentException("join events need a JoinEvent");
        }
        if (faults.contains(Fault.REPLACE) && replaces == null) {
            throw new IllegalArgumentException("replace events need a ReplaceEvent");
        }
        this.joins = joins;
        this.replaces = replaces;
        if (joins != null) {
            this.nodes = joins.slot();
        }
        return this;
    }

    /**
     * With {@code on}, every fault other than a split, a merge or a drain also splits a region while it is in force:
     * half-way through its hold (right after a kill, while the node is down). The fault is healed on time whether or not
     * the split has been answered; the cycle returns once it has been.
     */
    Nemesis splitDuringFaults(boolean on) {
        if (on && splits == null) {
            throw new IllegalArgumentException("splits during faults need a SplitEvent");
        }
        this.splitDuringFaults = on;
        return this;
    }

    /**
     * Injects the next fault (or a kill as the run's last, when kills are wanted, so the recovery after the
     * last heal is a real one), holds it, heals it; returns when healed, with the kind it was.
     */
    Fault cycle(int n, boolean last) throws InterruptedException {
        Fault f = last && faults.contains(Fault.KILL) ? Fault.KILL : faults.get(n % faults.size());
        if ((f == Fault.JOIN && joins == null) || (f == Fault.REPLACE && replaces == null)) {
            throw new IllegalStateException(f + " events need Nemesis.membership(...)");
        }
        int node = rnd.nextInt(nodes);
        String detail;
        double at = now();
        CompletableFuture<String> during = null;
        switch (f) {
            case SPLIT -> {
                node = -1;
                current = "split";
                log.printf(Locale.ROOT, "[%6.1f s] fault: split a region%n", at);
                detail = splits.run(); // returns when the split is answered (or not, within its deadline)
                log.printf(Locale.ROOT, "[%6.1f s] %s%n", now(), detail);
            }
            case MERGE -> {
                node = -1;
                current = "merge";
                log.printf(Locale.ROOT, "[%6.1f s] fault: merge two regions%n", at);
                detail = merges.run(); // returns when the merge is answered (or not, within its deadline)
                log.printf(Locale.ROOT, "[%6.1f s] %s%n", now(), detail);
            }
            case DRAIN -> {
                current = "drain";
                log.printf(Locale.ROOT, "[%6.1f s] fault: drain a node%n", at);
                detail = drains.run(); // returns once the node is undrained (drained, or after --drain-hold)
                node = drains.index(drains.lastNode());
                log.printf(Locale.ROOT, "[%6.1f s] %s%n", now(), detail);
            }
            case JOIN -> {
                current = "join";
                node = joins.slot();
                log.printf(Locale.ROOT, "[%6.1f s] fault: %s%n", at, joins.member() ? "drain and remove the spare node"
                        : "the spare node joins");
                detail = joins.run(); // returns once it joined (or not), or drained and removed (or not), within its waits
                log.printf(Locale.ROOT, "[%6.1f s] %s%n", now(), detail);
            }
            case REPLACE -> {
                current = "replace";
                log.printf(Locale.ROOT, "[%6.1f s] fault: replace a node by an empty one%n", at);
                detail = replaces.run(); // returns once it is rebuilt, or after --drain-hold (or skipped at once)
                node = replaces.index(replaces.lastNode());
                log.printf(Locale.ROOT, "[%6.1f s] %s%n", now(), detail);
            }
            case KILL -> {
                if (rnd.nextBoolean()) {
                    Map<Integer, Integer> counts = cluster.leaderCounts();
                    node = counts.entrySet().stream().filter(e -> e.getKey() < nodes)
                            .max(Map.Entry.comparingByValue()).orElseThrow().getKey();
                    detail = "kill -9 node " + (node + 1) + " (leads " + counts.get(node) + " regions, the most), restart";
                } else {
                    detail = "kill -9 node " + (node + 1) + ", restart";
                }
                announce(f, detail, at);
                cluster.kill(node);
                during = splitLater(0);
                Thread.sleep(holdMs / 2); // down for a while, then back with its data
                cluster.startNode(node);
            }
            case KILL_MAJORITY -> {
                List<Integer> order = new ArrayList<>();
                for (int i = 0; i < nodes; i++) {
                    order.add(i);
                }
                java.util.Collections.shuffle(order, rnd);
                List<Integer> victims = order.subList(0, nodes / 2 + 1).stream().sorted().toList();
                node = victims.get(0);
                detail = "kill -9 nodes " + victims.stream().map(i -> String.valueOf(i + 1))
                        .collect(java.util.stream.Collectors.joining(", ")) + " at once (a majority of the nodes), restart"
                        + " them together";
                announce(f, detail, at);
                victims.forEach(cluster::kill);
                Thread.sleep(holdMs / 2); // down for a while, then back with their data
                for (int v : victims) {
                    cluster.startNode(v);
                }
            }
            case PAUSE -> {
                int t = node;
                detail = "SIGSTOP node " + (t + 1) + " for " + holdMs + " ms, SIGCONT";
                during = hold(f, detail, at, () -> cluster.pause(t), () -> cluster.resume(t));
            }
            case PARTITION -> {
                int t = node;
                detail = "isolate node " + (t + 1) + " both ways for " + holdMs + " ms";
                during = hold(f, detail, at, () -> lab.isolate(t), () -> lab.heal(t));
            }
            case LOSS -> {
                int t = node;
                detail = "30% packet loss at node " + (t + 1) + " for " + holdMs + " ms";
                during = hold(f, detail, at, () -> lab.lossy(t, 0.3), () -> lab.heal(t));
            }
            default -> {
                int t = node;
                int jump = (rnd.nextBoolean() ? 1 : -1) * (60 + rnd.nextInt(540));
                detail = "wall clock of node " + (t + 1) + " jumps " + (jump > 0 ? "+" : "") + jump + " s for "
                        + holdMs + " ms";
                during = hold(f, detail, at, () -> setClock(t, jump), () -> setClock(t, 0));
            }
        }
        healedNs = System.nanoTime();
        double healed = (healedNs - originNs) / 1e9;
        log.printf(Locale.ROOT, "[%6.1f s] %s: %s%n", healed, f.isEvent() ? "over" : "healed",
                f.label());
        if (during != null) {
            String line = awaitSplit(during);
            detail += "; during it: " + line;
            log.printf(Locale.ROOT, "[%6.1f s] during the %s: %s%n", now(), f.label(), line);
        }
        events.add(new Event(f, node, detail, at, healed));
        current = "none";
        return f;
    }

    /**
     * Announces and injects a fault, keeps it for the hold time, and heals it even if interrupted; returns the
     * split asked during it, or null.
     */
    private CompletableFuture<String> hold(Fault f, String detail, double at, Runnable inject, Runnable heal)
            throws InterruptedException {
        announce(f, detail, at);
        inject.run();
        CompletableFuture<String> during = null;
        try {
            during = splitLater(holdMs / 2);
            Thread.sleep(holdMs); // the fault's duration
        } finally {
            heal.run();
        }
        return during;
    }

    /** With splits during faults: a split of a region asked after {@code delayMs}, on a thread of its own; else null. */
    private CompletableFuture<String> splitLater(long delayMs) {
        if (!splitDuringFaults) {
            return null;
        }
        CompletableFuture<String> f = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(delayMs); // into the fault's hold
                f.complete(splits.run());
            } catch (InterruptedException e) {
                f.complete("split not asked (interrupted)");
            } catch (RuntimeException e) {
                f.complete("split not asked (" + e + ")");
            }
        }, "nemesis-split");
        t.setDaemon(true);
        t.start();
        return f;
    }

    /** The split's line; the split gives up within its own deadlines (regions and split, 30 s each at most). */
    private static String awaitSplit(CompletableFuture<String> f) throws InterruptedException {
        try {
            return f.get(90, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            return "split not answered (" + e + ")";
        }
    }

    /**
     * Heals anything a failed cycle may have left: resumes, clears rules, resets clocks, restarts dead nodes (a
     * replaced node whose start failed, too), then undrains a node whose undrain failed. The join events' spare stays
     * as it is: see {@link #finishJoins}.
     */
    void healAll() {
        for (int i = 0; i < nodes; i++) {
            if (cluster.isRunning(i)) {
                try {
                    cluster.resume(i);
                } catch (RuntimeException ignored) {
                    // it was not paused
                }
            } else {
                cluster.startNode(i);
            }
            if (lab != null) {
                lab.heal(i);
            }
            if (!clockFiles.isEmpty()) {
                setClock(i, 0);
            }
        }
        if (drains != null) {
            String undrained = drains.undrainAll();
            if (!undrained.isEmpty()) {
                log.printf(Locale.ROOT, "[%6.1f s] %s%n", now(), undrained);
            }
        }
    }

    /**
     * After the recovery from the last fault: drains and removes the join events' spare node if it is a member
     * (waiting up to {@link #JOIN_FINISH_MS} while the workload runs on), so the cluster ends with its first nodes.
     */
    void finishJoins() {
        if (joins != null && joins.member()) {
            log.printf(Locale.ROOT, "[%6.1f s] the spare node is a member: drain and remove it%n", now());
            String line = joins.finish(JOIN_FINISH_MS);
            log.printf(Locale.ROOT, "[%6.1f s] %s%n", now(), line);
        }
    }

    /** How long the run's end waits for the spare node to drain before it gives up and leaves it a member. */
    static final long JOIN_FINISH_MS = 120_000;

    Map<Fault, Integer> counts() {
        Map<Fault, Integer> m = new EnumMap<>(Fault.class);
        for (Event e : events) {
            m.merge(e.fault(), 1, Integer::sum);
        }
        return m;
    }

    private void announce(Fault f, String detail, double at) {
        current = f.label();
        log.printf(Locale.ROOT, "[%6.1f s] fault: %s%n", at, detail);
    }

    private void setClock(int node, int offsetSeconds) {
        try {
            Files.writeString(clockFiles.get(node), (offsetSeconds >= 0 ? "+" : "") + offsetSeconds + "\n");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot set the fake clock of node " + (node + 1), e);
        }
    }

    private double now() {
        return (System.nanoTime() - originNs) / 1e9;
    }
}
