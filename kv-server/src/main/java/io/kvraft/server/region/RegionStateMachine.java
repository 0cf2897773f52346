package io.kvraft.server.region;

import com.alipay.sofa.jraft.Iterator;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.core.StateMachineAdapter;
import com.alipay.sofa.jraft.entity.LeaderChangeContext;
import com.alipay.sofa.jraft.error.RaftError;
import com.alipay.sofa.jraft.error.RaftException;
import com.alipay.sofa.jraft.storage.snapshot.SnapshotReader;
import com.alipay.sofa.jraft.storage.snapshot.SnapshotWriter;
import com.alipay.sofa.jraft.Closure;
import com.google.protobuf.InvalidProtocolBufferException;
import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.common.proto.KvProto.CoordResult;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.RegionState;
import io.kvraft.common.proto.KvProto.WriteBatch;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.server.coord.Locks;
import io.kvraft.server.coord.Sequences;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.StoreBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/**
 * Applies a region's log entries to the node's store: each entry is a batch of writes, applied
 * atomically together with the entry's index. Runs on the region's jraft FSM thread.
 */
public final class RegionStateMachine extends StateMachineAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(RegionStateMachine.class);
    /** Our files inside a jraft snapshot directory. */
    public static final String SNAPSHOT_DIR = "kv";

    private final Region region;
    private final KvStore store;
    private volatile long term;
    /**
     * The index the store's data for this region corresponds to. A persistent store starts at the index
     * it recorded last (atomically with the data), which may be ahead of what jraft replays: entries up
     * to it are already in the store and are skipped, and a snapshot at or below it is not loaded.
     */
    private volatile long storeIndex;
    /** The last data entry jraft handed us, or the snapshot it loaded: where jraft's replay is. */
    private volatile long raftIndex;
    /** The index of the last snapshot this replica saved or loaded. */
    private volatile long snapshotIndex;

    /** The region's state in a snapshot, beside {@value #SNAPSHOT_DIR}. */
    public static final String STATE_FILE = "region-state";

    RegionStateMachine(Region region, KvStore store) {
        this.region = region;
        this.store = store;
        this.storeIndex = store.appliedIndex(region.id());
        RegionState state = storedState(store, region.id());
        if (state != null) { // a persistent store keeps the state with the data: it is the state at storeIndex
            region.state(state);
        }
    }

    /** The region's state as the store recorded it with its applied index, or null when it recorded none. */
    public static RegionState storedState(KvStore store, int regionId) {
        byte[] state = store.regionState(regionId);
        if (state == null) {
            return null;
        }
        try {
            return RegionState.parseFrom(state);
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalStateException("region " + regionId + ": its state in the store is undecodable: "
                    + e.getMessage(), e);
        }
    }

    long term() {
        return term;
    }

    /** The index of the last snapshot this replica saved or loaded (0: none since the node started). */
    long snapshotIndex() {
        return snapshotIndex;
    }

    /** The index the region's data in the store corresponds to. */
    long appliedIndex() {
        return storeIndex;
    }

    @Override
    public void onApply(Iterator iter) {
        while (iter.hasNext()) {
            long index = iter.getIndex();
            Closure done = iter.done();
            BatchClosure closure = done instanceof BatchClosure b ? b : null;
            WriteBatch batch;
            if (closure != null) {
                batch = closure.batch;
            } else {
                try {
                    batch = WriteBatch.parseFrom(iter.getData());
                } catch (InvalidProtocolBufferException e) {
                    // a bad entry must stop the state machine, never be skipped
                    iter.setErrorAndRollback(1, new Status(RaftError.ESTATEMACHINE,
                            "region %d: undecodable log entry at index %d: %s", region.id(), index, e.getMessage()));
                    return;
                }
            }
            // writes this node proposed as leader, whose closures jraft failed when the leadership ended: this entry
            // may be one of them (only when it has no closure of its own), and its term may show others were lost
            UndecidedWrites.Write adopted = region.undecided().adopt(iter.getTerm(), done == null ? batch.getProposalId() : 0);
            if (adopted != null && index <= storeIndex) { // never expected: the waiting writes are of this process
                adopted.answer(Errors.of(ErrorCode.TIMEOUT,
                        "region " + region.id() + ": outcome unknown: its entry was replayed, not applied"));
                adopted = null;
            }
            if (batch.getOpsCount() == 1 && changesShape(batch.getOps(0).getType())) {
                if (index > storeIndex) { // else the store already holds it, and the node started the child at boot
                    SplitClosure shapeDone = done instanceof SplitClosure c ? c : null;
                    WriteOp op = batch.getOps(0);
                    try {
                        switch (op.getType()) {
                            case SPLIT -> applySplit(op, index, shapeDone);
                            case PREPARE_MERGE -> applyPrepareMerge(op, index, shapeDone);
                            case COMMIT_MERGE -> applyCommitMerge(op, index, shapeDone);
                            case MERGE_ABORT -> applyMergeAbort(op, index, shapeDone);
                            case CONF_CHANGED -> applyConfChanged(op, index, shapeDone);
                            default -> applyMergeRollback(op, index, shapeDone);
                        }
                    } catch (InvalidProtocolBufferException | MergeSourceMissing e) {
                        iter.setErrorAndRollback(1, new Status(RaftError.ESTATEMACHINE,
                                "region %d: cannot apply %s at index %d: %s", region.id(), op.getType(), index, e.getMessage()));
                        return;
                    }
                    storeIndex = index;
                }
                raftIndex = index;
                if (done != null) {
                    done.run(Status.OK());
                }
                iter.next();
                continue;
            }
            // an entry this node proposed as leader whose failed closure has not come to wait for it yet: keep its results
            boolean early = done == null
                    && (adopted != null || region.undecided().proposedHere(iter.getTerm(), batch.getProposalId()));
            boolean[] results = new boolean[batch.getOpsCount()];
            byte[][] previous = early || closure != null && closure.returnsValues ? new byte[batch.getOpsCount()][] : null;
            CoordResult[] coord = early || closure != null && closure.returnsCoord ? new CoordResult[batch.getOpsCount()] : null;
            if (index > storeIndex) {
                long start = System.nanoTime();
                StoreBatch writes;
                boolean[] outOfRange = outOfRange(batch);
                if (closure != null) {
                    closure.outOfRange = outOfRange;
                }
                try {
                    writes = toStoreBatch(batch, clockOf(region.id(), batch, iter.getTerm()), results, previous, coord, outOfRange);
                } catch (InvalidProtocolBufferException e) {
                    iter.setErrorAndRollback(1, new Status(RaftError.ESTATEMACHINE,
                            "region %d: undecodable system record at index %d: %s", region.id(), index, e.getMessage()));
                    return;
                }
                store.apply(region.id(), index, writes);
                region.timings().applied(start);
                storeIndex = index;
                if (early) {
                    UndecidedWrites.Early applied = new UndecidedWrites.Early(results, previous, coord, outOfRange);
                    if (adopted != null) {
                        adopted.applied(applied); // jraft failed its closure when the leadership ended
                    } else {
                        region.undecided().appliedEarly(iter.getTerm(), batch.getProposalId(), applied);
                    }
                }
            }
            // else: replay of an entry a persistent store already holds; applying it again could change the
            // outcome of a compare-and-put, so it is skipped. Only entries of an earlier run get here, and they
            // have no closure (closures exist only for entries proposed by this process).
            raftIndex = index;
            if (done instanceof BackupPoint point) {
                // on this thread no write to the region runs, so the capture is the state at exactly this index
                try {
                    point.capture = store.capture(region.id(), region.range());
                    point.index = index;
                    point.term = term;
                } catch (RuntimeException e) {
                    point.captureFailure = e;
                }
            }
            if (closure != null) {
                closure.results = results;
                closure.previous = previous;
                closure.coord = coord;
                closure.run(Status.OK());
            } else if (done != null) {
                done.run(Status.OK());
            }
            iter.next();
        }
    }

    /**
     * Turns the ops into plain puts, deletes and range deletes; reads the store (through the batch's own
     * earlier writes) only for ops whose outcome depends on the current value. Fills {@code results} per op
     * and, when not null, {@code previous} with the value each op found.
     */
    private StoreBatch toStoreBatch(WriteBatch batch, Locks.Clock clock, boolean[] results, byte[][] previous,
                                    CoordResult[] coord, boolean[] outOfRange) throws InvalidProtocolBufferException {
        StoreBatch out = new StoreBatch(batch.getOpsCount());
        BatchView view = null; // created on the first op that reads: plain puts need no reads
        for (int i = 0; i < batch.getOpsCount(); i++) {
            if (outOfRange != null && outOfRange[i]) {
                continue; // its request is answered KEY_OUT_OF_RANGE, on the leader; no replica applies any of it
            }
            WriteOp op = batch.getOps(i);
            byte[] key = op.getKey().toByteArray();
            if (op.getType() == WriteOpType.PUT) {
                byte[] value = op.getValue().toByteArray();
                out.put(key, value);
                results[i] = true;
                if (view != null) {
                    view.put(key, value);
                }
                continue;
            }
            if (view == null) {
                view = new BatchView(store, out);
            }
            switch (op.getType()) {
                case DELETE -> {
                    results[i] = view.get(key) != null;
                    out.delete(key);
                    view.put(key, null);
                }
                case COMPARE_AND_PUT -> {
                    int group = Math.max(1, op.getGroupSize());
                    boolean all = i + group <= batch.getOpsCount();
                    for (int j = i; all && j < i + group; j++) {
                        all = matches(batch.getOps(j), view);
                    }
                    for (int j = i; j < Math.min(i + group, batch.getOpsCount()); j++) {
                        results[j] = all;
                        if (all) {
                            WriteOp member = batch.getOps(j);
                            byte[] k = member.getKey().toByteArray();
                            byte[] value = member.getValue().toByteArray();
                            out.put(k, value);
                            view.put(k, value);
                        }
                    }
                    i += group - 1;
                }
                case GET_AND_PUT -> {
                    byte[] value = op.getValue().toByteArray();
                    setPrevious(previous, i, view.get(key));
                    out.put(key, value);
                    view.put(key, value);
                    results[i] = true;
                }
                case PUT_IF_ABSENT -> {
                    byte[] current = view.get(key);
                    setPrevious(previous, i, current);
                    results[i] = current == null;
                    if (current == null) {
                        byte[] value = op.getValue().toByteArray();
                        out.put(key, value);
                        view.put(key, value);
                    }
                }
                case BACKUP_POINT -> results[i] = true; // no data: the leader that proposed it captures the store
                case DELETE_RANGE -> {
                    KeyRange range = new KeyRange(key, op.getEndKey().toByteArray());
                    // checked on the leader before proposing; checked again here, where every replica decides alike
                    results[i] = region.range().covers(range);
                    if (results[i]) {
                        out.deleteRange(range.start(), range.end());
                        view.deleteRange(range);
                    }
                }
                case GET_SEQUENCE, RESET_SEQUENCE, LOCK_ACQUIRE, LOCK_RENEW, LOCK_RELEASE, RESTORE_COORD -> {
                    CoordRecord given = null;
                    if (op.getType() == WriteOpType.RESTORE_COORD) {
                        given = restoredRecord(op);
                        if (given == null) {
                            continue; // refused on the leader; never expected here, and changes nothing on any replica
                        }
                    }
                    byte[] stored = view.getSystem(key);
                    CoordRecord record = stored == null ? null : CoordRecord.parseFrom(stored);
                    Sequences.Outcome outcome = switch (op.getType()) {
                        case GET_SEQUENCE -> Sequences.take(record, op.getStep());
                        case RESTORE_COORD -> Sequences.restore(record, given);
                        case RESET_SEQUENCE -> Sequences.reset(record);
                        case LOCK_ACQUIRE -> Locks.acquire(record, op.getHolder(), op.getLeaseMs(), clock);
                        case LOCK_RENEW -> Locks.renew(record, op.getHolder(), op.getToken(), op.getLeaseMs(), clock);
                        default -> Locks.release(record, op.getHolder(), op.getToken(), clock);
                    };
                    results[i] = outcome.succeeded();
                    if (coord != null) {
                        coord[i] = outcome.result();
                    }
                    CoordRecord next = Sequences.orNull(outcome.record());
                    if (next == null ? stored != null : !next.equals(record)) {
                        byte[] bytes = next == null ? null : next.toByteArray();
                        out.putSystem(key, bytes);
                        view.putSystem(key, bytes);
                    }
                }
                default -> throw new IllegalStateException("unknown op type " + op.getType());
            }
        }
        return out;
    }

    /** The CoordRecord a RESTORE_COORD carries, or null when its value is none (the leader refuses such ops). */
    private static CoordRecord restoredRecord(WriteOp op) {
        try {
            return CoordRecord.parseFrom(op.getValue());
        } catch (InvalidProtocolBufferException e) {
            return null;
        }
    }

    /**
     * Per op, whether its request has a key the region no longer holds (null when every request is whole): a
     * split applied after the leader checked the request. Decided from the entry and the region's state at this
     * index only, so every replica skips the same requests.
     */
    private boolean[] outOfRange(WriteBatch batch) {
        if (region.state().getMergingInto() != 0) { // its data is final: the merge carries it over as it is
            boolean[] all = new boolean[batch.getOpsCount()];
            Arrays.fill(all, true);
            return all;
        }
        KeyRange range = region.range();
        if (range.start().length == 0 && range.end().length == 0) {
            return null; // the whole key space: nothing can be outside it
        }
        boolean[] refused = null;
        int count = batch.getOpsCount();
        int requests = Math.max(1, batch.getRequestSizesCount());
        int at = 0;
        for (int r = 0; r < requests && at < count; r++) {
            int size = batch.getRequestSizesCount() == 0 ? count : Math.min(batch.getRequestSizes(r), count - at);
            boolean inside = true;
            for (int i = at; inside && i < at + size; i++) {
                WriteOp op = batch.getOps(i);
                inside = switch (op.getType()) {
                    case BACKUP_POINT -> true;
                    case DELETE_RANGE -> range.covers(new KeyRange(op.getKey().toByteArray(), op.getEndKey().toByteArray()));
                    default -> range.contains(op.getKey());
                };
            }
            if (!inside) {
                if (refused == null) {
                    refused = new boolean[count];
                }
                java.util.Arrays.fill(refused, at, at + size, true);
            }
            at += size;
        }
        return refused;
    }

    /**
     * Applies a SPLIT at {@code index}: when the region is at the split's epoch and the key lies strictly inside
     * it, the region keeps [start, key) and a new region takes [key, end), both at epoch + 1. The child is listed
     * in the node's catalog first (durably), then both states are recorded with the index in one store write, then
     * the child's group is bootstrapped and started off this thread (the parent's apply does not wait for it).
     */
    private void applySplit(WriteOp op, long index, SplitClosure closure) {
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
    private void applyConfChanged(WriteOp op, long index, SplitClosure closure) {
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
    private void applyPrepareMerge(WriteOp op, long index, SplitClosure closure) {
        RegionState current = region.state();
        boolean valid = current.getEpoch() == op.getEpoch() && current.getMergingInto() == 0 && op.getRegionId() != 0
                && op.getRegionId() != current.getId();
        RegionState next = !valid ? current : current.toBuilder().setEpoch(current.getEpoch() + 1)
                .setMergingInto(op.getRegionId()).setMergePreparedAt(index).build();
        recordState(next, index);
        if (valid) {
            LOG.info("region {}: merge into region {} prepared at index {}, epoch {}: no more requests", region.id(),
                    op.getRegionId(), index, next.getEpoch());
            if (!durableStore(store)) {
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
    private void applyCommitMerge(WriteOp op, long index, SplitClosure closure)
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
    private void applyMergeAbort(WriteOp op, long index, SplitClosure closure) {
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
    private void applyMergeRollback(WriteOp op, long index, SplitClosure closure) {
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

    /** Whether the store keeps its data over a restart by itself (else a region's data lives in its snapshots). */
    public static boolean durableStore(KvStore store) {
        return !io.kvraft.server.store.MemoryStore.ENGINE.equals(store.engine());
    }

    /**
     * Whether this replica's data of a region prepared to merge is final and will outlive a restart: applied past
     * the prepare, and for a store that keeps nothing over a restart, in a snapshot past it too.
     */
    boolean mergeReady() {
        RegionState state = region.state();
        long prepared = state.getMergePreparedAt();
        return state.getMergingInto() != 0 && storeIndex >= prepared
                && (durableStore(store) || snapshotIndex >= prepared);
    }

    private static boolean matches(WriteOp cas, BatchView view) {
        byte[] current = view.get(cas.getKey().toByteArray());
        return cas.getExpectAbsent() ? current == null
                : current != null && Arrays.equals(current, cas.getExpect().toByteArray());
    }

    private static void setPrevious(byte[][] previous, int i, byte[] value) {
        if (previous != null) {
            previous[i] = value;
        }
    }

    /** True when the batch has a sequence or lock op, whose answer is a {@link CoordResult}. */
    static boolean returnsCoord(WriteBatch batch) {
        for (int i = 0; i < batch.getOpsCount(); i++) {
            switch (batch.getOps(i).getType()) {
                case GET_SEQUENCE, RESET_SEQUENCE, LOCK_ACQUIRE, LOCK_RENEW, LOCK_RELEASE -> {
                    return true;
                }
                default -> { }
            }
        }
        return false;
    }

    /**
     * The entry's time, from its leader's stamps only. The term start counts only when the leader had recorded
     * the start of the entry's own term when it proposed; otherwise the entry's own time stands in for it, which
     * is later, so leases carried over from earlier terms only get longer.
     */
    static Locks.Clock clockOf(int regionId, WriteBatch batch, long entryTerm) {
        long start = batch.getLeaderTerm() == entryTerm ? batch.getTermStartMs() : batch.getLeaseClockMs();
        return new Locks.Clock(regionId, entryTerm, batch.getLeaseClockMs(), start);
    }

    @Override
    public void onSnapshotSave(SnapshotWriter writer, Closure done) {
        // jraft labels the snapshot with its own applied index. While it is still replaying entries that the
        // persistent store already holds, the store is ahead of that label: a follower installing such a
        // snapshot would apply those entries a second time on top of it, which is wrong for compare-and-put.
        // Refuse (EBUSY; EIO would stop the group); the next snapshot, after the replay, goes through.
        // (raftIndex counts data entries only, but storeIndex is always a data entry's index or a snapshot's
        // that jraft loaded, so storeIndex > raftIndex exactly while the replay has not reached it.)
        long replayedTo = raftIndex;
        if (storeIndex > replayedTo) {
            LOG.info("region {}: snapshot skipped, the store is at index {} and the log replay at {}",
                    region.id(), storeIndex, replayedTo);
            done.run(new Status(RaftError.EBUSY, "region %d: store at index %d is ahead of the replay at %d",
                    region.id(), storeIndex, replayedTo));
            return;
        }
        if (region.splits().childBootstrapPending(region.id())) {
            LOG.info("region {}: snapshot skipped, a region split off it has not made its group on this node yet",
                    region.id());
            done.run(new Status(RaftError.EBUSY, "region %d: a region split off it is not bootstrapped yet", region.id()));
            return;
        }
        try {
            writeSnapshot(writer, store, region.state());
            LOG.info("region {}: snapshot saved, last entry applied {}", region.id(), replayedTo);
            snapshotIndex = Math.max(snapshotIndex, replayedTo);
            region.timings().snapshot(replayedTo);
            done.run(Status.OK());
        } catch (IOException | RuntimeException e) {
            LOG.error("region {}: snapshot save failed: {}", region.id(), e.toString());
            done.run(new Status(RaftError.EIO, "snapshot save failed: %s", e.getMessage()));
        }
    }

    /** Writes a region snapshot into {@code writer}: the store's data of the state's range, and the state. */
    public static void writeSnapshot(SnapshotWriter writer, KvStore store, RegionState state) throws IOException {
        Path dir = Path.of(writer.getPath(), SNAPSHOT_DIR);
        Files.createDirectories(dir);
        store.writeSnapshot(Region.Shape.of(state).range(), dir);
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                if (!writer.addFile(SNAPSHOT_DIR + File.separator + f.getFileName())) {
                    throw new IOException("snapshot writer refused " + f);
                }
            }
        }
        Path stateFile = Path.of(writer.getPath(), STATE_FILE);
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(stateFile,
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.TRUNCATE_EXISTING,
                java.nio.file.StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.wrap(state.toByteArray()));
            ch.force(true);
        }
        if (!writer.addFile(STATE_FILE)) {
            throw new IOException("snapshot writer refused " + stateFile);
        }
    }

    /** The region state in a snapshot directory, or null for a snapshot written before regions could split. */
    public static RegionState readState(Path snapshotDir) throws IOException {
        Path file = snapshotDir.resolve(STATE_FILE);
        if (!Files.exists(file)) {
            return null;
        }
        return RegionState.parseFrom(Files.readAllBytes(file));
    }

    @Override
    public boolean onSnapshotLoad(SnapshotReader reader) {
        long index = reader.load().getLastIncludedIndex();
        // the group's voters at the snapshot: later configurations come through onConfigurationCommitted, in log order
        region.peersCommitted(reader.load().getPeersList().stream()
                .map(p -> com.alipay.sofa.jraft.entity.PeerId.parsePeer(p).getEndpoint().toString()).toList());
        region.undecided().giveUp("a snapshot replaced this replica's log"); // their entries are not applied one by one
        // jraft never loads a snapshot below its own applied index (ESTALE), and the store is never behind
        // jraft. So a snapshot at or below storeIndex can only come from a persistent store that is ahead:
        // its data is the state after a later prefix of the same committed log, and the entries between the
        // snapshot and storeIndex are skipped on replay. Loading it would move the store back in time while
        // those entries are still skipped.
        if (index <= storeIndex) {
            LOG.info("region {}: store is at index {}, snapshot at {} not loaded", region.id(), storeIndex, index);
            region.timings().snapshot(index);
            raftIndex = index;
            snapshotIndex = Math.max(snapshotIndex, index);
            return true;
        }
        try {
            RegionState state = readState(Path.of(reader.getPath()));
            KeyRange range = state == null ? region.range() : Region.Shape.of(state).range();
            if (state != null) {
                for (RegionState child : state.getChildrenList()) {
                    if (!state.getAbsorbedList().contains(child.getId())) { // else merged back in since
                        region.splits().adoptChild(child, index); // listed before the store records the state naming it
                    }
                }
            }
            store.loadSnapshot(region.id(), index, range, Path.of(reader.getPath(), SNAPSHOT_DIR),
                    state == null ? null : state.toByteArray());
            if (state != null) {
                region.state(state);
                for (RegionState child : state.getChildrenList()) {
                    if (!state.getAbsorbedList().contains(child.getId())) {
                        region.splits().startChild(child);
                    }
                }
                for (int absorbed : state.getAbsorbedList()) { // merged in before this snapshot: its data is in it
                    region.splits().retire(absorbed, region, index);
                }
            }
            storeIndex = index;
            raftIndex = index;
            snapshotIndex = Math.max(snapshotIndex, index);
            LOG.info("region {}: snapshot loaded at index {}", region.id(), index);
            region.timings().snapshot(index);
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.error("region {}: snapshot at index {} refused: {}", region.id(), index, e.getMessage());
            return false;
        }
    }

    @Override
    public void onConfigurationCommitted(com.alipay.sofa.jraft.conf.Configuration conf) {
        region.peersCommitted(endpoints(conf.getPeers()));
    }

    private static List<String> endpoints(java.util.Collection<com.alipay.sofa.jraft.entity.PeerId> peers) {
        return peers.stream().map(p -> p.getEndpoint().toString()).toList();
    }

    @Override
    public void onLeaderStart(long term) {
        region.undecided().leading(term);
        region.onLeaderStart(term);
        this.term = term;
        LOG.info("region {}: leader now, term {}", region.id(), term);
        region.onLeadershipChange();
    }

    @Override
    public void onLeaderStop(Status status) {
        LOG.info("region {}: no longer leader: {}", region.id(), status.getErrorMsg());
        region.onLeadershipChange();
    }

    @Override
    public void onStartFollowing(LeaderChangeContext ctx) {
        this.term = ctx.getTerm();
        LOG.info("region {}: following {}, term {}", region.id(), ctx.getLeaderId().getEndpoint(), ctx.getTerm());
        region.onLeadershipChange();
    }

    @Override
    public void onError(RaftException e) {
        LOG.error("region {}: state machine stopped: {}", region.id(), e.getStatus());
    }
}
