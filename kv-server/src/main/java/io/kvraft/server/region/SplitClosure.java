package io.kvraft.server.region;

import com.alipay.sofa.jraft.Closure;
import com.alipay.sofa.jraft.Status;
import io.kvraft.common.proto.KvProto.RegionState;

/**
 * The closure of an entry that changes a region's shape (a SPLIT or a merge step): the state machine sets the outcome
 * and runs it; jraft runs it with an error if the entry failed.
 */
public final class SplitClosure implements Closure {

    /** The outcome of a proposed split. */
    public interface Callback {
        /**
         * @param status  OK when the entry was applied, else why the proposal failed (its outcome may be unknown)
         * @param split   whether it split the region (false: the region had moved to another epoch, or the key was
         *                no longer strictly inside it)
         * @param left    the region's state after the entry
         * @param right   the new region's state when split, else null
         */
        void done(Status status, boolean split, RegionState left, RegionState right);
    }

    private final Callback callback;
    boolean split;
    RegionState left;
    RegionState right;

    SplitClosure(Callback callback) {
        this.callback = callback;
    }

    @Override
    public void run(Status status) {
        callback.done(status, split, left, right);
    }
}
