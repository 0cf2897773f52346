package io.kvraft.server.store;

import java.util.ArrayList;
import java.util.List;

/**
 * Puts, deletes and range deletes to apply atomically, in order. A null value is a delete; a non-null
 * range end makes the write a delete of every key in [key, rangeEnd) (an empty end is +inf).
 */
public final class StoreBatch {

    private final List<byte[]> keys;
    private final List<byte[]> values;
    /** Null until the batch holds a range delete; then one entry per write, null where it is none. */
    private List<byte[]> rangeEnds;

    public StoreBatch(int expectedSize) {
        keys = new ArrayList<>(expectedSize);
        values = new ArrayList<>(expectedSize);
    }

    public void put(byte[] key, byte[] value) {
        add(key, value, null);
    }

    public void delete(byte[] key) {
        add(key, null, null);
    }

    /** Deletes every key in [start, end); an empty end is +inf. */
    public void deleteRange(byte[] start, byte[] end) {
        if (rangeEnds == null) {
            rangeEnds = new ArrayList<>(keys.size() + 1);
            for (int i = 0; i < keys.size(); i++) {
                rangeEnds.add(null);
            }
        }
        add(start, null, end);
    }

    private void add(byte[] key, byte[] value, byte[] rangeEnd) {
        keys.add(key);
        values.add(value);
        if (rangeEnds != null) {
            rangeEnds.add(rangeEnd);
        }
    }

    public int size() {
        return keys.size();
    }

    /** The key of the i-th write, or the start of its range when it is a range delete. */
    public byte[] key(int i) {
        return keys.get(i);
    }

    /** The value of the i-th write, or null when it is a delete or a range delete. */
    public byte[] value(int i) {
        return values.get(i);
    }

    /** True when some write of the batch is a range delete. */
    public boolean hasRangeDeletes() {
        return rangeEnds != null;
    }

    /** The end of the i-th write's range (empty = +inf) when it is a range delete, else null. */
    public byte[] rangeEnd(int i) {
        return rangeEnds == null ? null : rangeEnds.get(i);
    }
}
