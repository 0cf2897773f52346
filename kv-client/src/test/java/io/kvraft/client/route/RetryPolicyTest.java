package io.kvraft.client.route;

import io.kvraft.common.ErrorCode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.EnumSet;
import java.util.Set;

import static io.kvraft.client.route.RetryPolicy.NO_RETRY;
import static org.assertj.core.api.Assertions.assertThat;

class RetryPolicyTest {

    private static final long MS = 1_000_000L;
    /** A fake clock: the operation started at NOW and may take a minute. */
    private static final long NOW = 1_000_000 * MS;
    private static final long FAR = NOW + 60_000 * MS;

    private final RetryPolicy policy = new RetryPolicy(10, 500, 100);

    @ParameterizedTest(name = "attempt {0} -> {1} ms")
    @CsvSource({
            "1, 0",
            "2, 0",
            "3, 0",
            "4, 80",
            "5, 160",
    })
    void when_notLeaderNamesTheLeader_then_theFirstRetriesGoAtOnceAndLaterOnesBackOff(int attempt, long delayMs) {
        assertThat(policy.delayNanos(ErrorCode.NOT_LEADER, attempt, true, false, NOW, FAR)).isEqualTo(delayMs * MS);
    }

    @Test
    void when_notLeaderNamesNoLeader_then_theRetryWaitsLikeAnElection() {
        assertThat(policy.delayNanos(ErrorCode.NOT_LEADER, 1, false, false, NOW, FAR)).isEqualTo(10 * MS);
    }

    @ParameterizedTest(name = "attempt {0} -> {1} ms")
    @CsvSource({
            "0,    10",
            "1,    10",
            "2,    20",
            "3,    40",
            "4,    80",
            "5,    100",
            "6,    100",
            "7,    100",
            "8,    100",
            "9,    500",
            "30,   500",
            "1000, 500",
    })
    void when_regionHasNoLeader_then_theFirstPausesStayShortAndLaterOnesDoubleToTheCap(int attempt, long delayMs) {
        assertThat(policy.delayNanos(ErrorCode.NO_LEADER, attempt, false, false, NOW, FAR)).isEqualTo(delayMs * MS);
        assertThat(policy.delayNanos(ErrorCode.NO_LEADER, attempt, true, true, NOW, FAR))
                .as("a hint does not shorten the wait for an election").isEqualTo(delayMs * MS);
    }

    @ParameterizedTest(name = "{0}, leader hint {1}, attempt {2} -> {3} ms")
    @CsvSource({
            "NOT_LEADER,       false, 6, 100",
            "REGION_NOT_FOUND, false, 6, 100",
            "SHUTTING_DOWN,    false, 6, 100",
            "NOT_LEADER,       true,  6, 320",
            "BUSY,             false, 6, 320",
            "STALE_EPOCH,      false, 6, 320",
            "TIMEOUT,          false, 6, 320",
    })
    void when_noLeaderIsReachableYet_then_onlyThoseWaitsPollQuickly(ErrorCode code, boolean hint, int attempt, long delayMs) {
        assertThat(RetryPolicy.awaitsLeader(code, hint)).isEqualTo(delayMs == 100);
        assertThat(policy.delayNanos(code, attempt, hint, true, NOW, FAR)).isEqualTo(delayMs * MS);
    }

    @Test
    void when_attemptsGrow_then_theDelayNeverShrinksNorOverflows() {
        long previous = 0;
        for (int attempt = 1; attempt <= 100; attempt++) {
            long d = policy.delayNanos(ErrorCode.BUSY, attempt, false, true, NOW, FAR);
            assertThat(d).isBetween(previous, 500 * MS);
            previous = d;
        }
        RetryPolicy huge = new RetryPolicy(1_000, 3_600_000, 3_600_000);
        assertThat(huge.delayNanos(ErrorCode.BUSY, 40, false, true, 0, Long.MAX_VALUE)).isEqualTo(3_600_000 * MS);
    }

    @ParameterizedTest
    @EnumSource(value = ErrorCode.class, names = {"OK", "INVALID_ARGUMENT", "INTERNAL"})
    void when_errorIsNotRetriable_then_itIsNeverRetried(ErrorCode code) {
        assertThat(RetryPolicy.retriable(code)).isFalse();
        for (boolean hint : new boolean[]{false, true}) {
            for (boolean idempotent : new boolean[]{false, true}) {
                for (int attempt = 1; attempt <= 5; attempt++) {
                    assertThat(policy.delayNanos(code, attempt, hint, idempotent, NOW, FAR)).isEqualTo(NO_RETRY);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = ErrorCode.class, names = {"TIMEOUT", "UNAVAILABLE"})
    void when_theOutcomeIsUnknown_then_onlyIdempotentOperationsAreRetried(ErrorCode code) {
        assertThat(RetryPolicy.outcomeUnknown(code)).isTrue();
        assertThat(policy.delayNanos(code, 1, false, false, NOW, FAR)).isEqualTo(NO_RETRY);
        assertThat(policy.delayNanos(code, 1, true, false, NOW, FAR)).isEqualTo(NO_RETRY);
        assertThat(policy.delayNanos(code, 1, false, true, NOW, FAR)).isEqualTo(10 * MS);
        assertThat(policy.delayNanos(code, 3, false, true, NOW, FAR)).isEqualTo(40 * MS);
    }

    @ParameterizedTest
    @EnumSource(value = ErrorCode.class,
            names = {"NOT_LEADER", "NO_LEADER", "BUSY", "SHUTTING_DOWN", "REGION_NOT_FOUND", "STALE_EPOCH", "KEY_OUT_OF_RANGE"})
    void when_theRequestWasSurelyNotApplied_then_evenNonIdempotentOperationsAreRetried(ErrorCode code) {
        assertThat(RetryPolicy.retriable(code)).isTrue();
        assertThat(RetryPolicy.outcomeUnknown(code)).isFalse();
        assertThat(policy.delayNanos(code, 1, false, false, NOW, FAR)).isNotEqualTo(NO_RETRY).isGreaterThanOrEqualTo(0);
    }

    @ParameterizedTest(name = "{0}, {1} ms left -> {2}")
    @CsvSource({
            // code, ms left until the deadline, attempt, leader hint, expected delay ms (-1 = no retry)
            "NO_LEADER,  11, 1, false, 10",
            "NO_LEADER,  10, 1, false, -1",
            "NO_LEADER,   5, 1, false, -1",
            "NO_LEADER,  79, 4, false, -1",
            "NO_LEADER,  81, 4, false, 80",
            "NOT_LEADER,  1, 1, true,  0",
            "NOT_LEADER,  0, 1, true,  -1",
            "NOT_LEADER, -1, 1, true,  -1",
            "BUSY,     -100, 1, false, -1",
    })
    void when_theRetryWouldStartAtOrPastTheDeadline_then_itIsNotRetried(
            ErrorCode code, long msLeft, int attempt, boolean hint, long expectedMs) {
        long delay = policy.delayNanos(code, attempt, hint, true, NOW, NOW + msLeft * MS);

        assertThat(delay).isEqualTo(expectedMs < 0 ? NO_RETRY : expectedMs * MS);
    }

    @ParameterizedTest
    @EnumSource(ErrorCode.class)
    void when_theRouteIsStale_then_theRouteTableIsRefreshed(ErrorCode code) {
        Set<ErrorCode> refreshing = EnumSet.of(ErrorCode.REGION_NOT_FOUND, ErrorCode.STALE_EPOCH, ErrorCode.KEY_OUT_OF_RANGE);

        assertThat(RetryPolicy.refreshesRoute(code)).isEqualTo(refreshing.contains(code));
        if (refreshing.contains(code)) {
            assertThat(RetryPolicy.retriable(code)).as("a refreshed route is worth another try").isTrue();
        }
    }

    @Test
    void when_defaultsAreUsed_then_theBaseIs10msTheLeaderPoll100msAndTheCap500ms() {
        RetryPolicy d = RetryPolicy.defaults();

        assertThat(d.delayNanos(ErrorCode.NO_LEADER, 1, false, false, NOW, FAR)).isEqualTo(10 * MS);
        assertThat(d.delayNanos(ErrorCode.NO_LEADER, RetryPolicy.QUICK_LEADER_POLLS, false, false, NOW, FAR))
                .isEqualTo(100 * MS);
        assertThat(d.delayNanos(ErrorCode.NO_LEADER, 50, false, false, NOW, FAR)).isEqualTo(500 * MS);
    }
}
