package io.kvraft.server.raftlog;

import io.kvraft.server.fs.DurableFiles;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompressionType;
import org.rocksdb.DBOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * The Raft logs of all region groups of a node in one RocksDB ({@code raft/log}), so that the 24
 * groups' appends share one WAL: concurrent synced writes from the groups' log threads are merged by
 * RocksDB's write group into one WAL write and one fsync, instead of one fsync per group and round.
 *
 * <p>Keys are {@code int groupId | long index}, big-endian, so each group's entries are one contiguous,
 * ordered range. Column families: {@code log} (every entry), {@code conf} (configuration entries
 * again, read back at start to rebuild jraft's configuration history), {@code meta} (each group's
 * first log index after a prefix truncation).
 *
 * <p>Every use of the database or its column families holds a read lock that {@link #close()} takes for
 * writing: a call after the close fails with an exception, never on a freed native handle (which takes the
 * JVM down), and the close waits for calls under way.
 */
public final class SharedRaftLog implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SharedRaftLog.class);
    static final int KEY_BYTES = Integer.BYTES + Long.BYTES;
    private static final long WRITE_BUFFER_BYTES = 16L << 20;
    private static final long MAX_TOTAL_WAL_BYTES = 64L << 20;
    private static final String LIVE_TABLE_BYTES = "rocksdb.live-sst-files-size";

    private final Path dir;
    private final RocksDB db;
    private final DBOptions dbOptions;
    private final ColumnFamilyOptions cfOptions;
    private final List<ColumnFamilyHandle> handles = new ArrayList<>();
    private final ColumnFamilyHandle log;
    private final ColumnFamilyHandle conf;
    private final ColumnFamilyHandle meta;
    private final WriteOptions writeOptions;
    private final ReadOptions readOptions;
    private final Lock using;
    private final Lock closing;
    private boolean closed;
    /** RocksDB's words on the first entry read that failed (a table file failing its checksum names itself), or null. */
    private volatile String readFailure;

    /**
     * Opens (or creates) the log at {@code dir}.
     *
     * @param sync fsync every append before it is acknowledged ({@code raft.sync})
     */
    public SharedRaftLog(Path dir, boolean sync) {
        RocksDB.loadLibrary();
        this.dir = dir;
        try {
            DurableFiles.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + dir, e);
        }
        dbOptions = new DBOptions()
                .setCreateIfMissing(true)
                .setCreateMissingColumnFamilies(true)
                .setMaxBackgroundJobs(2)
                .setMaxTotalWalSize(MAX_TOTAL_WAL_BYTES)
                .setKeepLogFileNum(2)
                .setMaxLogFileSize(8L << 20)
                // 24 log threads write at once: waiting writers should sleep, not spin and sched_yield
                // (RocksDB's default), which on two cores turned into ~10k context switches a second
                .setEnableWriteThreadAdaptiveYield(false)
                // the write group's leader inserts the whole group into the memtable (entries are small):
                // no second round of waking every writer to insert its own part
                .setAllowConcurrentMemtableWrite(false);
        // entries are written once, read back rarely (a lagging follower, a restart) and dropped by prefix
        cfOptions = new ColumnFamilyOptions()
                .setWriteBufferSize(WRITE_BUFFER_BYTES)
                .setMaxWriteBufferNumber(3)
                .setTargetFileSizeBase(32L << 20)
                .setMaxBytesForLevelBase(128L << 20)
                .setCompressionType(CompressionType.NO_COMPRESSION)
                .setTableFormatConfig(new BlockBasedTableConfig().setBlockCache(new LRUCache(8L << 20)));
        List<ColumnFamilyDescriptor> descriptors = List.of(
                new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cfOptions),
                new ColumnFamilyDescriptor("log".getBytes(StandardCharsets.US_ASCII), cfOptions),
                new ColumnFamilyDescriptor("conf".getBytes(StandardCharsets.US_ASCII), cfOptions),
                new ColumnFamilyDescriptor("meta".getBytes(StandardCharsets.US_ASCII), cfOptions));
        try {
            db = RocksDB.open(dbOptions, dir.toString(), descriptors, handles);
        } catch (RocksDBException e) {
            close(cfOptions, dbOptions);
            throw new IllegalStateException("cannot open the Raft log " + dir + ": " + e.getMessage(), e);
        }
        long verifying = System.nanoTime();
        try {
            // a flipped byte in a table file: refuse to start (RocksDB names the file) rather than replay a damaged log
            db.verifyChecksum();
        } catch (RocksDBException e) {
            handles.forEach(ColumnFamilyHandle::close);
            db.close();
            close(cfOptions, dbOptions);
            throw new IllegalStateException("the Raft log " + dir + " is damaged: " + e.getMessage(), e);
        }
        LOG.info("Raft log {}: the checksums of its table files verified in {} ms", dir,
                (System.nanoTime() - verifying) / 1_000_000);
        log = handles.get(1);
        conf = handles.get(2);
        meta = handles.get(3);
        writeOptions = new WriteOptions().setSync(sync);
        readOptions = new ReadOptions().setTotalOrderSeek(true);
        ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
        using = lock.readLock();
        closing = lock.writeLock();
    }

    /** Takes the read lock; false, without it, once the log is closed. */
    private boolean enter() {
        using.lock();
        if (closed) {
            using.unlock();
            return false;
        }
        return true;
    }

    private RocksDBException closedError() {
        return new RocksDBException("the Raft log " + dir + " is closed");
    }

    private IllegalStateException closedState() {
        return new IllegalStateException("the Raft log " + dir + " is closed");
    }

    /** Fills a batch against the log's column families. */
    interface BatchFill {
        void fill(WriteBatch batch) throws RocksDBException;
    }

    public Path dir() {
        return dir;
    }

    static byte[] key(int group, long index) {
        return ByteBuffer.allocate(KEY_BYTES).putInt(group).putLong(index).array();
    }

    static long indexOf(byte[] key) {
        return ByteBuffer.wrap(key, Integer.BYTES, Long.BYTES).getLong();
    }

    static int groupOf(byte[] key) {
        return ByteBuffer.wrap(key, 0, Integer.BYTES).getInt();
    }

    private static byte[] metaKey(int group) {
        return ByteBuffer.allocate(Integer.BYTES).putInt(group).array();
    }

    /**
     * Writes one batch, filled by {@code fill} against {@link #logFamily()} / {@link #confFamily()} (only inside it:
     * the handles are freed by the close); synced when raft.sync is on.
     */
    void write(BatchFill fill) throws RocksDBException {
        if (!enter()) {
            throw closedError();
        }
        try (WriteBatch batch = new WriteBatch()) {
            fill.fill(batch);
            db.write(writeOptions, batch);
        } finally {
            using.unlock();
        }
    }

    ColumnFamilyHandle logFamily() {
        return log;
    }

    ColumnFamilyHandle confFamily() {
        return conf;
    }

    byte[] get(int group, long index) throws RocksDBException {
        if (!enter()) {
            throw closedError();
        }
        try {
            return db.get(log, readOptions, key(group, index));
        } catch (RocksDBException e) {
            if (readFailure == null) { // kept for the node's exit message: jraft reports only "Corrupted entry at index"
                readFailure = "the Raft log " + dir + " cannot read group " + group + "'s entry " + index + ": " + e.getMessage();
            }
            throw e;
        } finally {
            using.unlock();
        }
    }

    /** Why the first entry read failed (RocksDB names a damaged table file), or null when none has. */
    public String readFailure() {
        return readFailure;
    }

    /** The group's first stored index, or -1 when it has no entries. */
    long firstStoredIndex(int group) {
        if (!enter()) {
            throw closedState();
        }
        try (RocksIterator it = db.newIterator(log, readOptions)) {
            it.seek(key(group, 0));
            return it.isValid() && groupOf(it.key()) == group ? indexOf(it.key()) : -1;
        } finally {
            using.unlock();
        }
    }

    /** The group's last stored index, or -1 when it has no entries. */
    long lastStoredIndex(int group) {
        if (!enter()) {
            throw closedState();
        }
        try (RocksIterator it = db.newIterator(log, readOptions)) {
            it.seekForPrev(key(group, Long.MAX_VALUE));
            return it.isValid() && groupOf(it.key()) == group ? indexOf(it.key()) : -1;
        } finally {
            using.unlock();
        }
    }

    /** Calls {@code visitor} with the group's configuration entries in index order. */
    void forEachConf(int group, Consumer<byte[]> visitor) {
        if (!enter()) {
            throw closedState();
        }
        try (RocksIterator it = db.newIterator(conf, readOptions)) {
            for (it.seek(key(group, 0)); it.isValid() && groupOf(it.key()) == group; it.next()) {
                visitor.accept(it.value());
            }
        } finally {
            using.unlock();
        }
    }

    /** The first log index recorded by the group's last prefix truncation or reset, or -1. */
    long savedFirstIndex(int group) throws RocksDBException {
        if (!enter()) {
            throw closedError();
        }
        try {
            byte[] v = db.get(meta, metaKey(group));
            return v == null ? -1 : ByteBuffer.wrap(v).getLong();
        } finally {
            using.unlock();
        }
    }

    /** Inside a {@link #write} fill: records the group's first index. */
    void putFirstIndex(WriteBatch batch, int group, long firstIndex) throws RocksDBException {
        batch.put(meta, metaKey(group), ByteBuffer.allocate(Long.BYTES).putLong(firstIndex).array());
    }

    /** Inside a {@link #write} fill: deletes the group's entries with index in [from, to) in both entry families. */
    void deleteRange(WriteBatch batch, int group, long from, long to) throws RocksDBException {
        if (from < to) {
            batch.deleteRange(log, key(group, from), key(group, to));
            batch.deleteRange(conf, key(group, from), key(group, to));
        }
    }

    /** Forgets everything of one group: its entries and its first index (a region reset to empty). */
    public void dropGroup(int group) {
        try {
            write(batch -> {
                deleteRange(batch, group, 0, Long.MAX_VALUE);
                batch.delete(meta, metaKey(group));
            });
        } catch (RocksDBException e) {
            throw new IllegalStateException("cannot drop the Raft log of group " + group + " in " + dir + ": " + e.getMessage(), e);
        }
    }

    /**
     * The bytes of the log's table files, or 0 once closed. Every memtable flush holds entries of every group, so it
     * overlaps nearly all of level 1 and its compaction writes about that much again before it deletes the inputs:
     * the room a compaction of this log may take at once.
     */
    public long tableBytes() {
        if (!enter()) {
            return 0;
        }
        try {
            return db.getLongProperty(log, LIVE_TABLE_BYTES) + db.getLongProperty(conf, LIVE_TABLE_BYTES);
        } catch (RocksDBException e) {
            return 0;
        } finally {
            using.unlock();
        }
    }

    /** Whether the group has any entry or saved state in this log. */
    public boolean hasGroup(int group) {
        try {
            return firstStoredIndex(group) >= 0 || savedFirstIndex(group) >= 0;
        } catch (RocksDBException e) {
            throw new IllegalStateException("cannot read the Raft log " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Closes the database once the calls under way have returned; later calls fail. Idempotent. */
    @Override
    public void close() {
        closing.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            for (ColumnFamilyHandle h : handles) {
                h.close();
            }
            db.close();
            close(writeOptions, readOptions, cfOptions, dbOptions);
        } finally {
            closing.unlock();
        }
    }

    private static void close(AutoCloseable... resources) {
        for (AutoCloseable r : resources) {
            if (r != null) {
                try {
                    r.close();
                } catch (Exception ignored) {
                    // native handles: nothing to report
                }
            }
        }
    }
}
