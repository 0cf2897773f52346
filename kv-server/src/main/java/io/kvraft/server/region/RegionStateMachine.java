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

    RegionStateMachine(Region region, KvStore store) {
        this.region = region;
        this.store = store;
        this.storeIndex = store.appliedIndex(region.id());
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
            boolean[] results = new boolean[batch.getOpsCount()];
            byte[][] previous = closure != null && closure.returnsValues ? new byte[batch.getOpsCount()][] : null;
            CoordResult[] coord = closure != null && closure.returnsCoord ? new CoordResult[batch.getOpsCount()] : null;
            if (index > storeIndex) {
                long start = System.nanoTime();
                StoreBatch writes;
                try {
                    writes = toStoreBatch(batch, clockOf(batch, iter.getTerm()), results, previous, coord);
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
                                    CoordResult[] coord) throws InvalidProtocolBufferException {
        StoreBatch out = new StoreBatch(batch.getOpsCount());
        BatchView view = null; // created on the first op that reads: plain puts need no reads
        for (int i = 0; i < batch.getOpsCount(); i++) {
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
    static Locks.Clock clockOf(WriteBatch batch, long entryTerm) {
        long start = batch.getLeaderTerm() == entryTerm ? batch.getTermStartMs() : batch.getLeaseClockMs();
        return new Locks.Clock(entryTerm, batch.getLeaseClockMs(), start);
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
        Path dir = Path.of(writer.getPath(), SNAPSHOT_DIR);
        try {
            Files.createDirectories(dir);
            store.writeSnapshot(region.range(), dir);
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : (Iterable<Path>) files::iterator) {
                    if (!writer.addFile(SNAPSHOT_DIR + File.separator + f.getFileName())) {
                        throw new IOException("snapshot writer refused " + f);
                    }
                }
            }
            LOG.info("region {}: snapshot saved, last entry applied {}", region.id(), replayedTo);
            region.metrics().snapshot(replayedTo);
            done.run(Status.OK());
        } catch (IOException | RuntimeException e) {
            LOG.error("region {}: snapshot save failed: {}", region.id(), e.toString());
            done.run(new Status(RaftError.EIO, "snapshot save failed: %s", e.getMessage()));
        }
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
            store.loadSnapshot(region.id(), index, region.range(), Path.of(reader.getPath(), SNAPSHOT_DIR));
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
