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
 */
public record StoreConfig(String engine, Long blockCacheBytes, Long writeBufferBytes, String compression,
                          Boolean hashIndex, Double maxHeapFraction) {
    public static final StoreConfig DEFAULT = new StoreConfig(null, null, null, null, null, null);

    /** The store with {@code maxHeapFraction}'s default. */
    public StoreConfig(String engine, Long blockCacheBytes, Long writeBufferBytes, String compression,
                       Boolean hashIndex) {
        this(engine, blockCacheBytes, writeBufferBytes, compression, hashIndex, null);
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
        if (!engine.equals("memory") && !engine.equals("rocksdb")) {
            throw new IllegalArgumentException("store.engine must be memory or rocksdb, got '" + engine + "'");
        }
        if (!List.of("none", "lz4", "zstd", "snappy").contains(compression)) {
            throw new IllegalArgumentException("store.compression must be none, lz4, zstd or snappy, got '" + compression + "'");
        }
    }
}
