package io.kvraft.server.raft;

import com.alipay.sofa.jraft.core.Scheduler;
import com.alipay.sofa.jraft.util.timer.DefaultRaftTimerFactory;
import io.kvraft.server.InProcessCluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

@Timeout(value = 180, unit = SECONDS)
class HeartbeatBurstsTest {

    @TempDir
    Path dir;

    private final ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1);
    private final ScheduledThreadPoolExecutor jraftThreads = new ScheduledThreadPoolExecutor(2);
    private final List<String> toJraft = new CopyOnWriteArrayList<>();
    private final HeartbeatBursts.Bursts bursts = new HeartbeatBursts.Bursts(timer);

    @AfterEach
    void stop() {
        timer.shutdownNow();
        jraftThreads.shutdownNow();
    }

    /** A stand-in for jraft's scheduler: runs what it is given on its own threads and notes each call. */
    private Scheduler jraft(ScheduledExecutorService threads) {
        return new Scheduler() {
            @Override
            public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
                toJraft.add("schedule " + unit.toMillis(delay));
                return threads.schedule(command, delay, unit);
            }

            @Override
            public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
                toJraft.add("fixed rate " + unit.toMillis(period));
                return threads.scheduleAtFixedRate(command, initialDelay, period, unit);
            }

            @Override
            public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
                toJraft.add("fixed delay " + unit.toMillis(delay));
                return threads.scheduleWithFixedDelay(command, initialDelay, delay, unit);
            }

            @Override
            public void shutdown() {
                toJraft.add("shutdown");
            }
        };
    }

    @Test
    void when_stretched_then_aHeartbeatWaitsThatManyIntervals() {
        HeartbeatBursts s = new HeartbeatBursts(jraft(jraftThreads), bursts, () -> true, () -> 30);

        ScheduledFuture<?> f = s.schedule(() -> { }, 1000, MILLISECONDS);

        assertThat(f.getDelay(MILLISECONDS)).isBetween(29_000L, 30_000L);
        f.cancel(false);
        assertThat(s.waiting()).isZero();
    }

    @Test
    void when_heartbeatsAreSentNow_then_eachWaitingOneRunsOnceAtOnceAndNotAgainWithItsBurst() {
        HeartbeatBursts s = new HeartbeatBursts(jraft(jraftThreads), bursts, () -> true);
        AtomicInteger ran = new AtomicInteger();
        s.schedule(ran::incrementAndGet, 600, MILLISECONDS);
        s.schedule(ran::incrementAndGet, 700, MILLISECONDS);
        assertThat(s.waiting()).isEqualTo(2);

        s.sendNow();

        await().atMost(10, SECONDS).until(() -> ran.get() == 2);
        assertThat(toJraft).containsExactly("schedule 0", "schedule 0");
        assertThat(s.waiting()).isZero();
        await().atMost(10, SECONDS).until(() -> bursts.fired() == 1); // the burst fires and finds them done
        assertThat(ran).hasValue(2);
        assertThat(toJraft).hasSize(2);
    }

    @Test
    void when_heartbeatsFallDueWithinHalfAnIntervalOfTheFirst_then_theyGoInOneBurst() {
        HeartbeatBursts s = new HeartbeatBursts(jraft(jraftThreads), bursts, () -> true);
        AtomicInteger ran = new AtomicInteger();
        s.schedule(ran::incrementAndGet, 300, MILLISECONDS);
        s.schedule(ran::incrementAndGet, 400, MILLISECONDS); // may go up to 200 ms early: joins the one at 300
        s.schedule(ran::incrementAndGet, 500, MILLISECONDS); // may go up to 250 ms early: joins too

        assertThat(bursts.pending()).isEqualTo(1);
        await().atMost(10, SECONDS).until(() -> ran.get() == 3);
        assertThat(bursts.fired()).isEqualTo(1);
    }

    @Test
    void when_aHeartbeatFallsDueLaterThanHalfItsIntervalAfterABurst_then_itGetsABurstOfItsOwn() {
        HeartbeatBursts s = new HeartbeatBursts(jraft(jraftThreads), bursts, () -> true);
        AtomicInteger ran = new AtomicInteger();
        s.schedule(ran::incrementAndGet, 100, MILLISECONDS);
        s.schedule(ran::incrementAndGet, 400, MILLISECONDS); // only 200 ms early allowed: 100 is too early

        assertThat(bursts.pending()).isEqualTo(2);
        await().atMost(10, SECONDS).until(() -> ran.get() == 2);
        assertThat(bursts.fired()).isEqualTo(2);
    }

    @Test
    void when_aHeartbeatIsCancelled_then_itNeverRunsAndTheOthersInItsBurstDo() throws Exception {
        HeartbeatBursts s = new HeartbeatBursts(jraft(jraftThreads), bursts, () -> true);
        AtomicInteger kept = new AtomicInteger();
        AtomicInteger cancelled = new AtomicInteger();
        s.schedule(kept::incrementAndGet, 200, MILLISECONDS);
        ScheduledFuture<?> f = s.schedule(cancelled::incrementAndGet, 250, MILLISECONDS);

        assertThat(f.cancel(true)).isTrue();
        await().atMost(10, SECONDS).until(() -> kept.get() == 1 && bursts.fired() == 1);
        // the burst has handed its live tasks to jraft's threads; one more task on them runs after those
        jraftThreads.submit(() -> { }).get(10, SECONDS);
        assertThat(cancelled.get()).isZero();
        assertThat(f.isCancelled()).isTrue();
    }

    @Test
    void when_aTaskIsNoHeartbeat_then_jraftsSchedulerTakesItUnchanged() {
        HeartbeatBursts s = new HeartbeatBursts(jraft(jraftThreads), bursts, () -> false);
        AtomicInteger ran = new AtomicInteger();
        s.schedule(ran::incrementAndGet, 5, MILLISECONDS);
        s.scheduleAtFixedRate(() -> { }, 1000, 1000, MILLISECONDS);
        s.shutdown();

        assertThat(toJraft).containsExactly("schedule 5", "fixed rate 1000", "shutdown");
        assertThat(bursts.pending()).isZero();
        await().atMost(10, SECONDS).until(() -> ran.get() == 1);
    }

    @Test
    void when_theSchedulerIsCalledFromAnythingButJraftsReplicator_then_itIsNoHeartbeat() {
        HeartbeatBursts s = new HeartbeatBursts(jraft(jraftThreads), () -> 1);
        s.schedule(() -> { }, 60_000, MILLISECONDS);

        assertThat(toJraft).containsExactly("schedule 60000");
    }

    @Test
    void when_jraftLoadsItsTimerFactory_then_itIsOurs() {
        assertThat(com.alipay.sofa.jraft.JRaftUtils.raftTimerFactory()).isInstanceOf(BurstTimerFactory.class)
                .isInstanceOf(DefaultRaftTimerFactory.class);
    }

    @Test
    void when_aClusterRuns_then_eachIntervalsHeartbeatsGoInAFewBursts() throws Exception {
        // three nodes, 24 regions: 48 replicators, each with its own heartbeat timer. Without bursts about 48 would be
        // pending at any time; with them the heartbeats of all (one JVM here) settle into a few
        try (InProcessCluster cluster = InProcessCluster.start(3, 24, dir, "memory")) {
            cluster.awaitBalanced(120);
            assertThat(cluster.leaderCounts().values()).containsExactly(8L, 8L, 8L);
            long before = HeartbeatBursts.SHARED.fired();
            await().atMost(60, SECONDS).pollInterval(50, MILLISECONDS)
                    .until(() -> HeartbeatBursts.SHARED.fired() > before + 3 && HeartbeatBursts.SHARED.pending() <= 3);
        }
    }
}
