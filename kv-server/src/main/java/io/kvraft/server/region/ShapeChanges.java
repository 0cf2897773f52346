package io.kvraft.server.region;

import com.google.protobuf.InvalidProtocolBufferException;
import io.kvraft.common.proto.KvProto.RegionState;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.StoreBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * The log entries that change a region's shape or record its voters (SPLIT, the merge steps, CONF_CHANGED), as the
 * state machine applies them: each goes alone in its entry, decides from the region's state at its index only (so
 * every replica decides alike), records the new state with the index in one store write, and tells the node what it
 * must do about the regions it made or retired ({@link ShapeHooks}).
 */
final class ShapeChanges {

    private static final Logger LOG = LoggerFactory.getLogger(RegionStateMachine.class);

    private final Region region;
    private final KvStore store;

    ShapeChanges(Region region, KvStore store) {
        this.region = region;
        this.store = store;
    }

    /** Applies {@code op}, an entry's only op, at {@code index}; {@code closure} (null: none here) gets the outcome. */
    void apply(WriteOp op, long index, SplitClosure closure) throws InvalidProtocolBufferException, MergeSourceMissing {
        switch (op.getType()) {
            case SPLIT -> applySplit(op, index, closure);
            case PREPARE_MERGE -> applyPrepareMerge(op, index, closure);
            case COMMIT_MERGE -> applyCommitMerge(op, index, closure);
            case MERGE_ABORT -> applyMergeAbort(op, index, closure);
            case CONF_CHANGED -> applyConfChanged(op, index, closure);
            case MERGE_ROLLBACK -> applyMergeRollback(op, index, closure);
            default -> throw new IllegalArgumentException(op.getType() + " changes no region's shape");
        }
    }


    /**
     * Applies a SPLIT at {@code index}: when the region is at the split's epoch and the key lies strictly inside
     * it, the region keeps [start, key) and a new region takes [key, end), both at epoch + 1. The child is listed
     * in the node's catalog first (durably), then both states are recorded with the index in one store write, then
     * the child's group is bootstrapped and started off this thread (the parent's apply does not wait for it).
     */
    void applySplit(WriteOp op, long index, SplitClosure closure) {
        RegionState current = region.state();
        byte[] key = op.getKey().toByteArray();
        boolean valid = current.getEpoch() == op.getEpoch() && current.getMergingInto() == 0 && region.range().splitsAt(key)
                && op.getRegionId() != 0 && op.getRegionId() != current.getId();
        StoreBatch writes = new StoreBatch(0);
        RegionState left = current;
        RegionState child = null;
        if (valid) {
            child = RegionState.newBuilder().setId(op.getRegionId()).setStartKey(op.getKey())
                    .setEndKey(current.getEndKey()).setEpoch(current.getEpoch() + 1).setCreatedAt(index)
                    .setParent(current.getId()).addAllPeers(region.peers()) // a split moves no replica
                    .setConfVer(current.getConfVer()).addAllConfPeers(region.peers().stream().sorted().toList()).build();
            left = current.toBuilder().setEndKey(op.getKey()).setEpoch(current.getEpoch() + 1).addChildren(child).build();
            region.splits().prepareChild(region, child, index);
            writes.regionMeta(current.getId(), index, left.toByteArray());
            writes.regionMeta(child.getId(), index, child.toByteArray());
        }
        store.apply(region.id(), index, writes);
        region.state(left);
        if (valid) {
            LOG.info("region {}: split at index {}: keeps {}, region {} takes {}, epoch {}", region.id(), index,
                    region.range(), child.getId(), Region.Shape.of(child).range(), left.getEpoch());
            region.splits().startChild(child);
        } else {
            LOG.info("region {}: split at index {} refused: the region is at epoch {} range {}, the split was for epoch {}"
                    + " at key {}", region.id(), index, current.getEpoch(), region.range(), op.getEpoch(),
                    java.util.HexFormat.of().formatHex(key));
        }
        if (closure != null) {
            closure.split = valid;
            closure.left = left;
            closure.right = child;
        }
    }

    /**
     * CONF_CHANGED: records the voters its leader saw committed; when they differ from those the state recorded last,
     * the conf version goes up by one. On every replica alike, in log order, so all agree on each version's voters.
     */
    void applyConfChanged(WriteOp op, long index, SplitClosure closure) {
        RegionState current = region.state();
        List<String> voters = op.getPeersList().stream().sorted().toList();
        boolean changed = !voters.isEmpty() && !voters.equals(current.getConfPeersList()); // recorded sorted
        RegionState next = current;
        StoreBatch writes = new StoreBatch(0);
        if (changed) {
            next = current.toBuilder().setConfVer(current.getConfVer() + 1).clearConfPeers().addAllConfPeers(voters).build();
            writes.regionMeta(current.getId(), index, next.toByteArray());
        }
        store.apply(region.id(), index, writes);
        region.state(next);
        if (changed) {
            LOG.info("region {}: conf version {} at index {}: voters {}", region.id(), next.getConfVer(), index, voters);
        }
        if (closure != null) {
            closure.split = changed;
            closure.left = next;
        }
    }

    static boolean changesShape(WriteOpType type) {
        return switch (type) {
            case SPLIT, PREPARE_MERGE, COMMIT_MERGE, MERGE_ABORT, MERGE_ROLLBACK, CONF_CHANGED -> true;
            default -> false;
        };
    }

    /** This node has no replica of a merge's right region, so it cannot take in its data: the group must stop. */
    static final class MergeSourceMissing extends Exception {
        MergeSourceMissing(String message) {
            super(message);
        }
    }

    /** Records {@code next} as the region's state at {@code index} (with no data) and makes it current. */
    private void recordState(RegionState next, long index) {
        StoreBatch writes = new StoreBatch(0);
        writes.regionMeta(region.id(), index, next.toByteArray());
        store.apply(region.id(), index, writes);
        region.state(next);
    }

    private static void outcome(SplitClosure closure, boolean changed, RegionState state, RegionState other) {
        if (closure != null) {
            closure.split = changed;
            closure.left = state;
            closure.right = other;
        }
    }

    /**
     * PREPARE_MERGE, in the right region's log: at the entry's epoch, the region stops taking requests and writes
     * (its data is final from here), records which region it merges into and this index, at epoch + 1.
     */
    void applyPrepareMerge(WriteOp op, long index, SplitClosure closure) {
        RegionState current = region.state();
        boolean valid = current.getEpoch() == op.getEpoch() && current.getMergingInto() == 0 && op.getRegionId() != 0
                && op.getRegionId() != current.getId();
        RegionState next = !valid ? current : current.toBuilder().setEpoch(current.getEpoch() + 1)
                .setMergingInto(op.getRegionId()).setMergePreparedAt(index).build();
        recordState(next, index);
        if (valid) {
            LOG.info("region {}: merge into region {} prepared at index {}, epoch {}: no more requests", region.id(),
                    op.getRegionId(), index, next.getEpoch());
            if (!RegionStateMachine.durableStore(store)) {
                region.splits().snapshotSoon(region); // the final data must outlive a restart without this group's peers
            }
        } else {
            LOG.info("region {}: merge prepare at index {} refused: region at epoch {} (merging into {}), prepare was for"
                    + " epoch {}", region.id(), index, current.getEpoch(), current.getMergingInto(), op.getEpoch());
        }
        outcome(closure, valid, next, null);
    }

    /**
     * COMMIT_MERGE, in the left region's log: at the entry's epoch, with the right region prepared to merge into this
     * one, the region takes the right one's range. First this node's replica of the right region must have applied
     * the prepare (its data is then final in the store; the merge was only decided once every replica had); then the
     * widened range is listed, recorded with this index, and the right region's group retired on this node.
     */
    void applyCommitMerge(WriteOp op, long index, SplitClosure closure)
            throws InvalidProtocolBufferException, MergeSourceMissing {
        RegionState current = region.state();
        RegionState right = RegionState.parseFrom(op.getValue());
        boolean valid = current.getEpoch() == op.getEpoch() && current.getMergingInto() == 0
                && right.getId() == op.getRegionId() && current.getEndKey().size() > 0
                && current.getEndKey().equals(right.getStartKey()) && right.getMergingInto() == current.getId()
                && right.getMergePreparedAt() == op.getStep();
        if (!valid) {
            LOG.info("region {}: merge of region {} at index {} refused: the region is at epoch {} {}, the merge was"
                    + " decided at epoch {}", region.id(), op.getRegionId(), index, current.getEpoch(), region.range(),
                    op.getEpoch());
            recordState(current, index);
            outcome(closure, false, current, right);
            return;
        }
        if (!region.splits().awaitMergeSource(right, current.getId())) {
            throw new MergeSourceMissing("region " + right.getId() + " is not on this node, so its data cannot be"
                    + " taken in; restore this node's data directory or replace the node");
        }
        RegionState merged = current.toBuilder().setEndKey(right.getEndKey())
                .setEpoch(Math.max(current.getEpoch(), right.getEpoch()) + 1).addAbsorbed(right.getId())
                .addAllChildren(right.getChildrenList()).build();
        region.splits().widen(region.id(), Region.Shape.of(merged).range()); // before the store says so
        recordState(merged, index);
        LOG.info("region {}: merged region {} in at index {}: now {} epoch {}", region.id(), right.getId(), index,
                region.range(), merged.getEpoch());
        region.splits().retire(right.getId(), region, index);
        outcome(closure, true, merged, right);
    }

    /**
     * MERGE_ABORT, in the left region's log: at the entry's epoch, epoch + 1, so a commit decided at it is refused. A
     * region that is itself prepared to merge into another refuses every commit already, so it stays as it is.
     */
    void applyMergeAbort(WriteOp op, long index, SplitClosure closure) {
        RegionState current = region.state();
        boolean valid = current.getEpoch() == op.getEpoch() && current.getMergingInto() == 0;
        RegionState next = valid ? current.toBuilder().setEpoch(current.getEpoch() + 1).build() : current;
        recordState(next, index);
        boolean merged = next.getAbsorbedList().contains(op.getRegionId());
        LOG.info("region {}: merge of region {} decided at index {}: {}", region.id(), op.getRegionId(), index,
                merged ? "merged" : "not merged");
        outcome(closure, merged, next, null);
    }

    /** MERGE_ROLLBACK, in the right region's log: a prepared merge that did not happen; requests are taken again. */
    void applyMergeRollback(WriteOp op, long index, SplitClosure closure) {
        RegionState current = region.state();
        boolean valid = current.getMergingInto() != 0 && current.getMergePreparedAt() == op.getStep();
        RegionState next = !valid ? current : current.toBuilder().clearMergingInto().clearMergePreparedAt()
                .setEpoch(current.getEpoch() + 1).build();
        recordState(next, index);
        if (valid) {
            LOG.info("region {}: merge into region {} rolled back at index {}: taking requests again at epoch {}",
                    region.id(), current.getMergingInto(), index, next.getEpoch());
        }
        outcome(closure, valid, next, null);
    }
}
