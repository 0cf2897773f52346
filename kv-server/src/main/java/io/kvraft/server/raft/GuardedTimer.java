package io.kvraft.server.raft;

import com.alipay.sofa.jraft.util.timer.Timeout;
import com.alipay.sofa.jraft.util.timer.Timer;
import com.alipay.sofa.jraft.util.timer.TimerTask;

import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.LongUnaryOperator;

/**
 * A jraft timer whose tasks, when they fall due, may be put off: {@code putOff} gets the delay a task was scheduled
 * with (nanoseconds) and answers how much longer it should wait, or 0 to run it now. One handle stands for the task
 * across its put-offs, so that jraft's cancel and stop reach whichever wait is current. Used for a replica's election
 * and step-down timers while node heartbeats vouch for its leader or its quorum ({@link QuietRegions}). Written by
 * hand: jraft's timers have no way to defer a task that fell due, and this is the smallest wrapper that does.
 */
final class GuardedTimer implements Timer {

    private final Timer jraft;
    private final LongUnaryOperator putOff;

    GuardedTimer(Timer jraft, LongUnaryOperator putOff) {
        this.jraft = jraft;
        this.putOff = putOff;
    }

    @Override
    public Timeout newTimeout(TimerTask task, long delay, TimeUnit unit) {
        Handle h = new Handle(task, unit.toNanos(delay));
        h.arm(h.delayNanos);
        return h;
    }

    @Override
    public Set<Timeout> stop() {
        return jraft.stop(); // jraft's shared timers count their users: stopping ours releases one
    }

    private final class Handle implements Timeout, TimerTask {

        private final TimerTask task;
        final long delayNanos;
        private Timeout current;
        private boolean cancelled;
        private boolean ran;

        Handle(TimerTask task, long delayNanos) {
            this.task = task;
            this.delayNanos = delayNanos;
        }

        synchronized void arm(long nanos) {
            if (!cancelled) {
                current = jraft.newTimeout(this, Math.max(0, nanos), TimeUnit.NANOSECONDS);
            }
        }

        @Override
        public void run(Timeout due) throws Exception {
            long more = putOff.applyAsLong(delayNanos);
            synchronized (this) {
                if (cancelled) {
                    return;
                }
                if (more > 0) {
                    current = jraft.newTimeout(this, more, TimeUnit.NANOSECONDS);
                    return;
                }
                ran = true;
            }
            task.run(this);
        }

        @Override
        public Timer timer() {
            return GuardedTimer.this;
        }

        @Override
        public TimerTask task() {
            return task;
        }

        @Override
        public synchronized boolean isExpired() {
            return ran;
        }

        @Override
        public synchronized boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean cancel() {
            Timeout c;
            synchronized (this) {
                if (ran || cancelled) {
                    return false;
                }
                cancelled = true;
                c = current;
            }
            if (c != null) {
                c.cancel();
            }
            return true;
        }
    }
}
