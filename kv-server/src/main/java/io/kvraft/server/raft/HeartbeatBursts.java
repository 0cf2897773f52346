package io.kvraft.server.raft;

import com.alipay.sofa.jraft.core.Scheduler;
import com.alipay.sofa.jraft.util.NamedThreadFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Delayed;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;

/**
 * jraft's Raft scheduler with the region leaders' heartbeats sent in bursts. Every replicator schedules its own
 * heartbeat, so a node leading 8 regions with 2 followers each sent 16 heartbeats at 16 moments per interval, and on
 * an idle node each one woke the timer, bolt, the follower's pool and the callbacks from sleep. Here a heartbeat due at
 * {@code t} joins a burst already set to fire in {@code [t - delay / 2, t]}, so it may go up to half an interval early
 * and never late: after one interval a node's heartbeats go out together, and the next ones (scheduled from the time
 * each was sent) stay together. What a heartbeat does is jraft's; only when it leaves changes, and Raft's safety does not
 * depend on when heartbeats go. Every other task (transfer, catch-up and block timers, snapshot copies) goes to jraft's
 * scheduler unchanged: firing those early would change what they mean.
 * <p>
 * jraft names no task, so a heartbeat is told by the method that schedules it ({@code Replicator.startHeartbeatTimer},
 * found on the stack); in a jraft without it every task goes to jraft's scheduler as before. Written by hand because
 * jraft's scheduler has no way to group timers, and this is the smallest wrapper around its own that does.
 */
public final class HeartbeatBursts implements Scheduler {

    private static final Logger LOG = LoggerFactory.getLogger(HeartbeatBursts.class);

    /** One per JVM: every region of the node sends in the same bursts. The thread only hands tasks to jraft's. */
    static final Bursts SHARED = new Bursts(new ScheduledThreadPoolExecutor(1,
            new NamedThreadFactory("kv-heartbeat-bursts-", true)));

    private final Scheduler jraft;
    private final Bursts bursts;
    private final BooleanSupplier isHeartbeat;
    private final IntSupplier stretch;
    /** This node's heartbeats not yet run or cancelled. */
    private final java.util.Set<Task> waiting = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * @param stretch how many heartbeat intervals apart this node's heartbeats go now (1, or more while node
     *                heartbeats keep its region alive: {@link QuietRegions}); asked with jraft's replicator lock held
     */
    HeartbeatBursts(Scheduler jraft, IntSupplier stretch) {
        this(jraft, SHARED, HeartbeatBursts::calledFromHeartbeatTimer, stretch);
    }

    HeartbeatBursts(Scheduler jraft, Bursts bursts, BooleanSupplier isHeartbeat) {
        this(jraft, bursts, isHeartbeat, () -> 1);
    }

    HeartbeatBursts(Scheduler jraft, Bursts bursts, BooleanSupplier isHeartbeat, IntSupplier stretch) {
        this.jraft = jraft;
        this.bursts = bursts;
        this.isHeartbeat = isHeartbeat;
        this.stretch = stretch;
    }

    /** Whether the caller of {@link #schedule} is jraft's replicator scheduling its next heartbeat. */
    private static boolean calledFromHeartbeatTimer() {
        return JraftCallers.calledFrom("com.alipay.sofa.jraft.core.Replicator", "startHeartbeatTimer", 6);
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
        if (!isHeartbeat.getAsBoolean()) {
            return jraft.schedule(command, delay, unit);
        }
        long nanos = unit.toNanos(Math.max(0, delay)) * Math.max(1, stretch.getAsInt());
        Task task = new Task(command, jraft, System.nanoTime() + nanos, waiting);
        waiting.add(task);
        return bursts.add(task, nanos / 2);
    }

    /**
     * Sends this node's waiting heartbeats now (each replicator's next one), on jraft's threads as when they fall due;
     * each is then scheduled again from now, as jraft does after every heartbeat. For a quiet region's leader whose
     * follower needs one soon: to learn the commit index, or to be probed after a restart (jraft probes a follower
     * whose heartbeat answer shows it behind).
     */
    void sendNow() {
        for (Task t : waiting.toArray(new Task[0])) {
            if (!t.isDone()) {
                try {
                    t.jraft.schedule(t, 0, TimeUnit.NANOSECONDS); // a FutureTask runs once: its burst skips it later
                } catch (RejectedExecutionException e) {
                    LOG.debug("a heartbeat's scheduler is shut down (its node stopped): {}", e.toString());
                }
            }
        }
    }

    /** Heartbeats scheduled here and not yet run or cancelled (for tests). */
    int waiting() {
        return waiting.size();
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
        return jraft.scheduleAtFixedRate(command, initialDelay, period, unit);
    }

    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
        return jraft.scheduleWithFixedDelay(command, initialDelay, delay, unit);
    }

    @Override
    public void shutdown() {
        jraft.shutdown(); // jraft's shared scheduler counts its users; the bursts' thread lives as long as the JVM
    }

    /** The pending bursts, by the time they fire. */
    static final class Bursts {

        private final ScheduledExecutorService timer;
        private final TreeMap<Long, List<Task>> pending = new TreeMap<>();
        private long fired;

        Bursts(ScheduledExecutorService timer) {
            this.timer = timer;
        }

        /** Adds a heartbeat to the latest burst that fires at most {@code earlyNanos} before it is due, or to a new one. */
        Task add(Task task, long earlyNanos) {
            synchronized (pending) {
                Map.Entry<Long, List<Task>> burst = pending.floorEntry(task.due);
                if (burst != null && burst.getKey() >= task.due - earlyNanos) {
                    burst.getValue().add(task);
                    return task;
                }
                List<Task> tasks = new ArrayList<>();
                tasks.add(task);
                pending.put(task.due, tasks);
            }
            long at = task.due;
            timer.schedule(() -> fire(at), at - System.nanoTime(), TimeUnit.NANOSECONDS);
            return task;
        }

        private void fire(long at) {
            List<Task> tasks;
            synchronized (pending) {
                tasks = pending.remove(at);
                fired++;
            }
            if (tasks == null) {
                return;
            }
            for (Task t : tasks) {
                if (t.isDone()) {
                    continue; // cancelled: its replicator stopped or was destroyed
                }
                try {
                    t.jraft.schedule(t, 0, TimeUnit.NANOSECONDS); // on jraft's threads, as jraft's timer runs it
                } catch (RejectedExecutionException e) {
                    LOG.debug("a heartbeat's scheduler is shut down (its node stopped): {}", e.toString());
                }
            }
        }

        /** Bursts fired so far (for tests). */
        long fired() {
            synchronized (pending) {
                return fired;
            }
        }

        /** Bursts waiting to fire (for tests). */
        int pending() {
            synchronized (pending) {
                return pending.size();
            }
        }
    }

    /** A heartbeat waiting in a burst; cancelling it (jraft does when a replicator stops) keeps it from running. */
    static final class Task extends FutureTask<Void> implements ScheduledFuture<Void> {

        final long due;
        final Scheduler jraft;
        private final java.util.Set<Task> waiting;

        Task(Runnable command, Scheduler jraft, long due, java.util.Set<Task> waiting) {
            super(command, null);
            this.jraft = jraft;
            this.due = due;
            this.waiting = waiting;
        }

        @Override
        protected void done() {
            waiting.remove(this); // ran or cancelled
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(due - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            return Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS));
        }
    }
}
