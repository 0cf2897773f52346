package io.kvraft.server.store;

import io.kvraft.server.fs.DurableFiles;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.BuiltinComparator;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompressionType;
import org.rocksdb.DBOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteOptions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * The native handles of the node's RocksDB, opened together with the options the store is tuned by (block cache, bloom
 * filter, memtables, compression) and closed together, dependents first: the column families ("default" the data,
 * "meta" each region's applied index and state, "system" the system records), the DB, then options, filter and cache.
 */
final class RocksHandles {

    private static final byte[] META_COLUMN_FAMILY = "meta".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SYSTEM_COLUMN_FAMILY = "system".getBytes(StandardCharsets.US_ASCII);
    /** The meta family holds a few bytes per region; a large memtable would only waste memory. */
    private static final long MAX_META_WRITE_BUFFER_BYTES = 4L << 20;
    private static final int MAX_WRITE_BUFFER_NUMBER = 3;
    private static final int MAX_BACKGROUND_JOBS = 2;
    private static final double BLOOM_BITS_PER_KEY = 10;
    private static final long MAX_INFO_LOG_BYTES = 8L << 20;
    private static final int KEPT_INFO_LOGS = 3;

    final RocksDB db;
    final ColumnFamilyHandle dataFamily;
    final ColumnFamilyHandle metaFamily;
    final ColumnFamilyHandle systemFamily;
    final WriteOptions writeOptions;
    /** Options matching the data family (comparator, table format, compression) for snapshot sst files. */
    final Options sstOptions;
    /** Every native handle, newest on top: popping closes dependents before what they depend on. */
    private final Deque<AutoCloseable> all;

    private RocksHandles(RocksDB db, List<ColumnFamilyHandle> families, WriteOptions writeOptions, Options sstOptions,
                         Deque<AutoCloseable> all) {
        this.db = db;
        this.dataFamily = families.get(0);
        this.metaFamily = families.get(1);
        this.systemFamily = families.get(2);
        this.writeOptions = writeOptions;
        this.sstOptions = sstOptions;
        this.all = all;
    }

    /** See {@link RocksStore#open}, which loads RocksDB's library first. */
    static RocksHandles open(Path dir, long blockCacheBytes, long writeBufferBytes, String compression) {
        CompressionType compressionType = compressionType(compression);
        if (blockCacheBytes <= 0 || writeBufferBytes <= 0) {
            throw new IllegalArgumentException("blockCacheBytes and writeBufferBytes must be positive, got "
                    + blockCacheBytes + " and " + writeBufferBytes);
        }
        Deque<AutoCloseable> handles = new ArrayDeque<>();
        try {
            DurableFiles.createDirectories(dir);
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
            try {
                // a flipped byte in a table file: refuse to start (RocksDB names the file) rather than serve it
                db.verifyChecksum();
            } catch (RocksDBException e) {
                throw new IOException("its files are damaged: " + e.getMessage(), e);
            }
            return new RocksHandles(db, familyHandles, writeOptions, sstOptions, handles);
        } catch (RocksDBException | IOException | RuntimeException e) {
            closeAll(handles, e);
            if (e instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new UncheckedIOException(new IOException("cannot open RocksDB in " + dir + ": " + e.getMessage(), e));
        }
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

    /** Closes every handle, newest first; throws after all are closed when one fails. */
    void close() {
        closeAll(all, null);
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
}
