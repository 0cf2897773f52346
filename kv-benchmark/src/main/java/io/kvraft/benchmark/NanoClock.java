package io.kvraft.benchmark;

import java.util.concurrent.locks.LockSupport;

/** The load generator's time source; tests substitute a manual clock. */
public interface NanoClock {

    /** Monotonic nanoseconds. */
    long nanoTime();

    /** Parks the calling thread for up to {@code nanos} of this clock's time; may return early. */
    void parkNanos(long nanos);

    NanoClock SYSTEM = new NanoClock() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public void parkNanos(long nanos) {
            if (nanos > 0) {
                LockSupport.parkNanos(nanos);
            }
        }
    };
}
