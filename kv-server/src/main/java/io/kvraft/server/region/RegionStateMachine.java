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
import io.kvraft.client.proto.KvProto.CoordRecord;
import io.kvraft.client.proto.KvProto.CoordResult;
import io.kvraft.client.proto.KvProto.RegionState;
import io.kvraft.client.proto.KvProto.WriteBatch;
import io.kvraft.client.proto.KvProto.WriteOp;
import io.kvraft.client.proto.KvProto.WriteOpType;
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
import java.util.stream.Stream;

/**
 * Applies a region's log entries to the node's store: each entry is a batch of writes, applied
 * atomically together with the entry's index. Runs on the region's jraft FSM thread.
 */
final class RegionStateMachine extends StateMachineAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(RegionStateMachine.class);
    /** Our files inside a jraft snapshot directory. */
    static final String SNAPSHOT_DIR = "kv";

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

    /** The region's state in a snapshot, beside {@value #SNAPSHOT_DIR}. */
    static final String STATE_FILE = "region-state";

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
    static RegionState storedState(KvStore store, int regionId) {
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
            if (batch.getOpsCount() == 1 && batch.getOps(0).getType() == WriteOpType.SPLIT) {
                if (index > storeIndex) { // else the store already holds it, and the node started the child at boot
                    applySplit(batch.getOps(0), index, done instanceof SplitClosure c ? c : null);
                    storeIndex = index;
                }
                raftIndex = index;
                if (done != null) {
                    done.run(Status.OK());
                }
                iter.next();
                continue;
            }
            boolean[] results = new boolean[batch.getOpsCount()];
            byte[][] previous = closure != null && closure.returnsValues ? new byte[batch.getOpsCount()][] : null;
            CoordResult[] coord = closure != null && closure.returnsCoord ? new CoordResult[batch.getOpsCount()] : null;
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
                region.metrics().applied(start);
                storeIndex = index;
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
                case GET_SEQUENCE, RESET_SEQUENCE, LOCK_ACQUIRE, LOCK_RENEW, LOCK_RELEASE -> {
                    byte[] stored = view.getSystem(key);
                    CoordRecord record = stored == null ? null : CoordRecord.parseFrom(stored);
                    Sequences.Outcome outcome = switch (op.getType()) {
                        case GET_SEQUENCE -> Sequences.take(record, op.getStep());
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

    /**
     * Per op, whether its request has a key the region no longer holds (null when every request is whole): a
     * split applied after the leader checked the request. Decided from the entry and the region's state at this
     * index only, so every replica skips the same requests.
     */
    private boolean[] outOfRange(WriteBatch batch) {
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
     * it, the region keeps [start, key) and a new region takes [key, end), both at epoch + 1. The child's Raft
     * group is made durable first (bootstrapped from the store's data at this index, listed in the node's
     * catalog), then both states are recorded with the index in one store write, then the child starts.
     */
    private void applySplit(WriteOp op, long index, SplitClosure closure) {
        RegionState current = region.state();
        byte[] key = op.getKey().toByteArray();
        boolean valid = current.getEpoch() == op.getEpoch() && region.range().splitsAt(key)
                && op.getRegionId() != 0 && op.getRegionId() != current.getId();
        StoreBatch writes = new StoreBatch(0);
        RegionState left = current;
        RegionState child = null;
        if (valid) {
            child = RegionState.newBuilder().setId(op.getRegionId()).setStartKey(op.getKey())
                    .setEndKey(current.getEndKey()).setEpoch(current.getEpoch() + 1).setCreatedAt(index)
                    .setParent(current.getId()).build();
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
        try {
            writeSnapshot(writer, store, region.state());
            LOG.info("region {}: snapshot saved, last entry applied {}", region.id(), replayedTo);
            region.metrics().snapshot(replayedTo);
            done.run(Status.OK());
        } catch (IOException | RuntimeException e) {
            LOG.error("region {}: snapshot save failed: {}", region.id(), e.toString());
            done.run(new Status(RaftError.EIO, "snapshot save failed: %s", e.getMessage()));
        }
    }

    /** Writes a region snapshot into {@code writer}: the store's data of the state's range, and the state. */
    static void writeSnapshot(SnapshotWriter writer, KvStore store, RegionState state) throws IOException {
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
    static RegionState readState(Path snapshotDir) throws IOException {
        Path file = snapshotDir.resolve(STATE_FILE);
        if (!Files.exists(file)) {
            return null;
        }
        return RegionState.parseFrom(Files.readAllBytes(file));
    }

    @Override
    public boolean onSnapshotLoad(SnapshotReader reader) {
        long index = reader.load().getLastIncludedIndex();
        // jraft never loads a snapshot below its own applied index (ESTALE), and the store is never behind
        // jraft. So a snapshot at or below storeIndex can only come from a persistent store that is ahead:
        // its data is the state after a later prefix of the same committed log, and the entries between the
        // snapshot and storeIndex are skipped on replay. Loading it would move the store back in time while
        // those entries are still skipped.
        if (index <= storeIndex) {
            LOG.info("region {}: store is at index {}, snapshot at {} not loaded", region.id(), storeIndex, index);
            region.metrics().snapshot(index);
            raftIndex = index;
            return true;
        }
        try {
            RegionState state = readState(Path.of(reader.getPath()));
            KeyRange range = state == null ? region.range() : Region.Shape.of(state).range();
            if (state != null) {
                for (RegionState child : state.getChildrenList()) {
                    region.splits().adoptChild(child, index); // listed before the store records the state naming it
                }
            }
            store.loadSnapshot(region.id(), index, range, Path.of(reader.getPath(), SNAPSHOT_DIR),
                    state == null ? null : state.toByteArray());
            if (state != null) {
                region.state(state);
                for (RegionState child : state.getChildrenList()) {
                    region.splits().startChild(child);
                }
            }
            storeIndex = index;
            raftIndex = index;
            LOG.info("region {}: snapshot loaded at index {}", region.id(), index);
            region.metrics().snapshot(index);
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.error("region {}: snapshot at index {} refused: {}", region.id(), index, e.getMessage());
            return false;
        }
    }

    @Override
    public void onLeaderStart(long term) {
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
