package io.kvraft.server.store;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;

/**
 * One node's key-value data, shared by all regions of the node; a region is a key range.
 * Writes come only from the Raft state machines, one thread per region, on disjoint ranges.
 * Keys are ordered as unsigned bytes.
 */
public interface KvStore extends Closeable {

    /** The engine name as written in YAML: {@code memory} or {@code rocksdb}. */
    String engine();

    /** The value of {@code key}, or null when absent (for the state machine; client reads use {@link #read}). */
    byte[] get(byte[] key);

    /**
     * The system record of {@code key} (a sequence's or a lock's state), or null. The system space is a
     * second key space beside the pairs: client reads, scans and range deletes never see it, region
     * snapshots carry it (the records whose key is in the region's range), and {@link #apply} writes both
     * in one atomic step.
     */
    byte[] getSystem(byte[] key);

    /** A page of the system records of {@code range}, ascending, never half of an applied batch. */
    ScanPage scanSystem(int regionId, KeyRange range, ScanPage.Builder page);

    /**
     * Applies {@code batch} atomically and records {@code appliedIndex} as the region's last applied
     * Raft index in the same atomic step (engines that keep no data across restarts may ignore it).
     */
    void apply(int regionId, long appliedIndex, StoreBatch batch);

    /**
     * The region's state as last recorded with its applied index ({@link StoreBatch#regionMeta} or a snapshot
     * load), or null when none was (always null after a restart for engines that forget on restart).
     */
    byte[] regionState(int regionId);

    /** The last applied index recorded for the region by {@link #apply}, or 0 (always 0 for engines that forget on restart). */
    long appliedIndex(int regionId);

    /**
     * Writes the data of {@code range} into {@code dir} (which exists and is empty), with checksums,
     * as one region's snapshot: its pairs and its system records. Never a copy of the whole store.
     */
    void writeSnapshot(KeyRange range, Path dir) throws IOException;

    /**
     * Replaces everything in {@code range}, pairs and system records, by the snapshot in {@code dir} and records
     * {@code appliedIndex} for the region, with no state (see below). A snapshot that fails its checksums or is
     * truncated is refused with {@link CorruptSnapshotException} and leaves the store unchanged.
     */
    default void loadSnapshot(int regionId, long appliedIndex, KeyRange range, Path dir) throws IOException {
        loadSnapshot(regionId, appliedIndex, range, dir, null);
    }

    /**
     * As {@link #loadSnapshot(int, long, KeyRange, Path)}, and records the region's {@code state} with the applied
     * index, in the same step. With {@code state} null the store records none: a state recorded before is forgotten,
     * as it went with data the load replaced (a replica started again from the cleared range must not take it up).
     */
    void loadSnapshot(int regionId, long appliedIndex, KeyRange range, Path dir, byte[] state) throws IOException;

    /**
     * A page of the keys in {@code range}, ascending or descending, consistent with whole applied batches
     * (never half of one). Reads only: a long scan is many calls, none holding anything open between them.
     */
    ScanPage scan(int regionId, KeyRange range, boolean reverse, ScanPage.Builder page);

    /**
     * The value of {@code key} in the region, never a state inside one applied batch (engines whose
     * {@link #get} already gives that need not override).
     */
    default byte[] read(int regionId, byte[] key) {
        return get(key);
    }

    /**
     * Freezes the data of {@code range} as it is now, for a backup. Called on the region's state machine
     * thread, between two entries, so no write to the range runs meanwhile and the capture is the state at
     * the region's applied index. Cheap for the caller's thread: a RocksDB snapshot, or a copy of the range's
     * entries (references only) for the memory engine.
     */
    RangeCapture capture(int regionId, KeyRange range);

    /**
     * The disk room the engine's next memtable flush or compaction may take before it deletes what it replaces
     * (for the disk guard's reserve); 0 for engines that write no such files.
     */
    default long compactionBytes() {
        return 0;
    }

    /** Number of keys in {@code range} (exact for memory, an estimate is allowed for disk engines). */
    long approximateCount(KeyRange range);

    /** Roughly the number of keys in {@code range}, cheaply (for split checks): by default {@link #approximateCount}. */
    default long approximateKeys(KeyRange range) {
        return approximateCount(range);
    }

    /** Roughly the bytes of keys and values in {@code range} (for split checks). */
    long approximateBytes(KeyRange range);

    /**
     * A key near the middle of the keys in {@code range} (by count), or null when the range holds fewer than two
     * keys. Reads key pages only; may return the range's first key when the count was overestimated.
     */
    default byte[] middleKey(int regionId, KeyRange range) {
        long skip = approximateCount(range) / 2;
        if (skip < 1) {
            return null;
        }
        byte[] cursor = range.start();
        while (true) {
            int want = (int) Math.min(10_000, skip + 1);
            ScanPage page = scan(regionId, new KeyRange(cursor, range.end()), false,
                    new ScanPage.Builder(want, Integer.MAX_VALUE, true));
            java.util.List<byte[]> keys = page.keys();
            if (keys.isEmpty()) {
                return null;
            }
            if (skip < keys.size()) {
                return keys.get((int) skip);
            }
            skip -= keys.size();
            byte[] last = keys.get(keys.size() - 1);
            if (!page.more()) {
                return last;
            }
            cursor = java.util.Arrays.copyOf(last, last.length + 1); // the key just after last
        }
    }
}
