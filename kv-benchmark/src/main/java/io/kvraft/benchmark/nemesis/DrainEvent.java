package io.kvraft.benchmark.nemesis;

import io.kvraft.client.KvClient;
import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.MergedRegions;
import io.kvraft.client.admin.NodeState;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The nemesis's drain event (a cluster of more nodes than replicas per region): picks a node that the cluster map
 * has UP and its leader sees live, marks it DRAINING, so the map's leader moves its replicas (one at a time) to the
 * other nodes, waits until it holds no replica or the hold time has passed, then marks it UP again (undrain), so
 * placement moves replicas back onto it while the faults that follow hit. Counts how each drain ended and how many
 * replicas left the node. A drain refused (INVALID_ARGUMENT: it would leave fewer UP nodes than replication.factor),
 * failed or of unknown outcome is no failure of the run by itself: the checks after the run (linearizability, lost
 * writes, the region map) judge what the replica moves did.
 */
final class DrainEvent {

    /** How a drain ended. */
    enum Outcome {
        /** marked draining, and it held no replica before the hold time passed; then undrained */
        DRAINED,
        /** marked draining, and it still held replicas when the hold time passed; then undrained */
        PARTLY,
        /** refused by the map's leader (INVALID_ARGUMENT: fewer UP nodes than the factor would be left), nothing changed */
        REFUSED,
        /** not asked (no map, no UP live node) or failed in a way that proves it was not taken: no map leader found */
        FAILED,
        /** timed out or the connection was lost after sending: it may have been marked draining (undrained anyway) */
        UNKNOWN;

        static Outcome of(KvException e) {
            return switch (e.code()) {
                case INVALID_ARGUMENT -> REFUSED;
                case NOT_LEADER, NO_LEADER, SHUTTING_DOWN -> FAILED;
                case UNAVAILABLE -> e.unsent() ? FAILED : UNKNOWN;
                default -> UNKNOWN;
            };
        }

        /** Whether the node may have been marked draining, so it must be undrained. */
        boolean mayBeDraining() {
            return this == DRAINED || this == PARTLY || this == UNKNOWN;
        }
    }

    /** What the event needs of a client: {@link KvAdmin#cluster()} and {@link KvAdmin#nodeState}. */
    interface Admin {
        CompletableFuture<ClusterInfo> cluster();

        CompletableFuture<ClusterInfo> nodeState(String endpoint, NodeState state);

        static Admin of(KvClient client) {
            return new Admin() {
                @Override
                public CompletableFuture<ClusterInfo> cluster() {
                    return client.admin().cluster();
                }

                @Override
                public CompletableFuture<ClusterInfo> nodeState(String endpoint, NodeState state) {
                    return client.admin().nodeState(endpoint, state, false);
                }
            };
        }
    }

    /** A pause between two looks at the map: {@code Thread::sleep}, or a test's clock. */
    @FunctionalInterface
    interface Pause {
        void pause(long ms) throws InterruptedException;
    }

    /**
     * One drain asked: the node ("" when none was picked), how it ended, the error code when it was not marked
     * draining, its replicas before and when the hold ended (-1 when not known), how long it was draining, whether it
     * was undrained (true when there was nothing to undrain), and the detail.
     */
    record Attempt(String node, Outcome outcome, ErrorCode code, int before, int after, double seconds,
                   boolean undrained, String detail) {
        /** Replicas that left the node while it was draining (0 when not known). */
        int moved() {
            return before >= 0 && after >= 0 ? Math.max(0, before - after) : 0;
        }
    }

    /** How often the map is looked at while the node drains. */
    static final long POLL_MS = 500;

    private final Admin admin;
    private final List<String> nodes;
    private final long holdMs;
    private final Random rnd;
    private final LongSupplier nanoClock;
    private final Pause pause;
    final List<Attempt> attempts = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Nodes that may still be draining: an undrain that failed, tried again before the next drain and at the end. */
    private final Set<String> toUndrain = new java.util.concurrent.ConcurrentSkipListSet<>();

    /**
     * @param nodes  the cluster's nodes (host:port) in the nemesis's order, so a line can name node N
     * @param holdMs how long a node drains at most before it is undrained (the nemesis's --hold)
     */
    DrainEvent(Admin admin, List<String> nodes, long holdMs, Random rnd) {
        this(admin, nodes, holdMs, rnd, System::nanoTime, Thread::sleep);
    }

    DrainEvent(Admin admin, List<String> nodes, long holdMs, Random rnd, LongSupplier nanoClock, Pause pause) {
        this.admin = admin;
        this.nodes = List.copyOf(nodes);
        this.holdMs = holdMs;
        this.rnd = rnd;
        this.nanoClock = nanoClock;
        this.pause = pause;
    }

    /**
     * Picks a node that is UP and live, drains it until it holds no replica or the hold time passes, undrains it;
     * returns what it did, on one line (the node's endpoint is the second word when one was picked).
     */
    String run() throws InterruptedException {
        String leftover = undrainAll();
        String pre = leftover.isEmpty() ? "" : leftover + "; ";
        ClusterInfo map;
        try {
            map = SplitEvent.await(admin.cluster());
        } catch (KvException e) {
            attempts.add(new Attempt("", Outcome.FAILED, e.code(), -1, -1, 0, true, "no cluster map: " + e.getMessage()));
            return pre + "drain: no cluster map (" + e.getMessage() + "), nothing asked";
        }
        List<String> candidates = new ArrayList<>();
        int up = 0;
        for (ClusterInfo.Node n : map.nodes()) {
            if (n.state() == NodeState.UP) {
                up++;
                if (n.live()) {
                    candidates.add(n.endpoint());
                }
            }
        }
        if (candidates.isEmpty()) {
            attempts.add(new Attempt("", Outcome.FAILED, ErrorCode.UNAVAILABLE, -1, -1, 0, true,
                    "no node is UP and live (" + up + " UP)"));
            return pre + "drain: no node is UP and live in the cluster map (" + up + " UP), nothing asked";
        }
        String node = candidates.get(rnd.nextInt(candidates.size()));
        int before = map.replicas(node);
        ClusterInfo.Status st = map.node(node).status();
        String what = "drain " + name(node) + " (" + before + " replicas, " + (st == null ? 0 : st.leaders())
                + " leaders; " + up + " of " + map.nodes().size() + " nodes UP, factor " + map.factor() + ")";
        long start = nanoClock.getAsLong();
        try {
            SplitEvent.await(admin.nodeState(node, NodeState.DRAINING));
        } catch (KvException e) {
            Outcome o = Outcome.of(e);
            boolean undrained = !o.mayBeDraining() || undrain(node) == null;
            attempts.add(new Attempt(node, o, e.code(), before, -1, 0, undrained, e.getMessage()));
            return pre + what + ": " + o.name().toLowerCase(Locale.ROOT) + " (" + e.getMessage() + ")"
                    + (o.mayBeDraining() ? undrained ? ", undrained" : ", undrain FAILED (tried again later)" : "");
        }
        toUndrain.add(node);
        long holdNanos = TimeUnit.MILLISECONDS.toNanos(holdMs);
        int after = before;
        boolean drained = false;
        String lastError = null;
        while (true) {
            long left = holdNanos - (nanoClock.getAsLong() - start);
            if (left <= 0) {
                break;
            }
            pause.pause(Math.min(POLL_MS, Math.max(1, TimeUnit.NANOSECONDS.toMillis(left))));
            try {
                ClusterInfo c = SplitEvent.await(admin.cluster());
                after = c.replicas(node);
                lastError = null;
                if (drained(c, node)) {
                    drained = true;
                    break;
                }
            } catch (KvException e) {
                lastError = e.getMessage(); // the map's leader may be moving; look again
            }
        }
        double seconds = (nanoClock.getAsLong() - start) / 1e9;
        String why = undrain(node);
        Outcome o = drained ? Outcome.DRAINED : Outcome.PARTLY;
        Attempt a = new Attempt(node, o, ErrorCode.OK, before, after, seconds, why == null,
                before + " -> " + after + " replicas in " + String.format(Locale.ROOT, "%.1f s", seconds));
        attempts.add(a);
        return pre + what + ": " + o.name().toLowerCase(Locale.ROOT) + ", " + a.detail() + " (" + a.moved()
                + " moved off)" + (lastError == null ? "" : ", last look at the map failed (" + lastError + ")")
                + (why == null ? ", undrained" : ", undrain FAILED (" + why + "; tried again later)");
    }

    /** The index of {@code node} in the nemesis's order (0-based), or -1. */
    int index(String node) {
        return nodes.indexOf(node);
    }

    /** The node of the last drain asked, or "" when none was (or none picked). */
    String lastNode() {
        return attempts.isEmpty() ? "" : attempts.get(attempts.size() - 1).node();
    }

    /** {@code node 2 (127.0.0.1:7002)}, or the endpoint alone when it is not one of the nodes. */
    private String name(String node) {
        int i = index(node);
        return i < 0 ? node : "node " + (i + 1) + " (" + node + ")";
    }

    /** Marks {@code node} UP; null when done, else why not (then it is tried again by {@link #undrainAll}). */
    private String undrain(String node) {
        try {
            SplitEvent.await(admin.nodeState(node, NodeState.UP));
            toUndrain.remove(node);
            return null;
        } catch (KvException e) {
            toUndrain.add(node);
            return e.getMessage();
        }
    }

    /**
     * Undrains every node whose undrain failed so far; "" when there was none, else what it did. The nemesis calls it
     * at the end of the run, so no node is left draining.
     */
    String undrainAll() {
        List<String> lines = new ArrayList<>();
        for (String node : List.copyOf(toUndrain)) {
            String why = undrain(node);
            lines.add("undrain " + name(node) + (why == null ? ": done" : ": FAILED (" + why + ")"));
        }
        return String.join("; ", lines);
    }

    /** Nodes that may still be draining: their undrain failed and has not succeeded since. */
    Set<String> leftDraining() {
        return Set.copyOf(toUndrain);
    }

    /**
     * Whether {@code node} holds no region replica: its own report says none, and by a view of the regions that covers
     * the key space none names it (right after the map's leader changed it has not heard from every node yet).
     */
    static boolean drained(ClusterInfo c, String node) {
        MergedRegions views = new MergedRegions().add(c.regions());
        ClusterInfo.Node n = c.node(node);
        ClusterInfo.Status s = n == null ? null : n.status();
        return views.covers() && (s == null || s.replicas() == 0)
                && views.regions().stream().noneMatch(r -> r.peers().contains(node));
    }

    /** Drains asked so far, by outcome. */
    Map<Outcome, Integer> counts() {
        return EventTally.counts(Outcome.class, attempts, Attempt::outcome);
    }

    /** Replicas that left drained nodes, over all drains. */
    int moved() {
        return attempts.stream().mapToInt(Attempt::moved).sum();
    }

    /**
     * One line: {@code 3 asked: 1 drained, 1 partly, 1 refused (INVALID_ARGUMENT 1), 0 failed, 0 unknown; 21 replicas
     * moved off the drained nodes, every node undrained}; the error codes per outcome in parentheses.
     */
    String summary() {
        Set<String> left = leftDraining();
        return EventTally.summary(Outcome.class, Outcome.DRAINED, attempts, Attempt::outcome, Attempt::code) + "; "
                + moved() + " replicas moved off the drained nodes, "
                + (left.isEmpty() ? "every node undrained" : "LEFT DRAINING: " + String.join(", ", left));
    }
}
