package io.kvraft.client.backup;

import java.util.concurrent.locks.LockSupport;

/**
 * Paces a byte stream to a rate: each caller reserves the time its bytes take at that rate and waits until
 * its slot. A burst of up to one second's worth passes at once after an idle spell.
 */
final class RateLimiter {

    private final double nanosPerByte;
    private long nextFreeNanos = Long.MIN_VALUE / 2;

    /** @param bytesPerSecond 0 or less = no limit */
    RateLimiter(double bytesPerSecond) {
        this.nanosPerByte = bytesPerSecond <= 0 ? 0 : 1e9 / bytesPerSecond;
    }

    static RateLimiter megabytesPerSecond(double mbPerSecond) {
        return new RateLimiter(mbPerSecond * 1_000_000);
    }

    /** Waits until {@code bytes} may go (this is pacing, not waiting for a state). */
    void acquire(long bytes) {
        long wait = reserve(bytes, System.nanoTime());
        if (wait > 0) {
            LockSupport.parkNanos(wait);
        }
    }

    /** Books {@code bytes} and says how long the caller must wait first; {@code now} on the nanoTime clock. */
    synchronized long reserve(long bytes, long now) {
        if (nanosPerByte == 0) {
            return 0;
        }
        long start = Math.max(nextFreeNanos, now - 1_000_000_000L);
        nextFreeNanos = start + (long) (bytes * nanosPerByte);
        return Math.max(0, start - now);
    }
}
