package io.kvraft.benchmark.nemesis;

import io.kvraft.benchmark.nemesis.LockChecker.Hold;
import io.kvraft.benchmark.nemesis.LockChecker.Range;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class LockCheckerTest {

    private static final long MS = 1_000_000L;

    @Test
    void when_holdsFollowOneAnotherWithGrowingTokens_then_theRunPassesAndCountsExpiriesAndSteals() {
        LockChecker.Result r = LockChecker.check(List.of(
                new Hold("k", "a", 1, 0, 100 * MS, false),
                new Hold("k", "b", 2, 110 * MS, 300 * MS, true),
                new Hold("k", "a", 3, 2_000 * MS, 2_100 * MS, false),
                new Hold("j", "b", 1, 50 * MS, 60 * MS, false)),
                List.of(new Range(0, 10), new Range(10, 11), new Range(20, 30)));
        assertThat(r.ok()).as(r.violations().toString()).isTrue();
        assertThat(r.holds()).isEqualTo(4);
        assertThat(r.expiries()).isEqualTo(1);
        assertThat(r.steals()).isEqualTo(1);
    }

    @Test
    void when_twoHoldsOverlapByMoreThanTheBound_then_itIsAViolationAndWithinTheBoundItIsNot() {
        assertThat(LockChecker.check(List.of(new Hold("k", "a", 1, 0, 100 * MS, false),
                new Hold("k", "b", 2, 60 * MS, 200 * MS, false)), List.of()).violations()).as("40 ms").isEmpty();
        assertThat(LockChecker.check(List.of(new Hold("k", "a", 1, 0, 100 * MS, false),
                new Hold("k", "b", 2, 40 * MS, 200 * MS, false)), List.of()).violations())
                .singleElement().asString().contains("held it together for 60.0 ms");
    }

    @Test
    void when_aTokenRepeatsOrGoesDown_then_itIsAViolation() {
        assertThat(LockChecker.check(List.of(new Hold("k", "a", 5, 0, 10 * MS, false),
                new Hold("k", "b", 5, 20 * MS, 30 * MS, false)), List.of()).violations()).hasSize(1);
        assertThat(LockChecker.check(List.of(new Hold("k", "a", 5, 0, 10 * MS, false),
                new Hold("k", "b", 4, 20 * MS, 30 * MS, false)), List.of()).violations()).hasSize(1);
    }

    @Test
    void when_theSameHolderReentersUnderTheSameToken_then_itIsNoViolation() {
        assertThat(LockChecker.check(List.of(new Hold("k", "a", 5, 0, 10 * MS, false),
                new Hold("k", "a", 5, 20 * MS, 30 * MS, false)), List.of()).violations()).isEmpty();
    }

    @Test
    void when_aSequenceRangeIsHandedOutTwice_then_itIsAViolation() {
        assertThat(LockChecker.check(List.of(), List.of(new Range(0, 10), new Range(9, 12))).violations())
                .singleElement().asString().contains("overlaps");
    }
}
