package io.kvraft.server.metrics;

import io.kvraft.server.region.RegionTimings;
import io.prometheus.client.Collector;
import io.prometheus.client.Histogram;

/**
 * One region's timings on one node, updated by the region's code with one call each (per log entry
 * or per ReadIndex round, never per operation). {@link RegionCollector} exports them with the region's
 * id as a label.
 */
public final class RegionMetrics implements RegionTimings {

    /** Writing one log entry's batch into the store, on the state machine thread. */
    final Histogram apply = histogram("kv_region_apply_seconds", "Store write of one log entry's batch");
    /** A ReadIndex round, from asking jraft to the store being fresh enough to read. */
    final Histogram readIndex = histogram("kv_region_read_index_seconds", "ReadIndex round, from asking to readable");
    /** A proposed log entry, from proposal to its closure (committed and applied, or failed). */
    final Histogram commit = histogram("kv_region_commit_seconds", "Log entry from proposal to committed and applied");
    private volatile long snapshotIndex;
    private volatile long snapshotMillis;

    private static Histogram histogram(String name, String help) {
        return Histogram.build(name, help).buckets(LatencyBuckets.SECONDS).create();
    }

    @Override
    public void applied(long startNanos) {
        apply.observe((System.nanoTime() - startNanos) / 1e9);
    }

    @Override
    public void readIndexDone(long startNanos) {
        readIndex.observe((System.nanoTime() - startNanos) / 1e9);
    }

    /** ReadIndex rounds done so far, failed ones included. */
    public long readIndexRounds() {
        for (Collector.MetricFamilySamples.Sample s : readIndex.collect().get(0).samples) {
            if (s.name.endsWith("_count")) {
                return (long) s.value;
            }
        }
        return 0;
    }

    @Override
    public void committed(long startNanos) {
        commit.observe((System.nanoTime() - startNanos) / 1e9);
    }

    @Override
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
