package io.kvraft.server.store;

import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.Snapshot;

/** An iterator of one column family limited to one range; owns the bound slices, which must outlive the iterator. */
final class RocksRangeScan implements AutoCloseable {

    private final Slice lowerBound;
    private final Slice upperBound;
    private final ReadOptions readOptions;
    private final RocksIterator iterator;

    /**
     * @param snapshot  the point in time to read, or null for the latest
     * @param fillCache false for one-off scans (snapshots, counts), to keep them from evicting hot blocks
     */
    RocksRangeScan(RocksDB db, ColumnFamilyHandle family, KeyRange range, Snapshot snapshot, boolean fillCache) {
        readOptions = new ReadOptions().setFillCache(fillCache);
        // An empty start or end is unbounded on that side, which is ReadOptions' default.
        lowerBound = range.start().length == 0 ? null : new Slice(range.start());
        upperBound = range.end().length == 0 ? null : new Slice(range.end());
        if (lowerBound != null) {
            readOptions.setIterateLowerBound(lowerBound);
        }
        if (upperBound != null) {
            readOptions.setIterateUpperBound(upperBound);
        }
        if (snapshot != null) {
            readOptions.setSnapshot(snapshot);
        }
        iterator = db.newIterator(family, readOptions);
    }

    RocksIterator iterator() {
        return iterator;
    }

    /** The largest key of {@code range} in {@code family} now, or null when the range holds none. */
    static byte[] lastKey(RocksDB db, ColumnFamilyHandle family, KeyRange range) throws RocksDBException {
        try (RocksRangeScan scan = new RocksRangeScan(db, family, range, null, false)) {
            RocksIterator it = scan.iterator();
            it.seekToLast();
            byte[] last = it.isValid() ? it.key() : null;
            it.status();
            return last;
        }
    }

    @Override
    public void close() {
        iterator.close();
        readOptions.close();
        if (lowerBound != null) {
            lowerBound.close();
        }
        if (upperBound != null) {
            upperBound.close();
        }
    }
}
