package io.kvraft.server.metrics;

import com.codahale.metrics.Timer;

import java.util.concurrent.TimeUnit;

/**
 * One region's timings on one node, updated by the region's code with one call each (per log entry
 * or per ReadIndex round, never per operation). {@link NodeMetrics} registers them under the region's id.
 */
public final class RegionMetrics {

    /** Writing one log entry's batch into the store, on the state machine thread. */
    final Timer apply = new Timer();
    /** A ReadIndex round, from asking jraft to the store being fresh enough to read. */
    final Timer readIndex = new Timer();
    /** A proposed log entry, from proposal to its closure (committed and applied, or failed). */
    final Timer commit = new Timer();
    private volatile long snapshotIndex;
    private volatile long snapshotMillis;

    public void applied(long startNanos) {
        apply.update(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
    }

    public void readIndexDone(long startNanos) {
        readIndex.update(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
    }

    public void committed(long startNanos) {
        commit.update(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
    }

    /** A snapshot at {@code index} was saved or loaded just now. */
    public void snapshot(long index) {
        snapshotIndex = index;
        snapshotMillis = System.currentTimeMillis();
    }

    long snapshotIndex() {
        return snapshotIndex;
    }

    /** Wall-clock time of the last snapshot saved or loaded by this process, 0 if none. */
    long snapshotMillis() {
        return snapshotMillis;
    }
}
