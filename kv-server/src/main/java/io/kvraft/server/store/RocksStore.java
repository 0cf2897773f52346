package io.kvraft.server.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;

import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.BuiltinComparator;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompressionType;
import org.rocksdb.DBOptions;
import org.rocksdb.EnvOptions;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.Snapshot;
import org.rocksdb.SstFileReader;
import org.rocksdb.SstFileReaderIterator;
import org.rocksdb.SstFileWriter;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * Engine {@code rocksdb}: one RocksDB per node. Column family "default" holds the data, "system" the
 * system records (sequences, locks), "meta" the applied index of each region, written in the same
 * WriteBatch as the data it covers.
 *
 * <p>A region snapshot is {@value #SST_FILE} (the range's pairs, absent when the range is empty) plus
 * {@value #MANIFEST_FILE} (key count, sst size and CRC32C; see {@link RocksSnapshotManifest}), and the
 * same pair of files for the system records ({@value #SYSTEM_SST_FILE}, {@value #SYSTEM_MANIFEST_FILE}).
 */
public final class RocksStore implements KvStore {

    public static final String ENGINE = "rocksdb";
    public static final String SST_FILE = "data.sst";
    public static final String MANIFEST_FILE = "manifest";
    public static final String SYSTEM_SST_FILE = "system.sst";
    public static final String SYSTEM_MANIFEST_FILE = "system.manifest";

    private static final byte[] META_COLUMN_FAMILY = "meta".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SYSTEM_COLUMN_FAMILY = "system".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] APPLIED_KEY_PREFIX = "applied/".getBytes(StandardCharsets.US_ASCII);
    /** A region's RegionState (range, epoch, regions split off it), written with its applied index. */
    private static final byte[] STATE_KEY_PREFIX = "state/".getBytes(StandardCharsets.US_ASCII);
    /** The end of the top region's range in size estimates: above every key short of eight 0xff bytes. */
    private static final byte[] INF_FOR_SIZES = {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff,
            (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff};
    /** The meta family holds a few bytes per region; a large memtable would only waste memory. */
    private static final long MAX_META_WRITE_BUFFER_BYTES = 4L << 20;
    private static final int MAX_WRITE_BUFFER_NUMBER = 3;
    private static final int MAX_BACKGROUND_JOBS = 2;
    private static final double BLOOM_BITS_PER_KEY = 10;
    private static final long MAX_INFO_LOG_BYTES = 8L << 20;
    private static final int KEPT_INFO_LOGS = 3;
    /** A scan page of this many pairs or more is a bulk read: it does not fill the block cache. */
    static final int BULK_SCAN_PAIRS = 1000;

    static {
        RocksDB.loadLibrary();
    }

    private final RocksDB db;
    private final ColumnFamilyHandle dataFamily;
    private final ColumnFamilyHandle metaFamily;
    private final ColumnFamilyHandle systemFamily;
    private final WriteOptions writeOptions;
    /** Options matching the data family (comparator, table format, compression) for snapshot sst files. */
    private final Options sstOptions;
    /** Every native handle, newest on top: popping closes dependents before what they depend on. */
    private final Deque<AutoCloseable> nativeHandles;
    /**
     * Turns use after close into an exception instead of a native crash. Callers must still stop all
     * use before close(); a racing call can slip past this check.
     */
    private volatile boolean closed;
    /** Backup captures not closed yet: the store releases their snapshots before it closes the DB. */
    private final java.util.Set<Capture> captures = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private RocksStore(RocksDB db, ColumnFamilyHandle dataFamily, ColumnFamilyHandle metaFamily,
                       ColumnFamilyHandle systemFamily, WriteOptions writeOptions, Options sstOptions,
                       Deque<AutoCloseable> nativeHandles) {
        this.db = db;
        this.dataFamily = dataFamily;
        this.metaFamily = metaFamily;
        this.systemFamily = systemFamily;
        this.writeOptions = writeOptions;
        this.sstOptions = sstOptions;
        this.nativeHandles = nativeHandles;
    }

    /**
     * Opens (creating if needed) the node's RocksDB in {@code dir}.
     *
     * @param compression one of {@code none}, {@code lz4}, {@code zstd}, {@code snappy}
     * @throws IllegalArgumentException for an unknown compression or non-positive sizes
     * @throws UncheckedIOException when RocksDB cannot open the directory
     */
    public static RocksStore open(Path dir, long blockCacheBytes, long writeBufferBytes, String compression) {
        CompressionType compressionType = compressionType(compression);
        if (blockCacheBytes <= 0 || writeBufferBytes <= 0) {
            throw new IllegalArgumentException("blockCacheBytes and writeBufferBytes must be positive, got "
                    + blockCacheBytes + " and " + writeBufferBytes);
        }
        Deque<AutoCloseable> handles = new ArrayDeque<>();
        try {
            Files.createDirectories(dir);
            LRUCache blockCache = push(handles, new LRUCache(blockCacheBytes));
            BloomFilter bloomFilter = push(handles, new BloomFilter(BLOOM_BITS_PER_KEY, false));
            // Index and filter blocks live in the block cache, so blockCacheBytes bounds table-reader memory.
            BlockBasedTableConfig tableConfig = new BlockBasedTableConfig()
                    .setBlockCache(blockCache)
                    .setFilterPolicy(bloomFilter)
                    .setCacheIndexAndFilterBlocks(true)
                    .setPinL0FilterAndIndexBlocksInCache(true);
            DBOptions dbOptions = push(handles, new DBOptions()
                    .setCreateIfMissing(true)
                    .setCreateMissingColumnFamilies(true)
                    .setMaxBackgroundJobs(MAX_BACKGROUND_JOBS)
                    .setMaxLogFileSize(MAX_INFO_LOG_BYTES)
                    .setKeepLogFileNum(KEPT_INFO_LOGS));
            // RocksDB's bytewise comparator is memcmp order, i.e. the unsigned-byte order of KeyRange.
            ColumnFamilyOptions dataOptions = push(handles, new ColumnFamilyOptions()
                    .setComparator(BuiltinComparator.BYTEWISE_COMPARATOR)
                    .setWriteBufferSize(writeBufferBytes)
                    .setMaxWriteBufferNumber(MAX_WRITE_BUFFER_NUMBER)
                    .setCompressionType(compressionType)
                    .setTableFormatConfig(tableConfig));
            ColumnFamilyOptions metaOptions = push(handles, new ColumnFamilyOptions()
                    .setComparator(BuiltinComparator.BYTEWISE_COMPARATOR)
                    .setWriteBufferSize(Math.min(writeBufferBytes, MAX_META_WRITE_BUFFER_BYTES))
                    .setMaxWriteBufferNumber(MAX_WRITE_BUFFER_NUMBER)
                    .setCompressionType(CompressionType.NO_COMPRESSION)
                    .setTableFormatConfig(tableConfig));
            Options sstOptions = push(handles, new Options(dbOptions, dataOptions));
            // The WAL stays on so data and applied index recover together after a process crash, but it is
            // not fsynced per write: Raft's log is the durable record, and after an OS crash the region
            // replays the log from the recovered applied index (same WriteBatch, so never ahead of the data).
            WriteOptions writeOptions = push(handles, new WriteOptions().setDisableWAL(false).setSync(false));

            List<ColumnFamilyDescriptor> descriptors = List.of(
                    new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, dataOptions),
                    new ColumnFamilyDescriptor(META_COLUMN_FAMILY, metaOptions),
                    // few records, as in meta; the sst options of snapshots fit it too (same comparator)
                    new ColumnFamilyDescriptor(SYSTEM_COLUMN_FAMILY, metaOptions));
            List<ColumnFamilyHandle> familyHandles = new ArrayList<>();
            RocksDB db = push(handles, RocksDB.open(dbOptions, dir.toString(), descriptors, familyHandles));
            familyHandles.forEach(handles::push);
            return new RocksStore(db, familyHandles.get(0), familyHandles.get(1), familyHandles.get(2), writeOptions,
                    sstOptions, handles);
        } catch (RocksDBException | IOException | RuntimeException e) {
            closeAll(handles, e);
            if (e instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new UncheckedIOException(new IOException("cannot open RocksDB in " + dir + ": " + e.getMessage(), e));
        }
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
        try (RangeScan scan = new RangeScan(systemFamily, range, null, true)) {
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
        try (RangeScan scan = new RangeScan(range, null, page.limit() < BULK_SCAN_PAIRS)) {
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
        // A RocksDB snapshot pins one point in time even if another thread writes meanwhile.
        Snapshot pointInTime = db.getSnapshot();
        try {
            writeSst(dataFamily, range, pointInTime, dir.resolve(SST_FILE), dir.resolve(MANIFEST_FILE));
            writeSst(systemFamily, range, pointInTime, dir.resolve(SYSTEM_SST_FILE), dir.resolve(SYSTEM_MANIFEST_FILE));
            SnapshotFiles.syncDirectory(dir);
        } catch (RocksDBException e) {
            throw new IOException("cannot write snapshot of " + range + " to " + dir + ": " + e.getMessage(), e);
        } finally {
            db.releaseSnapshot(pointInTime);
        }
    }

    /** One family's part of a region snapshot: an sst (none when the range is empty there) and its manifest. */
    private void writeSst(ColumnFamilyHandle family, KeyRange range, Snapshot pointInTime, Path sstFile, Path manifestFile)
            throws IOException, RocksDBException {
        try (RangeScan scan = new RangeScan(family, range, pointInTime, false)) {
            RocksIterator it = scan.iterator();
            long keyCount = 0;
            it.seekToFirst();
            if (it.isValid()) {
                try (EnvOptions envOptions = new EnvOptions();
                     SstFileWriter writer = new SstFileWriter(envOptions, sstOptions)) {
                    writer.open(sstFile.toString());
                    for (; it.isValid(); it.next()) {
                        writer.put(it.key(), it.value());
                        keyCount++;
                    }
                    it.status();
                    writer.finish(); // finish() fsyncs the sst
                }
            } else {
                it.status();
            }
            RocksSnapshotManifest manifest = keyCount == 0
                    ? RocksSnapshotManifest.EMPTY
                    : new RocksSnapshotManifest(keyCount, Files.size(sstFile), SnapshotFiles.crc32c(sstFile));
            manifest.writeDurably(manifestFile);
        }
    }

    @Override
    public void loadSnapshot(int regionId, long appliedIndex, KeyRange range, Path dir, byte[] state) throws IOException {
        ensureOpen();
        // Verify everything first: a refused snapshot must leave the store unchanged.
        RocksSnapshotManifest manifest = RocksSnapshotManifest.read(dir.resolve(MANIFEST_FILE));
        Path sstFile = dir.resolve(SST_FILE);
        if (manifest.keyCount() > 0) {
            verifySst(sstFile, manifest, range, sstOptions);
        }
        RocksSnapshotManifest systemManifest = systemManifest(dir);
        Path systemSst = dir.resolve(SYSTEM_SST_FILE);
        if (systemManifest.keyCount() > 0) {
            verifySst(systemSst, systemManifest, range, sstOptions);
        }
        // From here on a crash leaves the old applied index behind, so the state machine reloads the
        // snapshot on restart: the index is recorded last, after the data is complete.
        try {
            deleteRange(dataFamily, range);
            deleteRange(systemFamily, range);
            if (manifest.keyCount() > 0) {
                ingest(dataFamily, sstFile);
            }
            if (systemManifest.keyCount() > 0) {
                ingest(systemFamily, systemSst);
            }
            try (WriteBatch meta = new WriteBatch()) { // the index and the state it goes with: both or neither
                meta.put(metaFamily, appliedKey(regionId), longBytes(appliedIndex));
                if (state != null) {
                    meta.put(metaFamily, stateKey(regionId), state);
                } else {
                    meta.delete(metaFamily, stateKey(regionId));
                }
                db.write(writeOptions, meta);
            }
        } catch (RocksDBException e) {
            throw new IOException("cannot load snapshot " + dir + " into region " + regionId + ": " + e.getMessage(), e);
        }
    }

    private void ingest(ColumnFamilyHandle family, Path sstFile) throws RocksDBException {
        // Copy, not move: the snapshot dir belongs to Raft and must stay intact.
        try (IngestExternalFileOptions ingestOptions = new IngestExternalFileOptions()
                .setMoveFiles(false)
                .setSnapshotConsistency(true)
                .setAllowGlobalSeqNo(true)
                .setAllowBlockingFlush(true)) {
            db.ingestExternalFile(family, List.of(sstFile.toString()), ingestOptions);
        }
    }

    /** The manifest of a snapshot's system records (a missing one is corrupt, as the data's is). */
    private static RocksSnapshotManifest systemManifest(Path dir) throws IOException {
        return RocksSnapshotManifest.read(dir.resolve(SYSTEM_MANIFEST_FILE));
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
                try (RangeScan scan = new RangeScan(family, new KeyRange(start, range.end()), snapshot, false)) {
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
        try (RangeScan scan = new RangeScan(range, null)) {
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
        closeAll(nativeHandles, null);
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
        RocksSnapshotManifest manifest = RocksSnapshotManifest.read(dir.resolve(MANIFEST_FILE));
        RocksSnapshotManifest systemManifest = systemManifest(dir);
        // the families use the default bytewise comparator, which is all a reader needs
        try (Options options = new Options()) {
            if (manifest.keyCount() > 0) {
                verifySst(dir.resolve(SST_FILE), manifest, range, options);
            }
            if (systemManifest.keyCount() > 0) {
                verifySst(dir.resolve(SYSTEM_SST_FILE), systemManifest, range, options);
            }
        }
    }

    private static void verifySst(Path sstFile, RocksSnapshotManifest manifest, KeyRange range, Options sstOptions)
            throws IOException {
        if (!Files.exists(sstFile)) {
            throw SnapshotFiles.corrupt(sstFile, "missing, the manifest promises " + manifest.keyCount() + " keys");
        }
        long sstBytes = Files.size(sstFile);
        if (sstBytes != manifest.sstBytes()) {
            throw SnapshotFiles.corrupt(sstFile, "is " + sstBytes + " bytes, the manifest says " + manifest.sstBytes());
        }
        int crc = SnapshotFiles.crc32c(sstFile);
        if (crc != manifest.sstCrc32c()) {
            throw SnapshotFiles.corrupt(sstFile, String.format("CRC32C mismatch: manifest %08x, computed %08x", manifest.sstCrc32c(), crc));
        }
        // The CRC proves the bytes are the ones written; this proves they are the keys the region expects.
        try (SstFileReader reader = new SstFileReader(sstOptions)) {
            reader.open(sstFile.toString());
            long entries = reader.getTableProperties().getNumEntries();
            if (entries != manifest.keyCount()) {
                throw SnapshotFiles.corrupt(sstFile, "holds " + entries + " keys, the manifest says " + manifest.keyCount());
            }
            try (ReadOptions readOptions = new ReadOptions().setFillCache(false);
                 SstFileReaderIterator it = reader.newIterator(readOptions)) {
                it.seekToFirst();
                byte[] first = it.isValid() ? it.key() : null;
                it.seekToLast();
                byte[] last = it.isValid() ? it.key() : null;
                it.status();
                if (first == null || !range.contains(first) || !range.contains(last)) {
                    throw SnapshotFiles.corrupt(sstFile, "holds keys outside the region range " + range);
                }
            }
        } catch (RocksDBException e) {
            CorruptSnapshotException refused = SnapshotFiles.corrupt(sstFile, "unreadable sst: " + e.getMessage());
            refused.initCause(e);
            throw refused;
        }
    }

    /** Deletes every key of {@code range} in {@code family} in one atomic write. */
    private void deleteRange(ColumnFamilyHandle family, KeyRange range) throws RocksDBException {
        byte[] start = range.start();
        try (WriteBatch deletes = new WriteBatch()) {
            if (range.end().length > 0) {
                if (Arrays.compareUnsigned(start, range.end()) < 0) {
                    deletes.deleteRange(family, start, range.end());
                }
            } else {
                // No finite key sorts above every key (k < k + 0x00), so an unbounded end has no deleteRange
                // limit. Use the range's current last key: delete [start, last) plus last itself. Only this
                // region writes at or above start (it owns the top of the key space), so nothing lands above last.
                byte[] last = lastKey(family, range);
                if (last == null) {
                    return;
                }
                if (Arrays.compareUnsigned(start, last) < 0) {
                    deletes.deleteRange(family, start, last);
                }
                deletes.delete(family, last);
            }
            db.write(writeOptions, deletes);
        }
    }

    private byte[] lastKey(KeyRange range) throws RocksDBException {
        return lastKey(dataFamily, range);
    }

    private byte[] lastKey(ColumnFamilyHandle family, KeyRange range) throws RocksDBException {
        try (RangeScan scan = new RangeScan(family, range, null, false)) {
            RocksIterator it = scan.iterator();
            it.seekToLast();
            byte[] last = it.isValid() ? it.key() : null;
            it.status();
            return last;
        }
    }

    private static byte[] stateKey(int regionId) {
        return ByteBuffer.allocate(STATE_KEY_PREFIX.length + Integer.BYTES).put(STATE_KEY_PREFIX).putInt(regionId).array();
    }

    private static byte[] appliedKey(int regionId) {
        return ByteBuffer.allocate(APPLIED_KEY_PREFIX.length + Integer.BYTES).put(APPLIED_KEY_PREFIX).putInt(regionId).array();
    }

    private static byte[] longBytes(long value) {
        return ByteBuffer.allocate(Long.BYTES).putLong(value).array();
    }

    static CompressionType compressionType(String name) {
        return switch (name == null ? "" : name) {
            case "none" -> CompressionType.NO_COMPRESSION;
            case "lz4" -> CompressionType.LZ4_COMPRESSION;
            case "zstd" -> CompressionType.ZSTD_COMPRESSION;
            case "snappy" -> CompressionType.SNAPPY_COMPRESSION;
            default -> throw new IllegalArgumentException(
                    "unknown compression '" + name + "', expected one of none, lz4, zstd, snappy");
        };
    }

    private static <T extends AutoCloseable> T push(Deque<AutoCloseable> handles, T handle) {
        handles.push(handle);
        return handle;
    }

    /** Closes handles newest first; close failures are suppressed into {@code primary}, or else thrown after all are closed. */
    private static void closeAll(Deque<AutoCloseable> handles, Throwable primary) {
        RuntimeException first = null;
        while (!handles.isEmpty()) {
            try {
                handles.pop().close();
            } catch (Exception e) {
                if (primary != null) {
                    primary.addSuppressed(e);
                } else if (first == null) {
                    first = new IllegalStateException("cannot close a RocksDB handle", e);
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    private static UncheckedIOException failure(String what, RocksDBException e) {
        return new UncheckedIOException(new IOException("RocksDB " + what + " failed: " + e.getMessage(), e));
    }

    /** A data-family iterator limited to one range; owns the bound slices, which must outlive the iterator. */
    private final class RangeScan implements AutoCloseable {
        private final Slice lowerBound;
        private final Slice upperBound;
        private final ReadOptions readOptions;
        private final RocksIterator iterator;

        RangeScan(KeyRange range, Snapshot snapshot) {
            this(range, snapshot, false);
        }

        /** @param fillCache false for one-off scans (snapshots, counts), to keep them from evicting hot blocks */
        RangeScan(KeyRange range, Snapshot snapshot, boolean fillCache) {
            this(dataFamily, range, snapshot, fillCache);
        }

        RangeScan(ColumnFamilyHandle family, KeyRange range, Snapshot snapshot, boolean fillCache) {
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
}
