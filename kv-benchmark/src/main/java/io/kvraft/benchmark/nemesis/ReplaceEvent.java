package io.kvraft.benchmark.nemesis;

import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.MergedRegions;
import io.kvraft.client.admin.NodeState;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The nemesis's replace event: a node's disk dies and the node comes back empty at its own address. It picks one of
 * the cluster's first nodes that the map has UP and live, kills it (-9), deletes its data directory and starts it
 * again with the same YAML. The map knows the address under the old data directory's node id, so the node starts
 * with no region and the map's leader rebuilds each of its replicas (the voter taken out, then an empty learner that
 * catches up, then a voter again). It waits for the new node id in the map, then up to the hold time for every region
 * to have its replicas back, and counts how it ended. The map's replica counts come from the regions' peer lists,
 * which name the wiped node until each region takes it out, so whether it is rebuilt is asked of the node itself: its
 * own list of regions must hold every region the map lists on it.
 *
 * <p>Only when the cluster can afford to lose a node's data: every region has replication.factor replicas, each on
 * a live node, no rebuild or add is under way and every UP node is live. So a replace never follows another before
 * its rebuild is done (two wiped replicas of a region of 3 would leave one with the data, and no majority). As the
 * nemesis injects one fault at a time, no other node is down, paused or cut off meanwhile. With 3 nodes and factor 3
 * every region keeps 2 of its 3 replicas, a majority, while the third is rebuilt, so it works there too. A replace
 * not asked for that reason is counted as skipped, no failure; the run's checks judge what the rebuilds did.
 */
final class ReplaceEvent {

    /** How a replace ended. */
    enum Outcome {
        /** wiped and restarted, and every region had its replicas back on live nodes within the hold time */
        REBUILT,
        /** wiped and restarted, and some regions were still being rebuilt when the hold time passed */
        PARTLY,
        /** not asked: the cluster could not afford it (a region short of replicas, a node not live, no map) */
        SKIPPED,
        /** wiped and restarted, and the new node did not join the map within the start time */
        FAILED
    }

    /**
     * One replace: the node ("" when none was picked), how it ended, the error code of a map that could not be read,
     * seconds from the restart to the end of the wait, and the detail.
     */
    record Attempt(String node, Outcome outcome, ErrorCode code, double seconds, String detail) {
    }

    /** A node's own list of the regions it holds (its RegionsRequest answer); a {@link KvException} when it fails. */
    @FunctionalInterface
    interface OwnRegions {
        List<KvProto.RegionInfo> of(String node);
    }

    /** How long the new process may take to join the map before the replace counts as failed. */
    static final long START_MS = 90_000;

    private final DrainEvent.Admin admin;
    private final OwnRegions own;
    private final NodeProcesses processes;
    private final List<String> nodes;
    private final long holdMs;
    private final long startMs;
    private final Random rnd;
    private final LongSupplier nanoClock;
    private final DrainEvent.Pause pause;
    final List<Attempt> attempts = new java.util.concurrent.CopyOnWriteArrayList<>();

    /**
     * @param nodes  the nodes that may be replaced (host:port, the nemesis's order: node i is process i)
     * @param holdMs how long to wait for the rebuild after the new node joined (the nemesis's --drain-hold)
     */
    ReplaceEvent(DrainEvent.Admin admin, OwnRegions own, NodeProcesses processes, List<String> nodes, long holdMs,
                 Random rnd) {
        this(admin, own, processes, nodes, holdMs, START_MS, rnd, System::nanoTime, Thread::sleep);
    }

    ReplaceEvent(DrainEvent.Admin admin, OwnRegions own, NodeProcesses processes, List<String> nodes, long holdMs,
                 long startMs, Random rnd, LongSupplier nanoClock, DrainEvent.Pause pause) {
        this.admin = admin;
        this.own = own;
        this.processes = processes;
        this.nodes = List.copyOf(nodes);
        this.holdMs = holdMs;
        this.startMs = startMs;
        this.rnd = rnd;
        this.nanoClock = nanoClock;
        this.pause = pause;
    }

    /** Replaces a node if the cluster can afford it; returns what it did, on one line. */
    String run() throws InterruptedException {
        ClusterInfo map;
        try {
            map = SplitEvent.await(admin.cluster());
        } catch (KvException e) {
            attempts.add(new Attempt("", Outcome.SKIPPED, e.code(), 0, "no cluster map: " + e.getMessage()));
            return "replace: no cluster map (" + e.getMessage() + "), skipped";
        }
        String why = unaffordable(map);
        List<String> candidates = new ArrayList<>();
        for (String n : nodes) {
            ClusterInfo.Node r = map.node(n);
            if (r != null && r.state() == NodeState.UP && r.live() && processes.running(index(n))) {
                candidates.add(n);
            }
        }
        if (why == null && candidates.isEmpty()) {
            why = "none of the nodes is UP and live";
        }
        if (why != null) {
            attempts.add(new Attempt("", Outcome.SKIPPED, ErrorCode.OK, 0, why));
            return "replace: skipped, the cluster cannot afford it now (" + why + ")";
        }
        String node = candidates.get(rnd.nextInt(candidates.size()));
        int i = index(node);
        String oldId = map.node(node).nodeId();
        int before = map.replicas(node);
        String what = "replace node " + (i + 1) + " (" + node + ", " + before + " replicas): kill -9, data wiped,"
                + " started empty";
        processes.kill(i);
        processes.wipe(i);
        processes.start(i);
        long start = nanoClock.getAsLong();
        // the new process joins the map under a new node id; until then the map shows the old one
        String lastError = null;
        boolean joined = false;
        while (!joined && elapsedMs(start) < startMs) {
            pause.pause(DrainEvent.POLL_MS);
            try {
                ClusterInfo.Node r = SplitEvent.await(admin.cluster()).node(node);
                joined = r != null && !r.nodeId().isEmpty() && !r.nodeId().equals(oldId);
            } catch (KvException e) {
                lastError = e.getMessage(); // the map's leader may be the node just killed; look again
            }
        }
        if (!joined) {
            double s = elapsedMs(start) / 1e3;
            attempts.add(new Attempt(node, Outcome.FAILED, ErrorCode.OK, s, "not joined"));
            return what + ": failed, the new node did not join the map within " + startMs / 1000 + " s"
                    + (lastError == null ? "" : " (" + lastError + ")") + (processes.running(i) ? "" : ", and its process exited");
        }
        double joinedAfter = elapsedMs(start) / 1e3;
        // its rebuild: it starts with no region, and each region takes its voter out and rebuilds it in turn
        long holdStart = nanoClock.getAsLong();
        boolean rebuilt = false;
        String left = "the map not read";
        while (elapsedMs(holdStart) < holdMs) {
            pause.pause(Math.min(DrainEvent.POLL_MS, Math.max(1, holdMs - elapsedMs(holdStart))));
            try {
                ClusterInfo c = SplitEvent.await(admin.cluster());
                List<KvProto.RegionInfo> held = own.of(node);
                left = progress(c, node, held);
                if (rebuilt(c, node, held)) {
                    rebuilt = true;
                    break;
                }
            } catch (KvException e) {
                lastError = e.getMessage();
            }
        }
        double seconds = elapsedMs(start) / 1e3;
        Outcome o = rebuilt ? Outcome.REBUILT : Outcome.PARTLY;
        String detail = String.format(Locale.ROOT, "joined after %.1f s, %s after %.1f s", joinedAfter,
                rebuilt ? "rebuilt" : left, seconds);
        attempts.add(new Attempt(node, o, ErrorCode.OK, seconds, detail));
        return what + ": " + o.name().toLowerCase(Locale.ROOT) + ", " + detail
                + (rebuilt || lastError == null ? "" : ", last look at the map failed (" + lastError + ")");
    }

    /**
     * Why the cluster cannot afford to lose a node's data now, or null when it can: the regions must cover the key
     * space, each with at least the factor's replicas, each on a node the map's leader sees live; no rebuild or add
     * under way; every UP node live.
     */
    static String unaffordable(ClusterInfo c) {
        MergedRegions views = new MergedRegions().add(c.regions());
        if (!views.covers()) {
            return "the map's regions do not cover the key space yet";
        }
        int factor = c.factor();
        for (RegionInfo r : views.regions()) {
            if (r.peers().size() < factor) {
                return "region " + r.id() + " has " + r.peers().size() + " of " + factor + " replicas";
            }
            for (String p : r.peers()) {
                ClusterInfo.Node n = c.node(p);
                if (n == null || !n.live()) {
                    return "region " + r.id() + "'s replica on " + p + " is not live";
                }
            }
        }
        for (ClusterInfo.Move m : c.moves()) {
            if (m.reason().equals("rebuild") || m.reason().equals("add")) {
                return "region " + m.regionId() + " is being given a replica (" + m.reason() + ")";
            }
        }
        for (ClusterInfo.Node n : c.nodes()) {
            if (n.state() != NodeState.UP) {
                continue;
            }
            ClusterInfo.Status s = n.status();
            if (s == null || !s.live()) {
                return "node " + n.endpoint() + " is UP and not live";
            }
            // a node replaced before lacks replicas the map lists on it until every rebuild is done (a few at a time,
            // with pauses that show no move): wiping a second node then would take two of a region's three copies,
            // which no store survives. The map's replica count is its voters' list, the same before and after the
            // wipe; the map's leader counts the listed regions the node's own reports lack
            if (s.missing() > 0) {
                return "node " + n.endpoint() + " lacks " + s.missing() + " of the " + s.replicas()
                        + " replicas the map lists on it (a rebuild is under way)";
            }
        }
        return null;
    }

    /**
     * Whether the replaced {@code node} is rebuilt: the cluster can afford another replace (every region has its
     * replicas on live nodes), and the node's own list ({@code held}) has every region the map lists on it, at least
     * one. Right after the restart the map still lists it everywhere and it holds nothing.
     */
    static boolean rebuilt(ClusterInfo c, String node, List<KvProto.RegionInfo> held) {
        if (unaffordable(c) != null) {
            return false;
        }
        List<Integer> listed = listedOn(c, node);
        return !listed.isEmpty() && ids(held).containsAll(listed);
    }

    /** The regions the map lists a replica of on {@code node}. */
    private static List<Integer> listedOn(ClusterInfo c, String node) {
        return c.regions().stream().filter(r -> r.peers().contains(node)).map(RegionInfo::id).toList();
    }

    private static java.util.Set<Integer> ids(List<KvProto.RegionInfo> regions) {
        java.util.Set<Integer> ids = new java.util.HashSet<>();
        regions.forEach(r -> ids.add(r.getId()));
        return ids;
    }

    /**
     * How far the rebuild is: {@code it holds 3 of the 17 regions the map lists on it, 2 regions short of replicas}.
     */
    static String progress(ClusterInfo c, String node, List<KvProto.RegionInfo> held) {
        java.util.Set<Integer> mine = ids(held);
        List<Integer> listed = listedOn(c, node);
        long lacking = c.regions().stream().filter(r -> r.peers().size() < c.factor()).count();
        return "it holds " + listed.stream().filter(mine::contains).count() + " of the " + listed.size()
                + " regions the map lists on it, " + lacking + " regions short of replicas";
    }

    private long elapsedMs(long since) {
        return TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - since);
    }

    /** The index of {@code node} in the nemesis's order (0-based), or -1. */
    int index(String node) {
        return nodes.indexOf(node);
    }

    /** The node of the last replace asked, or "" when none was (or none picked). */
    String lastNode() {
        return attempts.isEmpty() ? "" : attempts.get(attempts.size() - 1).node();
    }

    /** Replaces asked so far, by outcome. */
    Map<Outcome, Integer> counts() {
        return EventTally.counts(Outcome.class, attempts, Attempt::outcome);
    }

    /** One line: {@code 2 asked: 1 rebuilt, 1 partly, 0 skipped, 0 failed}. */
    String summary() {
        return EventTally.summary(Outcome.class, Outcome.REBUILT, attempts, Attempt::outcome, Attempt::code);
    }
}
