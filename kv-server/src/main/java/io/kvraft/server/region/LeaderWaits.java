package io.kvraft.server.region;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Requests that found their region's replica here without a known leader, held until the replica learns one (it
 * leads, or it follows a leader it can name) or until {@code maxWaitMs} passed, then tried again once. Without this a
 * client polls a leaderless region every 10-100 ms: after a split, while the new region elects its first leader, every
 * slot of a closed-loop client ends up polling it, and each learned of the leader up to 100 ms after it was there.
 * A held request goes on the moment the replica knows, and the polls it would have sent are not sent.
 * <p>
 * At most {@code capacity} requests wait per region; more are answered at once (NO_LEADER), as before.
 * Thread-safe; the retries run on {@code timer}'s thread, never on the caller's.
 */
final class LeaderWaits {

    private static final Logger LOG = LoggerFactory.getLogger(LeaderWaits.class);

    private record Held(Runnable retry, long deadlineNanos) {
    }

    private final int regionId;
    private final ScheduledExecutorService timer;
    private final long maxWaitNanos;
    private final int capacity;
    private final LongSupplier nanoClock;
    /** Oldest first: deadlines grow along the queue. Guarded by this. */
    private final ArrayDeque<Held> held = new ArrayDeque<>();
    /** The pending expiry of the oldest held request, or null. Guarded by this. */
    private ScheduledFuture<?> expiry;
    /** Guarded by this. */
    private boolean closed;

    LeaderWaits(int regionId, ScheduledExecutorService timer, long maxWaitMs, int capacity, LongSupplier nanoClock) {
        this.regionId = regionId;
        this.timer = timer;
        this.maxWaitNanos = TimeUnit.MILLISECONDS.toNanos(maxWaitMs);
        this.capacity = capacity;
        this.nanoClock = nanoClock;
    }

    /**
     * Holds {@code retry} until {@link #release} or its time is up. False (nothing held) when {@code capacity} requests
     * wait already, the waits are closed, or the timer no longer runs: the caller answers at once then.
     */
    boolean hold(Runnable retry) {
        synchronized (this) {
            if (closed || held.size() >= capacity) {
                return false;
            }
            held.addLast(new Held(retry, nanoClock.getAsLong() + maxWaitNanos));
            if (expiry == null && !scheduleExpiry(maxWaitNanos)) {
                held.removeLast();
                return false;
            }
        }
        return true;
    }

    /** Number of requests held now. */
    synchronized int size() {
        return held.size();
    }

    /** Tries every held request again now (the replica learned a leader, or the region stops). */
    void release() {
        List<Runnable> due;
        synchronized (this) {
            if (held.isEmpty()) {
                return;
            }
            due = new ArrayList<>(held.size());
            for (Held h : held) {
                due.add(h.retry());
            }
            held.clear();
            if (expiry != null) {
                expiry.cancel(false);
                expiry = null;
            }
        }
        runLater(due);
    }

    /** Releases what is held and holds nothing more: the region stops on this node. */
    void close() {
        synchronized (this) {
            closed = true;
        }
        release();
    }

    private void expire() {
        List<Runnable> due = new ArrayList<>();
        synchronized (this) {
            expiry = null;
            long now = nanoClock.getAsLong();
            while (!held.isEmpty() && held.peekFirst().deadlineNanos() - now <= 0) {
                due.add(held.removeFirst().retry());
            }
            if (!held.isEmpty() && !scheduleExpiry(held.peekFirst().deadlineNanos() - now)) {
                while (!held.isEmpty()) {
                    due.add(held.removeFirst().retry());
                }
            }
        }
        runAll(due);
    }

    /** Guarded by this. */
    private boolean scheduleExpiry(long delayNanos) {
        try {
            expiry = timer.schedule(this::expire, Math.max(delayNanos, 0), TimeUnit.NANOSECONDS);
            return true;
        } catch (RejectedExecutionException stopping) {
            return false;
        }
    }

    private void runLater(List<Runnable> due) {
        try {
            timer.execute(() -> runAll(due));
        } catch (RejectedExecutionException stopping) {
            runAll(due); // the node stops: answer them here rather than leave them waiting
        }
    }

    private void runAll(List<Runnable> due) {
        for (Runnable r : due) {
            try {
                r.run();
            } catch (RuntimeException e) {
                LOG.warn("region {}: a request held for its leader failed when tried again: {}", regionId, e.toString());
            }
        }
    }
}
