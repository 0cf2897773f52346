package io.kvraft.client.route;

import io.kvraft.common.ErrorCode;

/**
 * Decides by error code whether and when an operation is tried again, within its deadline.
 * Not-leader with a hint goes again at once; an election or a lost node is waited out with a
 * growing pause. While a region has no leader (or a node does not hold it yet) the first
 * {@link #QUICK_LEADER_POLLS} pauses stay at most {@code leaderPollMs} apart: a new region's first
 * election after a split, or a leader transfer, ends within a fraction of a second, and a pause
 * that had doubled to 320 ms kept its writes waiting well after it. A longer wait (a lost node's
 * election timeout) backs off to the cap. Writes whose outcome is unknown (TIMEOUT, UNAVAILABLE)
 * are retried only when they are idempotent.
 */
public final class RetryPolicy {

    public static final long NO_RETRY = -1;
    /** How many tries of a leaderless region are at most {@code leaderPollMs} apart before the full back-off. */
    public static final int QUICK_LEADER_POLLS = 8;

    private final long baseDelayNanos;
    private final long maxDelayNanos;
    private final long leaderPollNanos;

    public RetryPolicy(long baseDelayMs, long maxDelayMs, long leaderPollMs) {
        this.baseDelayNanos = baseDelayMs * 1_000_000L;
        this.maxDelayNanos = maxDelayMs * 1_000_000L;
        this.leaderPollNanos = leaderPollMs * 1_000_000L;
    }

    /** 10 ms doubling to 500 ms; a leaderless region's first tries at most 100 ms apart. */
    public static RetryPolicy defaults() {
        return new RetryPolicy(10, 500, 100);
    }

    public static boolean retriable(ErrorCode code) {
        return switch (code) {
            case NOT_LEADER, NO_LEADER, TIMEOUT, BUSY, SHUTTING_DOWN, UNAVAILABLE,
                 REGION_NOT_FOUND, STALE_EPOCH, KEY_OUT_OF_RANGE -> true;
            default -> false;
        };
    }

    /** Errors after which the whole route table is fetched again before the retry. */
    public static boolean refreshesRoute(ErrorCode code) {
        return code == ErrorCode.REGION_NOT_FOUND || code == ErrorCode.STALE_EPOCH || code == ErrorCode.KEY_OUT_OF_RANGE;
    }

    /** Errors that say the region has no leader the client can reach yet (an election, a split or merge applying). */
    public static boolean awaitsLeader(ErrorCode code, boolean hasLeaderHint) {
        return code == ErrorCode.NO_LEADER || code == ErrorCode.NOT_LEADER && !hasLeaderHint
                || code == ErrorCode.REGION_NOT_FOUND || code == ErrorCode.SHUTTING_DOWN;
    }

    /** Errors that leave the outcome of a write unknown: it may still be applied. */
    public static boolean outcomeUnknown(ErrorCode code) {
        return code == ErrorCode.TIMEOUT || code == ErrorCode.UNAVAILABLE;
    }

    /**
     * The pause before attempt {@code attempt + 1}, or {@link #NO_RETRY}.
     *
     * @param attempt        attempts made so far (1 after the first)
     * @param hasLeaderHint  the error named the leader, so the next try can go straight there
     * @param idempotent     the operation may be applied twice without harm
     * @param nowNanos       the clock
     * @param deadlineNanos  the operation's deadline on the same clock
     */
    public long delayNanos(ErrorCode code, int attempt, boolean hasLeaderHint, boolean idempotent,
                           long nowNanos, long deadlineNanos) {
        if (!retriable(code) || (!idempotent && outcomeUnknown(code))) {
            return NO_RETRY;
        }
        long delay;
        if (code == ErrorCode.NOT_LEADER && hasLeaderHint && attempt <= 3) {
            delay = 0;
        } else {
            int shift = Math.min(Math.max(attempt - 1, 0), 20);
            delay = Math.min(maxDelayNanos, baseDelayNanos << shift);
            if (attempt <= QUICK_LEADER_POLLS && awaitsLeader(code, hasLeaderHint)) {
                delay = Math.min(delay, leaderPollNanos);
            }
        }
        if (nowNanos + delay >= deadlineNanos) {
            return NO_RETRY;
        }
        return delay;
    }
}
