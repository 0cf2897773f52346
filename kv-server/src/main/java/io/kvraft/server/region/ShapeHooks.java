package io.kvraft.server.region;

import io.kvraft.common.proto.KvProto.RegionState;
import io.kvraft.server.store.KeyRange;

import java.util.List;

/**
 * What the node does for a region whose state machine changes its shape (splits, merges, new voters, snapshots), or
 * whose group's storage failed.
 */
public interface ShapeHooks {
    /**
     * Called on the parent's state machine thread when it applies a split at {@code index} (also on replay):
     * makes sure the child is listed in the node's catalog; returns when that is durable. Its Raft group is
     * bootstrapped later, off this thread, when it starts ({@link #startChild}): from the store's data of its
     * range, which no one writes until the child runs, so it is the data at this index then as now.
     */
    void prepareChild(Region parent, RegionState child, long index);

    /**
     * Whether a region split off {@code parentId} is listed on this node and its group not bootstrapped yet. The
     * parent takes no snapshot meanwhile: one past the split would no longer hold the child's data, and with a
     * store that keeps nothing over a restart the child's bootstrap would then find its range empty.
     */
    boolean childBootstrapPending(int parentId);

    /**
     * Called while a snapshot of the parent taken after the split of {@code child} loads (this replica missed the
     * split): lists the child in the node's catalog, if it is not there, as a group that starts with no log and
     * no data and gets a snapshot from the child's leader. Returns when the catalog is durable.
     */
    void adoptChild(RegionState child, long createdAt);

    /** Starts the Raft group of {@code child} in the background, if it is not running. */
    void startChild(RegionState child);

    /** Takes a snapshot of {@code region} soon, off its state machine thread. */
    void snapshotSoon(Region region);

    /**
     * Called on the left region's state machine thread when it applies a merge: returns once this node's replica of
     * {@code right} has applied the prepare to merge into {@code leftId} (its data is then final in the store), or
     * false when this node has no replica of it at all.
     */
    boolean awaitMergeSource(RegionState right, int leftId);

    /** Records region {@code region}'s voters, changed by a configuration its log committed; durable on return. */
    void peersChanged(Region region, List<String> peers);

    /** Lists region {@code regionId} with a range that takes in {@code range}; returns when that is durable. */
    void widen(int regionId, KeyRange range);

    /**
     * Retires this node's replica of region {@code regionId}, merged into {@code into} at its log index
     * {@code index}, in the background: stops its group, removes its files and unlists it. With a store that keeps
     * no data over a restart, only once {@code into} has a snapshot at or past {@code index}, which holds the data.
     */
    void retire(int regionId, Region into, long index);

    /**
     * Called on the region's state machine thread when jraft stopped its group for its storage ({@code why}): a Raft
     * log that could not append or sync, a snapshot or Raft meta file that could not be written. The group serves no
     * more until the node restarts. (An entry that could not be applied stops the group too, but is not told here: it
     * fails alike on every replica, and a restart would only replay it.)
     */
    void storageFailed(Region region, String why);
}
