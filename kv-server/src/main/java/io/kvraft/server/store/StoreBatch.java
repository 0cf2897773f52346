package io.kvraft.server.store;

import java.util.ArrayList;
import java.util.List;

/**
 * Puts, deletes and range deletes to apply atomically, in order. A null value is a delete; a non-null
 * range end makes the write a delete of every key in [key, rangeEnd) (an empty end is +inf).
 * Writes to the system space (sequences, locks) are kept apart: puts and deletes only, applied in the
 * same atomic step, never touched by range deletes.
 */
public final class StoreBatch {

    private final List<byte[]> keys;
    private final List<byte[]> values;
    /** Null until the batch holds a range delete; then one entry per write, null where it is none. */
    private List<byte[]> rangeEnds;
    /** Null until the batch writes the system space; keys and values alternate, a null value is a delete. */
    private List<byte[]> system;
    /** Null unless the batch records regions' states (a split): written with the data, in the same atomic step. */
    private List<RegionMeta> regionMetas;

    /** A region's applied index and state (a serialized RegionState), recorded by a batch. */
    public record RegionMeta(int regionId, long appliedIndex, byte[] state) {
    }

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

    /** Sets the system record of {@code key}; a null record deletes it. */
    public void putSystem(byte[] key, byte[] record) {
        if (system == null) {
            system = new ArrayList<>(2);
        }
        system.add(key);
        system.add(record);
    }

    /**
     * Records {@code state} and {@code appliedIndex} for {@code regionId} with this batch (the applying region's
     * own index is recorded anyway; this names it again with its state, or another region: a split's child).
     */
    public void regionMeta(int regionId, long appliedIndex, byte[] state) {
        if (regionMetas == null) {
            regionMetas = new ArrayList<>(2);
        }
        regionMetas.add(new RegionMeta(regionId, appliedIndex, state));
    }

    /** The region states this batch records, in order (empty for plain data batches). */
    public List<RegionMeta> regionMetas() {
        return regionMetas == null ? List.of() : regionMetas;
    }

    /** Number of system-space writes. */
    public int systemSize() {
        return system == null ? 0 : system.size() / 2;
    }

    public byte[] systemKey(int i) {
        return system.get(2 * i);
    }

    /** The record of the i-th system write, or null when it is a delete. */
    public byte[] systemValue(int i) {
        return system.get(2 * i + 1);
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
