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
import io.kvraft.common.WriteKind;
import io.kvraft.common.proto.KvProto.CoordResult;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.RegionState;
import io.kvraft.common.proto.KvProto.WriteBatch;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.server.fs.DurableFiles;
import io.kvraft.server.coord.Locks;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.StoreBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
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
    private final ShapeChanges shapes;
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
        this.shapes = new ShapeChanges(region, store);
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
            UndecidedWrites.Write adopted = region.writes().undecided().adopt(iter.getTerm(), done == null ? batch.getProposalId() : 0);
            if (adopted != null && index <= storeIndex) { // never expected: the waiting writes are of this process
                adopted.answer(Errors.of(ErrorCode.TIMEOUT,
                        "region " + region.id() + ": outcome unknown: its entry was replayed, not applied"));
                adopted = null;
            }
            boolean applied = batch.getOpsCount() == 1 && ShapeChanges.changesShape(batch.getOps(0).getType())
                    ? applyShapeChange(iter, batch.getOps(0), index, done)
                    : applyData(iter, batch, index, done, closure, adopted);
            if (!applied) {
                return; // the state machine stopped: setErrorAndRollback
            }
            iter.next();
        }
    }

    /** A SPLIT, merge step or CONF_CHANGED entry; false when it could not be applied (the state machine stops). */
    private boolean applyShapeChange(Iterator iter, WriteOp op, long index, Closure done) {
        if (index > storeIndex) { // else the store already holds it, and the node started the child at boot
            try {
                shapes.apply(op, index, done instanceof SplitClosure c ? c : null);
            } catch (InvalidProtocolBufferException | ShapeChanges.MergeSourceMissing e) {
                iter.setErrorAndRollback(1, new Status(RaftError.ESTATEMACHINE,
                        "region %d: cannot apply %s at index %d: %s", region.id(), op.getType(), index, e.getMessage()));
                return false;
            } catch (UncheckedIOException e) {
                storeFailed(iter, index, e);
                return false;
            }
            storeIndex = index;
        }
        raftIndex = index;
        if (done != null) {
            done.run(Status.OK());
        }
        return true;
    }

    /**
     * The store (or a region file beside it) could not write the entry: this node's disk, not the entry, so the node
     * stops as for a Raft log it cannot write (kv-server exits with code 5), and restarted it applies the entry again
     * from its log. The group stops too, the entry not counted applied.
     */
    private void storeFailed(Iterator iter, long index, UncheckedIOException e) {
        String why = "the store cannot write region " + region.id() + "'s entry at index " + index + ": " + e.getMessage();
        region.splits().storageFailed(region, why);
        iter.setErrorAndRollback(1, new Status(RaftError.EIO, "region %d: %s", region.id(), why));
    }

    /**
     * An entry of data ops (client writes, or a backup point) applied to the store with its index, and its writes
     * answered; false when it could not be applied (the state machine stops).
     */
    private boolean applyData(Iterator iter, WriteBatch batch, long index, Closure done, BatchClosure closure,
                              UndecidedWrites.Write adopted) {
        // an entry this node proposed as leader whose failed closure has not come to wait for it yet: keep its results
        boolean early = done == null
                && (adopted != null || region.writes().undecided().proposedHere(iter.getTerm(), batch.getProposalId()));
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
                return false;
            }
            try {
                store.apply(region.id(), index, writes);
            } catch (UncheckedIOException e) {
                storeFailed(iter, index, e);
                return false;
            }
            region.timings().applied(start);
            storeIndex = index;
            if (early) {
                UndecidedWrites.Early applied = new UndecidedWrites.Early(results, previous, coord, outOfRange);
                if (adopted != null) {
                    adopted.applied(applied); // jraft failed its closure when the leadership ended
                } else {
                    region.writes().undecided().appliedEarly(iter.getTerm(), batch.getProposalId(), applied);
                }
            }
        }
        // else: replay of an entry a persistent store already holds; applying it again could change the
        // outcome of a compare-and-put, so it is skipped. Only entries of an earlier run get here, and they
        // have no closure (closures exist only for entries proposed by this process).
        raftIndex = index;
        if (done instanceof BackupPoint point) {
            capture(point, index);
        }
        if (closure != null) {
            closure.results = results;
            closure.previous = previous;
            closure.coord = coord;
            closure.run(Status.OK());
        } else if (done != null) {
            done.run(Status.OK());
        }
        return true;
    }

    /** A backup's capture at a BACKUP_POINT: no write to the region runs on this thread, so it is the state at {@code index}. */
    private void capture(BackupPoint point, long index) {
        try {
            point.capture = store.capture(region.id(), region.range());
            point.index = index;
            point.term = term;
        } catch (RuntimeException e) {
            point.captureFailure = e;
        }
    }

    /**
     * Turns the ops into plain puts, deletes and range deletes, each as its {@link WriteOps} row says; reads the store
     * (through the batch's own earlier writes) only for ops whose outcome depends on the current value. Fills
     * {@code results} per op and, when not null, {@code previous} with the value each op found and {@code coord} with
     * each sequence or lock op's answer.
     */
    private StoreBatch toStoreBatch(WriteBatch batch, Locks.Clock clock, boolean[] results, byte[][] previous,
                                    CoordResult[] coord, boolean[] outOfRange) throws InvalidProtocolBufferException {
        EntryApply entry = new EntryApply(store, batch.getOpsCount(), region.range(), clock, results, previous, coord);
        for (int i = 0; i < batch.getOpsCount(); ) {
            if (outOfRange != null && outOfRange[i]) {
                i++; // its request is answered KEY_OUT_OF_RANGE, on the leader; no replica applies any of it
                continue;
            }
            WriteOpType type = batch.getOps(i).getType();
            WriteOps op = WriteOps.of(type);
            if (op == null) {
                throw new IllegalStateException("unknown op type " + type);
            }
            i += op.apply(batch, i, entry);
        }
        return entry.batch();
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
                WriteOps data = WriteOps.of(op.getType());
                inside = data == null ? range.contains(op.getKey()) : data.inside(op, range);
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

    /** True when the batch has a sequence or lock op, whose answer is a {@link CoordResult}. */
    static boolean returnsCoord(WriteBatch batch) {
        for (int i = 0; i < batch.getOpsCount(); i++) {
            WriteKind kind = WriteKind.of(batch.getOps(i).getType());
            if (kind != null && kind.answer() == WriteKind.Answer.COORD) {
                return true;
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
            // EAGAIN, not EIO: jraft stops a group whose snapshot failed with EIO until the node restarts, yet the log
            // and the last snapshot are intact (a full disk, say), and the next interval tries again
            LOG.error("region {}: snapshot save failed (the next interval tries again): {}", region.id(), e.toString());
            done.run(new Status(RaftError.EAGAIN, "snapshot save failed: %s", e.getMessage()));
        }
    }

    /** Writes a region snapshot into {@code writer}: the store's data of the state's range, and the state. */
    public static void writeSnapshot(SnapshotWriter writer, KvStore store, RegionState state) throws IOException {
        Path dir = Path.of(writer.getPath(), SNAPSHOT_DIR);
        DurableFiles.createDirectories(dir);
        store.writeSnapshot(Region.Shape.of(state).range(), dir);
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                // each file's CRC32C in the snapshot meta: a flipped byte fails the load naming the file
                if (!writer.addFile(SNAPSHOT_DIR + File.separator + f.getFileName(), SnapshotChecksums.meta(f))) {
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
        if (!writer.addFile(STATE_FILE, SnapshotChecksums.meta(stateFile))) {
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
        region.writes().undecided().giveUp("a snapshot replaced this replica's log"); // their entries are not applied one by one
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
            SnapshotChecksums.verify(reader); // before anything of it is read: a damaged file names itself
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
        region.writes().undecided().leading(term);
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
        LOG.error("region {}: state machine stopped: {} ({})", region.id(), e.getStatus(), e.getType());
        if (e.getType() != com.alipay.sofa.jraft.entity.EnumOutter.ErrorType.ERROR_TYPE_STATE_MACHINE) {
            region.splits().storageFailed(region, e.getType() + ": " + e.getStatus());
        }
    }
}
