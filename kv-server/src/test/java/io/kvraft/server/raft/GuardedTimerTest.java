package io.kvraft.server.raft;

import com.alipay.sofa.jraft.util.timer.Timeout;
import com.alipay.sofa.jraft.util.timer.Timer;
import com.alipay.sofa.jraft.util.timer.TimerTask;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class GuardedTimerTest {

    /** jraft's timer, fired by hand. */
    private static final class ManualTimer implements Timer {
        final List<long[]> delays = new ArrayList<>();
        final List<TimerTask> tasks = new ArrayList<>();
        final List<boolean[]> cancelled = new ArrayList<>();

        @Override
        public Timeout newTimeout(TimerTask task, long delay, TimeUnit unit) {
            tasks.add(task);
            delays.add(new long[] {unit.toNanos(delay)});
            boolean[] c = new boolean[1];
            cancelled.add(c);
            return new Timeout() {
                @Override
                public Timer timer() {
                    return ManualTimer.this;
                }

                @Override
                public TimerTask task() {
                    return task;
                }

                @Override
                public boolean isExpired() {
                    return false;
                }

                @Override
                public boolean isCancelled() {
                    return c[0];
                }

                @Override
                public boolean cancel() {
                    c[0] = true;
                    return true;
                }
            };
        }

        void fireLast() throws Exception {
            int i = tasks.size() - 1;
            if (!cancelled.get(i)[0]) {
                tasks.get(i).run(null);
            }
        }

        @Override
        public Set<Timeout> stop() {
            return Set.of();
        }
    }

    private final ManualTimer jraft = new ManualTimer();
    private final AtomicLong putOff = new AtomicLong();
    private final AtomicInteger ran = new AtomicInteger();
    private final GuardedTimer timer = new GuardedTimer(jraft, delay -> putOff.get());

    @Test
    void when_theGuardSaysWait_then_theTaskWaitsThatLongAndRunsWhenTheGuardLetsIt() throws Exception {
        Timeout t = timer.newTimeout(x -> ran.incrementAndGet(), 5, TimeUnit.SECONDS);
        assertThat(jraft.delays.get(0)[0]).isEqualTo(TimeUnit.SECONDS.toNanos(5));

        putOff.set(1234);
        jraft.fireLast();
        assertThat(ran).hasValue(0);
        assertThat(jraft.delays).hasSize(2);
        assertThat(jraft.delays.get(1)[0]).isEqualTo(1234);
        assertThat(t.isExpired()).isFalse();

        putOff.set(0);
        jraft.fireLast();
        assertThat(ran).hasValue(1);
        assertThat(t.isExpired()).isTrue();
        assertThat(t.cancel()).isFalse();
    }

    @Test
    void when_jraftCancelsAPutOffTask_then_theCurrentWaitIsCancelledAndTheTaskNeverRuns() throws Exception {
        Timeout t = timer.newTimeout(x -> ran.incrementAndGet(), 5, TimeUnit.SECONDS);
        putOff.set(1000);
        jraft.fireLast();

        assertThat(t.cancel()).isTrue();

        assertThat(t.isCancelled()).isTrue();
        assertThat(jraft.cancelled.get(1)[0]).isTrue();
        putOff.set(0);
        jraft.tasks.get(1).run(null); // even if jraft's timer ran it anyway
        assertThat(ran).hasValue(0);
    }

    @Test
    void when_theGuardIsAskedTheDelay_then_itGetsTheOneTheTaskWasScheduledWith() throws Exception {
        AtomicLong asked = new AtomicLong();
        GuardedTimer t = new GuardedTimer(jraft, delay -> {
            asked.set(delay);
            return 0;
        });
        t.newTimeout(x -> ran.incrementAndGet(), 2500, TimeUnit.MILLISECONDS);

        jraft.fireLast();

        assertThat(asked).hasValue(TimeUnit.MILLISECONDS.toNanos(2500));
        assertThat(ran).hasValue(1);
    }
}
