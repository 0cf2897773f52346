package io.kvraft.server.config;

import java.util.List;

import static java.util.Objects.requireNonNullElse;

/**
 * The {@code store:} section of a node's YAML: the engine and its settings.
 *
 * @param engine           {@code memory} (MemoryDB) or {@code rocksdb}
 * @param blockCacheBytes  RocksDB block cache
 * @param writeBufferBytes RocksDB memtable size
 * @param compression      RocksDB compression: none, lz4, zstd, snappy
 * @param hashIndex        MemoryDB only: a hash index beside the skip list (default true): gets and
 *                         overwrites take one hash lookup, at about 80 bytes more per key
 * @param maxHeapFraction  MemoryDB only: once the heap's old generation is fuller than this after a collection
 *                         (default 0.85), a region leader here refuses writes that add data with STORE_FULL
 *                         (deletes pass) until deletes bring it 0.05 below; 1 never refuses. MemoryDB holds every
 *                         pair on the heap, and a node out of heap exits, as its replicas, holding the same pairs,
 *                         would next
 * @param minFreeDiskBytes both engines: once the file system of the data directory has less room than this (default
 *                         256 MiB), a region leader with a replica here refuses writes that add data with STORE_FULL
 *                         (deletes pass) until it has a quarter more again; 0 never refuses. What is left is kept for
 *                         the Raft log's entries in flight, deletes, snapshots and compactions: a node whose Raft log
 *                         cannot append stops its regions until it is restarted
 */
public record StoreConfig(String engine, Long blockCacheBytes, Long writeBufferBytes, String compression,
                          Boolean hashIndex, Double maxHeapFraction, Long minFreeDiskBytes) {
    public static final StoreConfig DEFAULT = new StoreConfig(null, null, null, null, null, null, null);

    /** The store with {@code maxHeapFraction}'s and {@code minFreeDiskBytes}' defaults. */
    public StoreConfig(String engine, Long blockCacheBytes, Long writeBufferBytes, String compression,
                       Boolean hashIndex) {
        this(engine, blockCacheBytes, writeBufferBytes, compression, hashIndex, null, null);
    }

    public StoreConfig {
        engine = requireNonNullElse(engine, "memory");
        blockCacheBytes = requireNonNullElse(blockCacheBytes, 64L << 20);
        writeBufferBytes = requireNonNullElse(writeBufferBytes, 32L << 20);
        compression = requireNonNullElse(compression, "lz4");
        hashIndex = requireNonNullElse(hashIndex, true);
        maxHeapFraction = requireNonNullElse(maxHeapFraction, 0.85);
        if (!(maxHeapFraction > 0.1 && maxHeapFraction <= 1)) {
            throw new IllegalArgumentException("store.maxHeapFraction must be above 0.1 and at most 1 (1: never"
                    + " refuse writes), got " + maxHeapFraction);
        }
        minFreeDiskBytes = requireNonNullElse(minFreeDiskBytes, 256L << 20);
        if (minFreeDiskBytes < 0) {
            throw new IllegalArgumentException("store.minFreeDiskBytes must be 0 (never refuse writes) or more, got "
                    + minFreeDiskBytes);
        }
        if (!engine.equals("memory") && !engine.equals("rocksdb")) {
            throw new IllegalArgumentException("store.engine must be memory or rocksdb, got '" + engine + "'");
        }
        if (!List.of("none", "lz4", "zstd", "snappy").contains(compression)) {
            throw new IllegalArgumentException("store.compression must be none, lz4, zstd or snappy, got '" + compression + "'");
        }
    }
}
