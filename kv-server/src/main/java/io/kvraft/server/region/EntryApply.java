package io.kvraft.server.region;

import io.kvraft.common.proto.KvProto.CoordResult;
import io.kvraft.server.coord.Locks;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.StoreBatch;

/**
 * One log entry's ops being turned into a {@link StoreBatch}, on the region's state machine thread: the writes so far,
 * the store as the entry's earlier ops left it (made on the first op that reads: plain puts need no reads), and each
 * op's result. {@link WriteOps} applies each op through it.
 */
final class EntryApply {

    private final KvStore store;
    private final StoreBatch out;
    private final KeyRange regionRange;
    private final Locks.Clock clock;
    private final boolean[] results;
    private final byte[][] previous;
    private final CoordResult[] coord;
    private BatchView view;

    /**
     * @param previous per op, the value it found, for entries whose answers carry one; else null
     * @param coord    per op, its sequence or lock answer, for entries whose answers carry one; else null
     */
    EntryApply(KvStore store, int ops, KeyRange regionRange, Locks.Clock clock, boolean[] results, byte[][] previous,
               CoordResult[] coord) {
        this.store = store;
        this.out = new StoreBatch(ops);
        this.regionRange = regionRange;
        this.clock = clock;
        this.results = results;
        this.previous = previous;
        this.coord = coord;
    }

    StoreBatch batch() {
        return out;
    }

    /** The region's range when the entry applies: every replica decides range questions on it alike. */
    KeyRange regionRange() {
        return regionRange;
    }

    /** The entry's time, from its leader's stamps (locks' leases run on it). */
    Locks.Clock clock() {
        return clock;
    }

    private BatchView view() {
        if (view == null) {
            view = new BatchView(store, out);
        }
        return view;
    }

    /** The value of {@code key} as the entry's earlier ops left it. */
    byte[] get(byte[] key) {
        return view().get(key);
    }

    void put(byte[] key, byte[] value) {
        out.put(key, value);
        if (view != null) {
            view.put(key, value);
        }
    }

    void delete(byte[] key) {
        view();
        out.delete(key);
        view.put(key, null);
    }

    void deleteRange(KeyRange range) {
        view();
        out.deleteRange(range.start(), range.end());
        view.deleteRange(range);
    }

    /** The system record of {@code key} as the entry's earlier ops left it. */
    byte[] getSystem(byte[] key) {
        return view().getSystem(key);
    }

    void putSystem(byte[] key, byte[] record) {
        view();
        out.putSystem(key, record);
        view.putSystem(key, record);
    }

    void succeeded(int op, boolean succeeded) {
        results[op] = succeeded;
    }

    /** Records the value op {@code op} found, when the entry's answers carry it. */
    void previous(int op, byte[] value) {
        if (previous != null) {
            previous[op] = value;
        }
    }

    /** Records op {@code op}'s sequence or lock answer, when the entry's answers carry it. */
    void coord(int op, CoordResult result) {
        if (coord != null) {
            coord[op] = result;
        }
    }
}
