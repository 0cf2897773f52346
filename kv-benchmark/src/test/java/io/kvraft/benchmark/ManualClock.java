package io.kvraft.benchmark;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/** A clock the test moves; parking waits a little real time and lets the caller re-check. */
final class ManualClock implements NanoClock {

    private final AtomicLong now = new AtomicLong();

    @Override
    public long nanoTime() {
        return now.get();
    }

    @Override
    public void parkNanos(long nanos) {
        LockSupport.parkNanos(100_000L);
    }

    void set(long nanos) {
        now.set(nanos);
    }

    void advanceMillis(long millis) {
        now.addAndGet(millis * 1_000_000L);
    }
}
