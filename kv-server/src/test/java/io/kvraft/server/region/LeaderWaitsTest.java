package io.kvraft.server.region;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** Requests held while a region's replica knows no leader: each is tried again exactly once, and never lost. */
@Timeout(value = 60, unit = SECONDS)
class LeaderWaitsTest {

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "test-timer"));
    private final AtomicLong nanos = new AtomicLong();

    @AfterEach
    void stop() {
        timer.shutdownNow();
    }

    @Test
    void when_theLeaderBecomesKnown_then_everyHeldRequestRunsOnceOnTheTimerThread() {
        LeaderWaits waits = new LeaderWaits(3, timer, 60_000, 10, nanos::get);
        AtomicInteger runs = new AtomicInteger();
        AtomicReference<String> thread = new AtomicReference<>();
        for (int i = 0; i < 3; i++) {
            assertThat(waits.hold(() -> {
                thread.set(Thread.currentThread().getName());
                runs.incrementAndGet();
            })).isTrue();
        }
        assertThat(runs).hasValue(0);
        waits.release();
        await().atMost(10, SECONDS).untilAsserted(() -> assertThat(runs).hasValue(3));
        assertThat(thread.get()).isEqualTo("test-timer");
        assertThat(waits.size()).isZero();
        waits.release();
        assertThat(runs).as("released once").hasValue(3);
    }

    @Test
    void when_noLeaderComesInTime_then_theRequestIsTriedAgainAfterTheWaitAndOnlyOnce() {
        nanos.set(System.nanoTime());
        LeaderWaits waits = new LeaderWaits(3, timer, 50, 10, System::nanoTime);
        AtomicInteger runs = new AtomicInteger();
        assertThat(waits.hold(runs::incrementAndGet)).isTrue();
        await().atMost(10, SECONDS).untilAsserted(() -> assertThat(runs).hasValue(1));
        assertThat(System.nanoTime() - nanos.get()).as("not before its wait").isGreaterThanOrEqualTo(50_000_000L);
        waits.release();
        assertThat(waits.size()).isZero();
        assertThat(runs).hasValue(1);
    }

    @Test
    void when_requestsExpireAtDifferentTimes_then_eachWaitsItsOwnTime() {
        LeaderWaits waits = new LeaderWaits(3, timer, 1_000, 10, nanos::get);
        AtomicInteger first = new AtomicInteger();
        AtomicInteger second = new AtomicInteger();
        waits.hold(first::incrementAndGet); // held at 0: due at 1 s on the test's clock
        nanos.set(600_000_000L);
        waits.hold(second::incrementAndGet); // due at 1.6 s
        nanos.set(1_100_000_000L); // the first expiry fires (real time) and finds only the first due
        await().atMost(10, SECONDS).untilAsserted(() -> assertThat(first).hasValue(1));
        assertThat(second).hasValue(0);
        assertThat(waits.size()).isEqualTo(1);
        nanos.set(1_700_000_000L);
        await().atMost(10, SECONDS).untilAsserted(() -> assertThat(second).hasValue(1));
        assertThat(waits.size()).isZero();
    }

    @Test
    void when_capacityIsReached_then_moreAreRefusedAndAnsweredByTheCaller() {
        LeaderWaits waits = new LeaderWaits(3, timer, 60_000, 2, nanos::get);
        assertThat(waits.hold(() -> { })).isTrue();
        assertThat(waits.hold(() -> { })).isTrue();
        assertThat(waits.hold(() -> { })).isFalse();
        assertThat(waits.size()).isEqualTo(2);
    }

    @Test
    void when_theRegionStops_then_heldRequestsRunAndNoneIsHeldAfter() {
        LeaderWaits waits = new LeaderWaits(3, timer, 60_000, 10, nanos::get);
        AtomicInteger runs = new AtomicInteger();
        waits.hold(runs::incrementAndGet);
        waits.close();
        await().atMost(10, SECONDS).untilAsserted(() -> assertThat(runs).hasValue(1));
        assertThat(waits.hold(runs::incrementAndGet)).isFalse();
    }

    @Test
    void when_theTimerNoLongerRuns_then_nothingIsHeldAndReleasedOnesRunOnTheCaller() {
        LeaderWaits waits = new LeaderWaits(3, timer, 60_000, 10, nanos::get);
        AtomicInteger runs = new AtomicInteger();
        waits.hold(runs::incrementAndGet);
        timer.shutdownNow();
        waits.release();
        assertThat(runs).as("run at once, not lost").hasValue(1);
        assertThat(waits.hold(runs::incrementAndGet)).isFalse();
    }
}
