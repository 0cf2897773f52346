package io.kvraft.benchmark.nemesis;

import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.NodeState;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The nemesis's join event, on one spare node (the slot after the cluster's first nodes: its own address, a YAML
 * with {@code cluster.join} and an empty data directory). The events take turns: one starts the spare, which joins
 * the cluster, and waits up to the hold time for placement to move replicas onto it; it stays a member, so the
 * faults after it hit while replicas keep moving onto it. The next drains it (DRAINING: its replicas move back to the
 * others), and once it holds no replica removes it from the map ({@code node remove}), stops its process and wipes
 * its data, so the cluster is back to its first nodes and the next join is a new node at the same address. A drain
 * not done within the hold time leaves the node draining through the faults after it; the next join event, or the
 * run's end ({@link #finish}), goes on with it. The other faults are injected into the first nodes only.
 * A drain or remove refused, failed or of unknown outcome is counted, not a failure: the run's checks judge what the
 * moves did.
 */
final class JoinEvent {

    /** How a join event ended. */
    enum Outcome {
        /** started, joined the map, and replicas moved onto it within the hold time; a member now */
        JOINED,
        /** started and joined the map, but no replica moved onto it within the hold time; a member now */
        EMPTY,
        /** drained within the hold time, removed from the map, stopped and wiped: the cluster is back to its first nodes */
        REMOVED,
        /** draining, and still holding replicas when the hold time passed: left draining for the next event */
        DRAINING,
        /** the drain or the remove was refused (INVALID_ARGUMENT: e.g. it still holds a voter of the map) */
        REFUSED,
        /** did not join within the start time (stopped and wiped again), or a drain or remove that was not taken */
        FAILED,
        /** a drain or remove that timed out or lost its connection after sending: it may have been taken */
        UNKNOWN;

        static Outcome of(KvException e) {
            DrainEvent.Outcome o = DrainEvent.Outcome.of(e);
            return o == DrainEvent.Outcome.REFUSED ? REFUSED : o == DrainEvent.Outcome.FAILED ? FAILED : UNKNOWN;
        }
    }

    /** Where the spare node is: not in the cluster, a member UP, or draining (asked to, at least) for its removal. */
    enum Phase { OUT, IN, LEAVING }

    /** One join event: how it ended, the error code of a refused or failed request, seconds it took, the detail. */
    record Attempt(Outcome outcome, ErrorCode code, double seconds, String detail) {
    }

    /** How long the spare may take to start and join the map before the join counts as failed. */
    static final long START_MS = 90_000;

    private final DrainEvent.Admin admin;
    private final NodeProcesses processes;
    private final int slot;
    private final String endpoint;
    private final long holdMs;
    private final long startMs;
    private final LongSupplier nanoClock;
    private final DrainEvent.Pause pause;
    final List<Attempt> attempts = new java.util.concurrent.CopyOnWriteArrayList<>();
    private volatile Phase phase = Phase.OUT;

    /**
     * @param slot     the spare's node index (process {@code slot}, node {@code slot + 1} in the lines)
     * @param endpoint the spare's host:port
     * @param holdMs   how long an event waits for replicas to move onto or off the spare (the nemesis's --drain-hold)
     */
    JoinEvent(DrainEvent.Admin admin, NodeProcesses processes, int slot, String endpoint, long holdMs) {
        this(admin, processes, slot, endpoint, holdMs, START_MS, System::nanoTime, Thread::sleep);
    }

    JoinEvent(DrainEvent.Admin admin, NodeProcesses processes, int slot, String endpoint, long holdMs, long startMs,
              LongSupplier nanoClock, DrainEvent.Pause pause) {
        this.admin = admin;
        this.processes = processes;
        this.slot = slot;
        this.endpoint = endpoint;
        this.holdMs = holdMs;
        this.startMs = startMs;
        this.nanoClock = nanoClock;
        this.pause = pause;
    }

    Phase phase() {
        return phase;
    }

    /** The spare's node index (0-based). */
    int slot() {
        return slot;
    }

    /** Joins the spare when it is out of the cluster, else drains (and then removes) it; returns what it did. */
    String run() throws InterruptedException {
        return phase == Phase.OUT ? join() : leave(holdMs);
    }

    private String join() throws InterruptedException {
        String what = "join " + name() + " (cluster.join, empty data directory)";
        long start = nanoClock.getAsLong();
        processes.wipe(slot);
        processes.start(slot);
        String lastError = null;
        boolean joined = false;
        while (!joined && elapsedMs(start) < startMs) {
            pause.pause(DrainEvent.POLL_MS);
            try {
                ClusterInfo.Node r = SplitEvent.await(admin.cluster()).node(endpoint);
                joined = r != null && r.state() == NodeState.UP && !r.nodeId().isEmpty();
            } catch (KvException e) {
                lastError = e.getMessage();
            }
        }
        if (!joined) {
            processes.stop(slot);
            processes.wipe(slot);
            double s = elapsedMs(start) / 1e3;
            attempts.add(new Attempt(Outcome.FAILED, ErrorCode.OK, s, "not joined"));
            return what + ": failed, not in the map within " + startMs / 1000 + " s"
                    + (lastError == null ? "" : " (" + lastError + ")") + "; stopped and wiped";
        }
        phase = Phase.IN;
        double joinedAfter = elapsedMs(start) / 1e3;
        long holdStart = nanoClock.getAsLong();
        int replicas = 0;
        while (replicas == 0 && elapsedMs(holdStart) < holdMs) {
            pause.pause(Math.min(DrainEvent.POLL_MS, Math.max(1, holdMs - elapsedMs(holdStart))));
            try {
                replicas = SplitEvent.await(admin.cluster()).replicas(endpoint);
            } catch (KvException e) {
                lastError = e.getMessage();
            }
        }
        // a first replica is there: let placement go on moving them under the faults that follow
        double seconds = elapsedMs(start) / 1e3;
        Outcome o = replicas > 0 ? Outcome.JOINED : Outcome.EMPTY;
        String detail = String.format(Locale.ROOT, "in the map after %.1f s, %d replicas after %.1f s", joinedAfter,
                replicas, seconds);
        attempts.add(new Attempt(o, ErrorCode.OK, seconds, detail));
        return what + ": " + o.name().toLowerCase(Locale.ROOT) + ", " + detail + "; it stays a member until the next"
                + " join event drains and removes it";
    }

    /**
     * Drains the spare (again: a drain of a draining node changes nothing), waits up to {@code waitMs} for it to hold
     * no replica, then removes it from the map, stops it and wipes its data.
     */
    private String leave(long waitMs) throws InterruptedException {
        String what = "drain and remove " + name();
        long start = nanoClock.getAsLong();
        try {
            SplitEvent.await(admin.nodeState(endpoint, NodeState.DRAINING));
        } catch (KvException e) {
            Outcome o = Outcome.of(e);
            if (o == Outcome.UNKNOWN) {
                phase = Phase.LEAVING;
            }
            attempts.add(new Attempt(o, e.code(), elapsedMs(start) / 1e3, e.getMessage()));
            return what + ": drain " + o.name().toLowerCase(Locale.ROOT) + " (" + e.getMessage() + ")";
        }
        phase = Phase.LEAVING;
        int before = -1;
        int after = -1;
        boolean drained = false;
        String lastError = null;
        do {
            try {
                ClusterInfo c = SplitEvent.await(admin.cluster());
                after = c.replicas(endpoint);
                before = before < 0 ? after : before;
                drained = DrainEvent.drained(c, endpoint);
                lastError = null;
            } catch (KvException e) {
                lastError = e.getMessage(); // the map's leader may be moving; look again
            }
            if (!drained && elapsedMs(start) < waitMs) {
                pause.pause(Math.min(DrainEvent.POLL_MS, Math.max(1, waitMs - elapsedMs(start))));
            }
        } while (!drained && elapsedMs(start) < waitMs);
        String moved = (before < 0 ? "?" : String.valueOf(before)) + " -> " + (drained ? "0"
                : after < 0 ? "?" : String.valueOf(after)) + " replicas";
        if (!drained) {
            double s = elapsedMs(start) / 1e3;
            attempts.add(new Attempt(Outcome.DRAINING, ErrorCode.OK, s, moved));
            return what + String.format(Locale.ROOT, ": draining, %s in %.1f s%s; left draining for the next join event",
                    moved, s, lastError == null ? "" : ", last look at the map failed (" + lastError + ")");
        }
        try {
            SplitEvent.await(admin.nodeState(endpoint, NodeState.REMOVED));
        } catch (KvException e) {
            Outcome o = Outcome.of(e);
            attempts.add(new Attempt(o, e.code(), elapsedMs(start) / 1e3, e.getMessage()));
            return what + ": drained (" + moved + "), remove " + o.name().toLowerCase(Locale.ROOT) + " ("
                    + e.getMessage() + "); left draining for the next join event";
        }
        processes.stop(slot);
        processes.wipe(slot);
        phase = Phase.OUT;
        double s = elapsedMs(start) / 1e3;
        attempts.add(new Attempt(Outcome.REMOVED, ErrorCode.OK, s, moved));
        return what + String.format(Locale.ROOT, ": removed, %s in %.1f s; stopped and wiped", moved, s);
    }

    /**
     * At the run's end: a spare still in the cluster is drained and removed (waiting up to {@code waitMs}), so the
     * cluster ends with its first nodes; when that does not work it is marked UP again and stays a member, so no node
     * is left draining. Counted like an event. Returns what it did, "" when the spare was out.
     */
    String finish(long waitMs) {
        if (phase == Phase.OUT) {
            return "";
        }
        try {
            String line = leave(waitMs);
            if (phase != Phase.OUT) {
                try {
                    SplitEvent.await(admin.nodeState(endpoint, NodeState.UP));
                    phase = Phase.IN;
                    line += "; undrained, it stays a member";
                } catch (KvException e) {
                    line += "; undrain FAILED (" + e.getMessage() + ")";
                }
            }
            return "at the end: " + line;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "at the end: interrupted while " + name() + " was leaving";
        } catch (RuntimeException e) {
            return "at the end: " + name() + " not removed (" + e + ")";
        }
    }

    /** Whether the spare is in the cluster (a member, or draining) rather than out of it. */
    boolean member() {
        return phase != Phase.OUT;
    }

    private String name() {
        return "node " + (slot + 1) + " (" + endpoint + ")";
    }

    private long elapsedMs(long since) {
        return TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - since);
    }

    /** Join events so far (and the run's end, when it removed the spare), by outcome. */
    Map<Outcome, Integer> counts() {
        return EventTally.counts(Outcome.class, attempts, Attempt::outcome);
    }

    /**
     * One line: {@code 3 asked: 1 joined, 0 empty, 1 removed, 1 draining, 0 refused, 0 failed, 0 unknown; node 5 out
     * of the cluster at the end}.
     */
    String summary() {
        return EventTally.summary(Outcome.class, Outcome.JOINED, attempts, Attempt::outcome, Attempt::code) + "; node "
                + (slot + 1) + (phase == Phase.OUT ? " out of the cluster at the end"
                : phase == Phase.IN ? " STILL A MEMBER at the end" : " LEFT DRAINING at the end");
    }
}
