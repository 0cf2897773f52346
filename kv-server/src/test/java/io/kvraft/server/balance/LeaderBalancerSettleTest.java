package io.kvraft.server.balance;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class LeaderBalancerSettleTest {

    private final AtomicLong nanos = new AtomicLong(-5_000_000_000L); // nanoTime may be negative
    private final LeaderBalancer.Settle settle = new LeaderBalancer.Settle(3000, nanos::get);

    private void advanceMs(long ms) {
        nanos.addAndGet(ms * 1_000_000L);
    }

    @Test
    void when_theFirstRoundSeesTheRegions_then_itBalancesAtOnce() {
        assertThat(settle.quiet(Map.of(1, 1L, 2, 1L))).isFalse();
        advanceMs(1000);
        assertThat(settle.quiet(Map.of(1, 1L, 2, 1L))).isFalse();
    }

    @Test
    void when_aRegionSplits_then_nothingMovesUntilTheSettlePeriodHasPassed() {
        settle.quiet(Map.of(1, 1L));
        advanceMs(1000);

        assertThat(settle.quiet(Map.of(1, 2L, 2, 2L))).as("the split's round").isTrue();
        advanceMs(2999);
        assertThat(settle.quiet(Map.of(1, 2L, 2, 2L))).isTrue();
        advanceMs(1);
        assertThat(settle.quiet(Map.of(1, 2L, 2, 2L))).isFalse();
    }

    @Test
    void when_anotherChangeComesWhileSettling_then_thePeriodStartsAgain() {
        settle.quiet(Map.of(1, 1L));
        settle.quiet(Map.of(1, 2L, 2, 2L));
        advanceMs(2000);
        assertThat(settle.quiet(Map.of(1, 3L, 2, 2L, 3, 3L))).isTrue();
        advanceMs(2000);
        assertThat(settle.quiet(Map.of(1, 3L, 2, 2L, 3, 3L))).isTrue();
        advanceMs(1000);
        assertThat(settle.quiet(Map.of(1, 3L, 2, 2L, 3, 3L))).isFalse();
    }

    @Test
    void when_aRegionIsRetiredByAMerge_then_thatCountsAsAChange() {
        settle.quiet(Map.of(1, 2L, 2, 2L));
        advanceMs(10_000);
        assertThat(settle.quiet(Map.of(1, 3L))).isTrue();
    }

    @Test
    void when_theSettlePeriodIsZero_then_itNeverWaits() {
        LeaderBalancer.Settle none = new LeaderBalancer.Settle(0, nanos::get);
        none.quiet(Map.of(1, 1L));
        assertThat(none.quiet(Map.of(1, 2L, 2, 2L))).isFalse();
    }
}
