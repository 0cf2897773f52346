package io.kvraft.server.region;

/**
 * What a region reports of its own timings, one call per log entry, ReadIndex round or snapshot (never per
 * operation). The node's metrics export implements it; the region knows nothing of how they are exported.
 */
public interface RegionTimings {

    /** The store write of one log entry's batch, on the state machine thread, began at {@code startNanos}. */
    void applied(long startNanos);

    /** A ReadIndex round, asked at {@code startNanos}, is done (failed ones included). */
    void readIndexDone(long startNanos);

    /** A log entry proposed at {@code startNanos} has run its closure (committed and applied, or failed). */
    void committed(long startNanos);

    /** A snapshot at {@code index} was saved or loaded just now. */
    void snapshot(long index);

    /** Timings nobody reads. */
    RegionTimings NONE = new RegionTimings() {
        @Override
        public void applied(long startNanos) {
        }

        @Override
        public void readIndexDone(long startNanos) {
        }

        @Override
        public void committed(long startNanos) {
        }

        @Override
        public void snapshot(long index) {
        }
    };
}
