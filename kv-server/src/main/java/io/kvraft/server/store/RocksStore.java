package io.kvraft.server.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.Snapshot;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * Engine {@code rocksdb}: one RocksDB per node. Column family "default" holds the data, "system" the
 * system records (sequences, locks), "meta" the applied index of each region, written in the same
 * WriteBatch as the data it covers.
 *
 * <p>A region snapshot is {@value #SST_FILE} (the range's pairs, absent when the range is empty) plus
 * {@value #MANIFEST_FILE} (key count, sst size and CRC32C; see {@link RocksSnapshotManifest}), and the
 * same pair of files for the system records ({@value #SYSTEM_SST_FILE}, {@value #SYSTEM_MANIFEST_FILE}), written and
 * loaded by {@link RocksSnapshots}. The native handles and the options they are opened with are {@link RocksHandles}'.
 */
public final class RocksStore implements KvStore {

    public static final String ENGINE = "rocksdb";
    public static final String SST_FILE = "data.sst";
    public static final String MANIFEST_FILE = "manifest";
    public static final String SYSTEM_SST_FILE = "system.sst";
    public static final String SYSTEM_MANIFEST_FILE = "system.manifest";

    private static final byte[] APPLIED_KEY_PREFIX = "applied/".getBytes(StandardCharsets.US_ASCII);
    /** A region's RegionState (range, epoch, regions split off it), written with its applied index. */
    private static final byte[] STATE_KEY_PREFIX = "state/".getBytes(StandardCharsets.US_ASCII);
    /** The end of the top region's range in size estimates: above every key short of eight 0xff bytes. */
    private static final byte[] INF_FOR_SIZES = {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff,
            (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff};
    /** A scan page of this many pairs or more is a bulk read: it does not fill the block cache. */
    static final int BULK_SCAN_PAIRS = 1000;

    static {
        RocksDB.loadLibrary();
    }

    private final RocksHandles handles;
    private final RocksDB db;
    private final ColumnFamilyHandle dataFamily;
    private final ColumnFamilyHandle metaFamily;
    private final ColumnFamilyHandle systemFamily;
    private final WriteOptions writeOptions;
    private final RocksSnapshots snapshots;
    /**
     * Turns use after close into an exception instead of a native crash. Callers must still stop all
     * use before close(); a racing call can slip past this check.
     */
    private volatile boolean closed;
    /** Backup captures not closed yet: the store releases their snapshots before it closes the DB. */
    private final java.util.Set<Capture> captures = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private RocksStore(RocksHandles handles) {
        this.handles = handles;
        this.db = handles.db;
        this.dataFamily = handles.dataFamily;
        this.metaFamily = handles.metaFamily;
        this.systemFamily = handles.systemFamily;
        this.writeOptions = handles.writeOptions;
        this.snapshots = new RocksSnapshots(handles);
    }

    /**
     * Opens (creating if needed) the node's RocksDB in {@code dir}.
     *
     * @param compression one of {@code none}, {@code lz4}, {@code zstd}, {@code snappy}
     * @throws IllegalArgumentException for an unknown compression or non-positive sizes
     * @throws UncheckedIOException when RocksDB cannot open the directory
     */
    public static RocksStore open(Path dir, long blockCacheBytes, long writeBufferBytes, String compression) {
        return new RocksStore(RocksHandles.open(dir, blockCacheBytes, writeBufferBytes, compression));
    }

    @Override
    public String engine() {
        return ENGINE;
    }

    @Override
    public byte[] get(byte[] key) {
        ensureOpen();
        try {
            return db.get(dataFamily, key);
        } catch (RocksDBException e) {
            throw failure("get", e);
        }
    }

    @Override
    public byte[] getSystem(byte[] key) {
        ensureOpen();
        try {
            return db.get(systemFamily, key);
        } catch (RocksDBException e) {
            throw failure("system get", e);
        }
    }

    @Override
    public ScanPage scanSystem(int regionId, KeyRange range, ScanPage.Builder page) {
        ensureOpen();
        try (RocksRangeScan scan = new RocksRangeScan(db, systemFamily, range, null, true)) {
            RocksIterator it = scan.iterator();
            for (it.seekToFirst(); it.isValid(); it.next()) {
                if (!page.hasRoom()) {
                    return page.build(true);
                }
                page.add(it.key(), it.value());
            }
            it.status();
            return page.build(false);
        } catch (RocksDBException e) {
            throw failure("system scan of " + range, e);
        }
    }

    @Override
    public void apply(int regionId, long appliedIndex, StoreBatch batch) {
        ensureOpen();
        // One WriteBatch: the data and the index that covers it are both recovered or both lost.
        try (WriteBatch writes = new WriteBatch()) {
            for (int i = 0; i < batch.size(); i++) {
                byte[] value = batch.value(i);
                byte[] rangeEnd = batch.rangeEnd(i);
                if (rangeEnd != null) {
                    deleteRange(writes, batch.key(i), rangeEnd, batch, i);
                } else if (value == null) {
                    writes.delete(dataFamily, batch.key(i));
                } else {
                    writes.put(dataFamily, batch.key(i), value);
                }
            }
            for (int i = 0; i < batch.systemSize(); i++) {
                if (batch.systemValue(i) == null) {
                    writes.delete(systemFamily, batch.systemKey(i));
                } else {
                    writes.put(systemFamily, batch.systemKey(i), batch.systemValue(i));
                }
            }
            writes.put(metaFamily, appliedKey(regionId), longBytes(appliedIndex));
            for (StoreBatch.RegionMeta meta : batch.regionMetas()) {
                writes.put(metaFamily, appliedKey(meta.regionId()), longBytes(meta.appliedIndex()));
                writes.put(metaFamily, stateKey(meta.regionId()), meta.state());
            }
            db.write(writeOptions, writes);
        } catch (RocksDBException e) {
            throw failure("apply of region " + regionId + " at index " + appliedIndex, e);
        }
    }

    /**
     * Adds a delete of [start, end) to {@code writes}: one range tombstone, however many keys. An empty end
     * is +inf, which no finite key bounds (k < k + 0x00), so the tombstone then ends just past the largest
     * key at or above start, in the store or put earlier in this batch: only the region that owns the top
     * of the key space writes there, one batch at a time.
     */
    private void deleteRange(WriteBatch writes, byte[] start, byte[] end, StoreBatch batch, int before)
            throws RocksDBException {
        if (end.length == 0) {
            byte[] last = lastKey(new KeyRange(start, end));
            for (int j = 0; j < before; j++) {
                byte[] k = batch.key(j);
                if (batch.value(j) != null && Arrays.compareUnsigned(k, start) >= 0
                        && (last == null || Arrays.compareUnsigned(k, last) > 0)) {
                    last = k;
                }
            }
            if (last == null) {
                return;
            }
            end = Arrays.copyOf(last, last.length + 1); // the smallest key above last
        }
        if (Arrays.compareUnsigned(start, end) < 0) {
            writes.deleteRange(dataFamily, start, end);
        }
    }

    @Override
    public ScanPage scan(int regionId, KeyRange range, boolean reverse, ScanPage.Builder page) {
        ensureOpen();
        // the iterator reads one implicit snapshot, so the page never holds half of a WriteBatch; pages of a bulk
        // read (an iterator's, a large scan's) leave the block cache alone, as RocksDB advises for bulk scans
        try (RocksRangeScan scan = new RocksRangeScan(db, dataFamily, range, null, page.limit() < BULK_SCAN_PAIRS)) {
            RocksIterator it = scan.iterator();
            if (reverse) {
                it.seekToLast();
            } else {
                it.seekToFirst();
            }
            while (it.isValid()) {
                if (!page.hasRoom()) {
                    return page.build(true);
                }
                page.add(it.key(), page.keysOnly() ? null : it.value());
                if (reverse) {
                    it.prev();
                } else {
                    it.next();
                }
            }
            it.status();
            return page.build(false);
        } catch (RocksDBException e) {
            throw failure("scan of " + range, e);
        }
    }

    @Override
    public byte[] regionState(int regionId) {
        ensureOpen();
        try {
            return db.get(metaFamily, stateKey(regionId));
        } catch (RocksDBException e) {
            throw failure("read of the state of region " + regionId, e);
        }
    }

    @Override
    public long appliedIndex(int regionId) {
        ensureOpen();
        try {
            byte[] value = db.get(metaFamily, appliedKey(regionId));
            if (value == null) {
                return 0;
            }
            if (value.length != Long.BYTES) {
                throw new IllegalStateException("applied index of region " + regionId + " has " + value.length + " bytes");
            }
            return ByteBuffer.wrap(value).getLong();
        } catch (RocksDBException e) {
            throw failure("read of the applied index of region " + regionId, e);
        }
    }

    @Override
    public void writeSnapshot(KeyRange range, Path dir) throws IOException {
        ensureOpen();
        snapshots.write(range, dir);
    }

    @Override
    public void loadSnapshot(int regionId, long appliedIndex, KeyRange range, Path dir, byte[] state) throws IOException {
        ensureOpen();
        snapshots.load(regionId, appliedIndex, range, dir, state);
    }

    @Override
    public RangeCapture capture(int regionId, KeyRange range) {
        ensureOpen();
        Capture capture = new Capture(range, db.getSnapshot());
        captures.add(capture);
        return capture;
    }

    /**
     * A RocksDB snapshot limited to one range: its pairs and, from the same snapshot (it spans every column
     * family), its system records. Released on close, or by the store's close at the latest.
     */
    private final class Capture implements RangeCapture {
        private final KeyRange range;
        private Snapshot snapshot; // guarded by RocksStore.this

        Capture(KeyRange range, Snapshot snapshot) {
            this.range = range;
            this.snapshot = snapshot;
        }

        @Override
        public long keyCount() {
            return -1;
        }

        @Override
        public ScanPage page(byte[] from, ScanPage.Builder page) {
            return page(dataFamily, from, page);
        }

        @Override
        public ScanPage systemPage(byte[] from, ScanPage.Builder page) {
            return page(systemFamily, from, page);
        }

        private ScanPage page(ColumnFamilyHandle family, byte[] from, ScanPage.Builder page) {
            byte[] start = Arrays.compareUnsigned(from, range.start()) > 0 ? from : range.start();
            synchronized (RocksStore.this) { // so that close() cannot release the snapshot under the iterator
                if (snapshot == null || closed) {
                    throw new IllegalStateException("backup capture is closed");
                }
                // a backup reads every block once: keep it out of the block cache, as bulk scans do
                try (RocksRangeScan scan = new RocksRangeScan(db, family, new KeyRange(start, range.end()), snapshot,
                        false)) {
                    RocksIterator it = scan.iterator();
                    for (it.seekToFirst(); it.isValid(); it.next()) {
                        if (!page.hasRoom()) {
                            return page.build(true);
                        }
                        page.add(it.key(), it.value());
                    }
                    it.status();
                    return page.build(false);
                } catch (RocksDBException e) {
                    throw failure("backup read of " + range, e);
                }
            }
        }

        @Override
        public void close() {
            synchronized (RocksStore.this) {
                if (snapshot != null && !closed) {
                    db.releaseSnapshot(snapshot);
                }
                snapshot = null;
                captures.remove(this);
            }
        }
    }

    /** Exact: a bounded scan of the range (regions are split well before a scan becomes expensive). */
    @Override
    public long approximateCount(KeyRange range) {
        ensureOpen();
        try (RocksRangeScan scan = new RocksRangeScan(db, dataFamily, range, null, false)) {
            RocksIterator it = scan.iterator();
            long count = 0;
            for (it.seekToFirst(); it.isValid(); it.next()) {
                count++;
            }
            it.status();
            return count;
        } catch (RocksDBException e) {
            throw failure("count of " + range, e);
        }
    }

    @Override
    public long approximateBytes(KeyRange range) {
        return approximateSize(range, org.rocksdb.SizeApproximationFlag.INCLUDE_FILES,
                org.rocksdb.SizeApproximationFlag.INCLUDE_MEMTABLES);
    }

    /**
     * While most of the family's keys are still in memtables (a young or small store), the range's keys counted;
     * after that, the range's bytes in sst files at the files' average bytes per key, scaled up by the share of
     * the family's keys still in memtables. RocksDB's own estimate of a range in a memtable does not shrink with
     * the range (it counted whole memtables for ranges a thousandth of them), so it is not used.
     */
    @Override
    public long approximateKeys(KeyRange range) {
        ensureOpen();
        try {
            long inMemory = db.getLongProperty(dataFamily, "rocksdb.num-entries-active-mem-table")
                    + db.getLongProperty(dataFamily, "rocksdb.num-entries-imm-mem-tables");
            long sstBytes = db.getLongProperty(dataFamily, "rocksdb.total-sst-files-size");
            long sstKeys = db.getLongProperty(dataFamily, "rocksdb.estimate-num-keys") - inMemory;
            if (sstBytes <= 0 || sstKeys <= 4 * inMemory) {
                return approximateCount(range); // at most about five memtables' worth of keys: counting is cheap
            }
            long inFiles = approximateSize(range, org.rocksdb.SizeApproximationFlag.INCLUDE_FILES) * sstKeys / sstBytes;
            return inFiles + inFiles * inMemory / sstKeys;
        } catch (RocksDBException ex) {
            throw failure("key estimate of " + range, ex);
        }
    }

    /** RocksDB's approximate bytes of {@code range} in the data family; an empty end (+inf) is taken as 8 bytes of 0xff. */
    private long approximateSize(KeyRange range, org.rocksdb.SizeApproximationFlag... flags) {
        ensureOpen();
        byte[] end = range.end().length > 0 ? range.end() : INF_FOR_SIZES;
        try (Slice s = new Slice(range.start()); Slice e = new Slice(end)) {
            long[] sizes = db.getApproximateSizes(dataFamily, List.of(new org.rocksdb.Range(s, e)), flags);
            return sizes.length == 0 ? 0 : sizes[0];
        }
    }

    /**
     * The memtables (a flush writes them out) plus level 0 and the first level under it that holds files: a
     * compaction of level 0 merges it into that level, and writes all over the key space make every level-0 file
     * overlap nearly all of it. 0 once closed.
     */
    @Override
    public synchronized long compactionBytes() {
        if (closed) {
            return 0;
        }
        long bytes = 0;
        try {
            for (ColumnFamilyHandle family : List.of(dataFamily, systemFamily, metaFamily)) {
                bytes += db.getLongProperty(family, "rocksdb.cur-size-all-mem-tables");
                boolean base = false;
                for (org.rocksdb.LevelMetaData level : db.getColumnFamilyMetaData(family).levels()) {
                    if (level.level() == 0) {
                        bytes += level.size();
                    } else if (!base && level.size() > 0) {
                        bytes += level.size();
                        base = true;
                    }
                }
            }
        } catch (RocksDBException e) {
            return 0;
        }
        return bytes;
    }

    /** Closes every native handle: column families, then the DB, then options, filter and cache. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        for (Capture c : List.copyOf(captures)) {
            c.close(); // a snapshot released after the DB is closed would crash the JVM
        }
        closed = true;
        handles.close();
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("RocksStore is closed");
        }
    }

    /**
     * Checks a region snapshot written by {@link #writeSnapshot} without a store and without changing
     * anything: the manifest's CRC, the sst's size, CRC32C, key count and key range, as {@link #loadSnapshot}
     * does before it touches the store.
     *
     * @throws CorruptSnapshotException when the snapshot would be refused by {@link #loadSnapshot}
     */
    public static void verifySnapshot(Path dir, KeyRange range) throws IOException {
        RocksSnapshots.verify(dir, range);
    }

    private byte[] lastKey(KeyRange range) throws RocksDBException {
        return RocksRangeScan.lastKey(db, dataFamily, range);
    }

    static byte[] stateKey(int regionId) {
        return ByteBuffer.allocate(STATE_KEY_PREFIX.length + Integer.BYTES).put(STATE_KEY_PREFIX).putInt(regionId).array();
    }

    static byte[] appliedKey(int regionId) {
        return ByteBuffer.allocate(APPLIED_KEY_PREFIX.length + Integer.BYTES).put(APPLIED_KEY_PREFIX).putInt(regionId).array();
    }

    static byte[] longBytes(long value) {
        return ByteBuffer.allocate(Long.BYTES).putLong(value).array();
    }

    static UncheckedIOException failure(String what, RocksDBException e) {
        return new UncheckedIOException(new IOException("RocksDB " + what + " failed: " + e.getMessage(), e));
    }
}
