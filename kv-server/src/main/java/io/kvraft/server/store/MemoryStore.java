package io.kvraft.server.store;

import io.kvraft.server.fs.DurableFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.locks.StampedLock;

/**
 * Engine {@code memory}: a sorted in-memory map. Nothing survives a restart, so Raft rebuilds it from
 * the latest snapshot plus the log; the applied index is kept in memory only.
 *
 * <p>A region snapshot is {@value #SNAPSHOT_FILE}, the range's pairs in the format of {@link MemorySnapshotFile}, and
 * {@value #SYSTEM_SNAPSHOT_FILE}, the region's system records in the same format; like the data file it must be there
 * (a snapshot without it is refused as corrupt).
 */
public final class MemoryStore implements KvStore {

    public static final String ENGINE = "memory";
    public static final String SNAPSHOT_FILE = "data.snap";
    public static final String SYSTEM_SNAPSHOT_FILE = "system.snap";

    /** The pairs in key order (scans, ranges, snapshots); each value in a {@link Cell} shared with {@link #index}. */
    private final ConcurrentSkipListMap<byte[], Cell> data = new ConcurrentSkipListMap<>(Arrays::compareUnsigned);
    /**
     * The same cells by key hash: a get, and a put to a key that is there, cost one hash lookup instead of a walk down
     * the skip list (a put of an existing key changes its cell in place), whose walks were a large share of a node's
     * CPU under load. It costs about 80 bytes per key. Written by the key's region thread only, like the skip list.
     * Null when the store was opened without it ({@code store.hashIndex: false}): then the skip list answers alone.
     */
    private final ConcurrentHashMap<Key, Cell> index;
    /** The system space: sequences and locks, by the key they are named by. */
    private final ConcurrentSkipListMap<byte[], byte[]> system = new ConcurrentSkipListMap<>(Arrays::compareUnsigned);
    private final Map<Integer, Long> appliedIndexByRegion = new ConcurrentHashMap<>();
    /**
     * Per region: a batch of several writes is applied under the write lock, so client reads (optimistic
     * first) and scans never see half of one, e.g. one key of an all-or-nothing compare-and-put group.
     */
    private final Map<Integer, StampedLock> regionLocks = new ConcurrentHashMap<>();
    /** Regions' states as recorded with their applied index; forgotten on restart like the data. */
    private final Map<Integer, byte[]> regionStates = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /** A store with the hash index ({@code store.hashIndex}'s default). */
    public MemoryStore() {
        this(true);
    }

    /** @param hashIndex keep the hash index beside the skip list: faster gets and overwrites, ~80 bytes more a key */
    public MemoryStore(boolean hashIndex) {
        this.index = hashIndex ? new ConcurrentHashMap<>() : null;
    }

    /** Whether gets and overwrites go through the hash index. */
    public boolean hasHashIndex() {
        return index != null;
    }

    @Override
    public String engine() {
        return ENGINE;
    }

    /** A key in {@link #index}: the bytes, compared by content, with their hash computed once. */
    private static final class Key {
        private final byte[] bytes;
        private final int hash;

        Key(byte[] bytes) {
            this.bytes = bytes;
            this.hash = Arrays.hashCode(bytes);
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && k.hash == hash && Arrays.equals(k.bytes, bytes);
        }
    }

    /** A key's current value; a put stores a new array, never changes one in place, so a reference is a copy. */
    private static final class Cell {
        volatile byte[] value;

        Cell(byte[] value) {
            this.value = value;
        }
    }

    @Override
    public byte[] get(byte[] key) {
        Cell cell = index != null ? index.get(new Key(key)) : data.get(key);
        return cell == null ? null : cell.value;
    }

    @Override
    public byte[] getSystem(byte[] key) {
        return system.get(key);
    }

    @Override
    public ScanPage scanSystem(int regionId, KeyRange range, ScanPage.Builder page) {
        StampedLock lock = lock(regionId);
        long stamp = lock.readLock();
        try {
            for (Map.Entry<byte[], byte[]> e : view(system, range).entrySet()) {
                if (!page.hasRoom()) {
                    return page.build(true);
                }
                page.add(e.getKey(), e.getValue());
            }
            return page.build(false);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    @Override
    public byte[] read(int regionId, byte[] key) {
        StampedLock lock = lock(regionId);
        long stamp = lock.tryOptimisticRead();
        byte[] value = get(key);
        if (lock.validate(stamp)) {
            return value;
        }
        stamp = lock.readLock();
        try {
            return get(key);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    @Override
    public ScanPage scan(int regionId, KeyRange range, boolean reverse, ScanPage.Builder page) {
        StampedLock lock = lock(regionId);
        long stamp = lock.readLock();
        try {
            NavigableMap<byte[], Cell> view = reverse ? view(range).descendingMap() : view(range);
            for (Map.Entry<byte[], Cell> e : view.entrySet()) {
                if (!page.hasRoom()) {
                    return page.build(true);
                }
                page.add(e.getKey(), e.getValue().value);
            }
            return page.build(false);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    private StampedLock lock(int regionId) {
        return regionLocks.computeIfAbsent(regionId, id -> new StampedLock());
    }

    @Override
    public void apply(int regionId, long appliedIndex, StoreBatch batch) {
        if (batch.size() == 1 && !batch.hasRangeDeletes() && batch.systemSize() == 0) {
            write(batch.key(0), batch.value(0));
        } else if (batch.size() > 0 || batch.systemSize() > 0) {
            StampedLock lock = lock(regionId);
            long stamp = lock.writeLock();
            try {
                applyMany(batch);
                for (int i = 0; i < batch.systemSize(); i++) {
                    write(system, batch.systemKey(i), batch.systemValue(i));
                }
            } finally {
                lock.unlockWrite(stamp);
            }
        }
        appliedIndexByRegion.put(regionId, appliedIndex);
        for (StoreBatch.RegionMeta meta : batch.regionMetas()) {
            appliedIndexByRegion.put(meta.regionId(), meta.appliedIndex());
            regionStates.put(meta.regionId(), meta.state());
        }
    }

    @Override
    public byte[] regionState(int regionId) {
        return regionStates.get(regionId);
    }

    private void applyMany(StoreBatch batch) {
        if (batch.hasRangeDeletes()) {
            for (int i = 0; i < batch.size(); i++) {
                byte[] rangeEnd = batch.rangeEnd(i);
                if (rangeEnd != null) {
                    clear(new KeyRange(batch.key(i), rangeEnd));
                } else {
                    write(batch.key(i), batch.value(i));
                }
            }
        } else {
            // in order, so the last write of a key wins; under the region's write lock no reader sees a half batch
            for (int i = 0; i < batch.size(); i++) {
                write(batch.key(i), batch.value(i));
            }
        }
    }

    /** A put of a pair, or its delete when {@code value} is null; by the key's region thread only. */
    private void write(byte[] key, byte[] value) {
        if (index == null) {
            writeOrdered(key, value);
            return;
        }
        Key k = new Key(key);
        if (value == null) {
            if (index.remove(k) != null) {
                data.remove(key);
            }
            return;
        }
        Cell cell = index.get(k);
        if (cell != null) {
            cell.value = value;
            return;
        }
        cell = new Cell(value);
        data.put(key, cell);
        index.put(k, cell);
    }

    /** {@link #write(byte[], byte[])} without the hash index: a put to a key that is there changes its cell. */
    private void writeOrdered(byte[] key, byte[] value) {
        if (value == null) {
            data.remove(key);
            return;
        }
        Cell cell = data.get(key);
        if (cell != null) {
            cell.value = value;
        } else {
            data.put(key, new Cell(value));
        }
    }

    /** Deletes every pair in {@code range}. */
    private void clear(KeyRange range) {
        ConcurrentNavigableMap<byte[], Cell> view = view(range);
        if (index != null) {
            for (byte[] key : view.keySet()) {
                index.remove(new Key(key));
            }
        }
        view.clear();
    }

    /** A put, or a delete when {@code value} is null. */
    private static void write(Map<byte[], byte[]> map, byte[] key, byte[] value) {
        if (value == null) {
            map.remove(key);
        } else {
            map.put(key, value);
        }
    }

    @Override
    public long appliedIndex(int regionId) {
        return appliedIndexByRegion.getOrDefault(regionId, 0L);
    }

    @Override
    public void writeSnapshot(KeyRange range, Path dir) throws IOException {
        // Only this region's thread writes to the range, so the views are stable while we copy them.
        List<Map.Entry<byte[], byte[]>> pairs = new ArrayList<>();
        for (Map.Entry<byte[], Cell> e : view(range).entrySet()) {
            pairs.add(Map.entry(e.getKey(), e.getValue().value));
        }
        MemorySnapshotFile.write(pairs, dir.resolve(SNAPSHOT_FILE));
        MemorySnapshotFile.write(new ArrayList<>(view(system, range).entrySet()), dir.resolve(SYSTEM_SNAPSHOT_FILE));
        DurableFiles.syncDirectory(dir);
    }

    @Override
    public void loadSnapshot(int regionId, long appliedIndex, KeyRange range, Path dir, byte[] state) throws IOException {
        // Parse and verify the whole file before touching the map; a refused snapshot changes nothing.
        List<byte[]> pairs = MemorySnapshotFile.read(dir.resolve(SNAPSHOT_FILE), range);
        List<byte[]> records = readSystem(dir, range);
        StampedLock lock = lock(regionId);
        long stamp = lock.writeLock();
        try {
            clear(range);
            for (int i = 0; i < pairs.size(); i += 2) {
                write(pairs.get(i), pairs.get(i + 1));
            }
            view(system, range).clear();
            for (int i = 0; i < records.size(); i += 2) {
                system.put(records.get(i), records.get(i + 1));
            }
        } finally {
            lock.unlockWrite(stamp);
        }
        appliedIndexByRegion.put(regionId, appliedIndex);
        if (state != null) {
            regionStates.put(regionId, state);
        } else {
            regionStates.remove(regionId);
        }
    }

    /**
     * Checks a region snapshot written by {@link #writeSnapshot} without a store and without changing
     * anything: framing, CRC32C and key range, as {@link #loadSnapshot} does before it touches the map.
     *
     * @throws CorruptSnapshotException when the snapshot would be refused by {@link #loadSnapshot}
     */
    public static void verifySnapshot(Path dir, KeyRange range) throws IOException {
        MemorySnapshotFile.read(dir.resolve(SNAPSHOT_FILE), range);
        readSystem(dir, range);
    }

    /** The system records of a snapshot, keys and values alternating. */
    private static List<byte[]> readSystem(Path dir, KeyRange range) throws IOException {
        return MemorySnapshotFile.read(dir.resolve(SYSTEM_SNAPSHOT_FILE), range);
    }

    @Override
    public RangeCapture capture(int regionId, KeyRange range) {
        // Values are never changed in place (a put stores a new array), so copying the references is a copy.
        // the system records too, under the same lock: both are the state at the region's applied index
        StampedLock lock = lock(regionId);
        long stamp = lock.readLock();
        try {
            return new Capture(Copy.of(view(range), cell -> cell.value), Copy.of(view(system, range), v -> v));
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** A sorted copy of a map's entries (references only). */
    private record Copy(byte[][] keys, byte[][] values) {
        static <V> Copy of(Map<byte[], V> view, java.util.function.Function<V, byte[]> value) {
            List<byte[]> keys = new ArrayList<>();
            List<byte[]> values = new ArrayList<>();
            for (Map.Entry<byte[], V> e : view.entrySet()) {
                keys.add(e.getKey());
                values.add(value.apply(e.getValue()));
            }
            return new Copy(keys.toArray(byte[][]::new), values.toArray(byte[][]::new));
        }

        ScanPage page(byte[] from, ScanPage.Builder page) {
            int i = Arrays.binarySearch(keys, from, Arrays::compareUnsigned);
            for (i = i < 0 ? -i - 1 : i; i < keys.length; i++) {
                if (!page.hasRoom()) {
                    return page.build(true);
                }
                page.add(keys[i], values[i]);
            }
            return page.build(false);
        }
    }

    /** A sorted copy of a range's pairs and system records; unreadable once it or the store is closed, as with RocksDB. */
    private final class Capture implements RangeCapture {
        private volatile Copy pairs;
        private volatile Copy records;

        Capture(Copy pairs, Copy records) {
            this.pairs = pairs;
            this.records = records;
        }

        @Override
        public long keyCount() {
            Copy p = pairs;
            return p == null ? 0 : p.keys().length;
        }

        @Override
        public ScanPage page(byte[] from, ScanPage.Builder page) {
            return open(pairs).page(from, page);
        }

        @Override
        public ScanPage systemPage(byte[] from, ScanPage.Builder page) {
            return open(records).page(from, page);
        }

        private Copy open(Copy copy) {
            if (copy == null || closed) {
                throw new IllegalStateException("backup capture is closed");
            }
            return copy;
        }

        @Override
        public void close() {
            pairs = null;
            records = null;
        }
    }

    @Override
    public long approximateCount(KeyRange range) {
        return view(range).size();
    }

    @Override
    public long approximateBytes(KeyRange range) {
        long bytes = 0;
        for (Map.Entry<byte[], Cell> e : view(range).entrySet()) {
            bytes += e.getKey().length + e.getValue().value.length;
        }
        return bytes;
    }

    @Override
    public void close() {
        closed = true;
        data.clear();
        if (index != null) {
            index.clear();
        }
        system.clear();
        appliedIndexByRegion.clear();
    }

    private ConcurrentNavigableMap<byte[], Cell> view(KeyRange range) {
        return view(data, range);
    }

    private static <V> ConcurrentNavigableMap<byte[], V> view(ConcurrentNavigableMap<byte[], V> map, KeyRange range) {
        // An empty start is the smallest key anyway; only an empty end needs special casing.
        return range.end().length == 0
                ? map.tailMap(range.start(), true)
                : map.subMap(range.start(), true, range.end(), false);
    }
}
