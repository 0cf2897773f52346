package io.kvraft.server.store;

import java.util.ArrayList;
import java.util.List;

/** Puts and deletes to apply atomically, in order. A null value is a delete. */
public final class StoreBatch {

    private final List<byte[]> keys;
    private final List<byte[]> values;

    public StoreBatch(int expectedSize) {
        keys = new ArrayList<>(expectedSize);
        values = new ArrayList<>(expectedSize);
    }

    public void put(byte[] key, byte[] value) {
        keys.add(key);
        values.add(value);
    }

    public void delete(byte[] key) {
        keys.add(key);
        values.add(null);
    }

    public int size() {
        return keys.size();
    }

    public byte[] key(int i) {
        return keys.get(i);
    }

    /** The value of the i-th write, or null when it is a delete. */
    public byte[] value(int i) {
        return values.get(i);
    }
}
