package io.kvraft.server.region;

import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.StoreBatch;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;

/**
 * The store as the ops of one log entry see it while the entry is turned into a {@link StoreBatch}:
 * the store, under the writes made earlier in the same entry (puts, deletes and range deletes).
 */
final class BatchView {

    private final KvStore store;
    /** Keys written earlier in the entry; a null value is a delete. */
    private final TreeMap<byte[], byte[]> written = new TreeMap<>(Arrays::compareUnsigned);
    /** Ranges deleted earlier in the entry; a key in one reads as absent unless written after it. */
    private final List<KeyRange> deleted = new ArrayList<>();
    /** System records written earlier in the entry; a null value is a delete. */
    private final TreeMap<byte[], byte[]> systemWritten = new TreeMap<>(Arrays::compareUnsigned);

    /** Starts from the writes {@code soFar} already holds (only puts and deletes: no op before the first read deletes ranges). */
    BatchView(KvStore store, StoreBatch soFar) {
        this.store = store;
        for (int i = 0; i < soFar.size(); i++) {
            written.put(soFar.key(i), soFar.value(i));
        }
    }

    byte[] get(byte[] key) {
        if (written.containsKey(key)) {
            return written.get(key);
        }
        for (KeyRange r : deleted) {
            if (r.contains(key)) {
                return null;
            }
        }
        return store.get(key);
    }

    /** A put, or a delete when {@code value} is null. */
    void put(byte[] key, byte[] value) {
        written.put(key, value);
    }

    /** The system record of {@code key} as the entry's earlier ops left it (range deletes never touch these). */
    byte[] getSystem(byte[] key) {
        if (systemWritten.containsKey(key)) {
            return systemWritten.get(key);
        }
        return store.getSystem(key);
    }

    void putSystem(byte[] key, byte[] record) {
        systemWritten.put(key, record);
    }

    void deleteRange(KeyRange range) {
        (range.end().length == 0 ? written.tailMap(range.start(), true)
                : written.subMap(range.start(), true, range.end(), false)).clear();
        deleted.add(range);
    }
}
