package io.kvraft.server.balance;

import org.junit.jupiter.api.Test;

import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class TransferBackoffTest {

    private static final String PEER = "10.0.0.2:8181";
    private static final String OTHER = "10.0.0.3:8181";
    private static final String SELF = "10.0.0.1:8181";

    private final AtomicLong nanos = new AtomicLong(-7_000_000_000L); // nanoTime may be negative
    private final TransferBackoff backoff = new TransferBackoff(nanos::get);

    private void advanceMs(long ms) {
        nanos.addAndGet(ms * 1_000_000L);
    }

    /** A transfer of region 1 in term 5 that timed out: this node leads again in the same term. */
    private String failOnce() {
        backoff.started(1, PEER, 5);
        assertThat(backoff.check(1, false, true, 5, "")).as("under way").isNull();
        return backoff.check(1, true, false, 5, SELF);
    }

    @Test
    void when_theLeaderIsBackInTheSameTerm_then_thePeerIsLeftOutForTenSeconds() {
        assertThat(failOnce()).isEqualTo(PEER);
        assertThat(backoff.avoided()).containsExactly(PEER);
        assertThat(backoff.backoffMs(PEER)).isEqualTo(10_000);
        advanceMs(9_000);
        assertThat(backoff.avoided()).containsExactly(PEER);
        advanceMs(1_000);
        assertThat(backoff.avoided()).isEmpty();
        assertThat(backoff.check(1, true, false, 5, SELF)).as("reported once").isNull();
    }

    @Test
    void when_thePeerFailsAgain_then_thePeriodDoubles_upToAMinute() {
        long[] expected = {10_000, 20_000, 40_000, 60_000, 60_000};
        for (long ms : expected) {
            assertThat(failOnce()).isEqualTo(PEER);
            assertThat(backoff.backoffMs(PEER)).isEqualTo(ms);
            advanceMs(ms);
            assertThat(backoff.avoided()).isEmpty();
        }
    }

    @Test
    void when_transfersOfSeveralRegionsFailTogether_then_thatIsOneFailure() {
        backoff.started(1, PEER, 5);
        backoff.started(2, PEER, 3);
        assertThat(backoff.avoided()).as("a transfer is under way to it").containsExactly(PEER);
        assertThat(backoff.check(1, true, false, 5, SELF)).isEqualTo(PEER);
        advanceMs(200);
        assertThat(backoff.check(2, true, false, 3, SELF)).isEqualTo(PEER);
        assertThat(backoff.backoffMs(PEER)).isEqualTo(10_000);
        advanceMs(9_900);
        assertThat(backoff.avoided()).isEmpty();
    }

    @Test
    void when_thePeerTakesTheLeadership_then_noFailure_andItsPeriodStartsAgain() {
        failOnce();
        advanceMs(10_000);
        failOnce();
        advanceMs(20_000);
        backoff.started(1, PEER, 5);
        assertThat(backoff.check(1, false, false, 6, PEER)).isNull();
        assertThat(backoff.avoided()).isEmpty();
        assertThat(failOnce()).isEqualTo(PEER);
        assertThat(backoff.backoffMs(PEER)).isEqualTo(10_000);
    }

    @Test
    void when_anotherNodeWinsOrTheTermMoves_then_itIsNoFailure() {
        backoff.started(1, PEER, 5);
        assertThat(backoff.check(1, false, false, 6, OTHER)).isNull();
        backoff.started(2, PEER, 5);
        assertThat(backoff.check(2, true, false, 7, SELF)).as("led again after a new election").isNull();
        assertThat(backoff.avoided()).isEmpty();
    }

    @Test
    void when_anElectionIsUnderWay_then_itWaitsForItsOutcome() {
        backoff.started(1, PEER, 5);
        assertThat(backoff.check(1, false, false, 5, "")).isNull();
        assertThat(backoff.check(1, true, false, 5, SELF)).isEqualTo(PEER);
    }

    @Test
    void when_theRegionLeavesThisNode_then_itsTransferIsForgotten() {
        backoff.started(1, PEER, 5);
        backoff.retain(Set.of(2));
        assertThat(backoff.check(1, true, false, 5, SELF)).isNull();
        assertThat(backoff.avoided()).isEmpty();
    }
}
