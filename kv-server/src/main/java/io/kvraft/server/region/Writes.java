package io.kvraft.server.region;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.Task;
import com.alipay.sofa.jraft.error.RaftError;
import com.google.protobuf.ByteString;
import io.kvraft.common.Coalescer;
import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.WriteBatch;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.coord.Locks;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * A region leader's write path: validated client writes coalesce into one log entry each time the previous one is
 * done (at most {@code raft.maxProposalsInflight} at once), stamped with the lease clock; entries that change the
 * region's shape or mark a backup point go alone. Writes whose leader stepped down before their entry committed wait
 * for their fate in the log ({@link UndecidedWrites}).
 */
public final class Writes {

    private final Region region;
    private final int maxValueBytes;

    private final Coalescer<WriteProposal> proposer;
    /** Writes whose leader stepped down before their entry committed, waiting for its fate in the log. */
    private final UndecidedWrites undecided;
    /** Names this node's entries within a term it leads (see {@link UndecidedWrites}). */
    private final AtomicLong proposalIds = new AtomicLong();
    /** The lease clock: monotonic ms of this node, stamped into every entry it proposes as leader. */
    private final LongSupplier leaseClockMs = () -> System.nanoTime() / 1_000_000L;
    /** The term this node last began to lead and when, on the lease clock: one value, swapped whole. */
    private volatile TermStart termStart = new TermStart(0, 0);

    /** When this node's leadership of a term began, on its lease clock. */
    record TermStart(long term, long startMs) {
    }

    /** @param maxValueBytes the node's limits.maxValueBytes, stamped into every entry (appends are held to it) */
    Writes(Region region, RaftConfig raft, int maxValueBytes, ScheduledExecutorService timer) {
        this.region = region;
        this.maxValueBytes = maxValueBytes;
        this.proposer = new Coalescer<>(raft.maxProposalsInflight(), raft.maxRequestsPerEntry(), 64 << 20,
                Integer.MAX_VALUE, WriteProposal::bytes, this::propose);
        this.undecided = new UndecidedWrites(region.id(), timer, raft.electionTimeoutMs(),
                () -> region.errorOf(new Status(RaftError.EPERM, "the leader stepped down before the write's entry"
                        + " committed; nothing of it was written")),
                why -> Errors.of(ErrorCode.TIMEOUT, region.leaderHint(), "region " + region.id()
                        + ": outcome unknown: the leader stepped down before the entry committed, and " + why));
    }

    /** Called when this node starts to lead {@code term}: entries it proposes carry the term's start from now. */
    void leading(long term) {
        termStart = new TermStart(term, leaseClockMs.getAsLong());
    }

    UndecidedWrites undecided() {
        return undecided;
    }

    /** Write requests queued for the next log entry (the leader's proposal queue depth). */
    public int queued() {
        return proposer.pending();
    }

    /**
     * Queues validated writes for the next log entry (only called on the leader) and, once their entry is applied,
     * answers the gets of {@code readKeys} (may be empty) from the store in the same response: the entry leaves after
     * the request arrived and commits in this leader's term, which proves what a ReadIndex round would (see
     * {@link Reads#read}), so the gets cost no round of their own.
     */
    public void write(List<WriteOp> ops, List<ByteString> readKeys, int bytes, boolean returnsValues,
                      Consumer<WriteResponse> reply) {
        proposer.offer(new WriteProposal(ops, readKeys, bytes, returnsValues, reply));
    }

    private void propose(List<WriteProposal> proposals, Runnable done) {
        // one reading of the clock for the whole entry: "now" of every lock op in it, on every replica
        TermStart started = termStart;
        WriteBatch.Builder b = WriteBatch.newBuilder().setLeaseClockMs(leaseClockMs.getAsLong())
                .setTermStartMs(started.startMs()).setLeaderTerm(started.term())
                .setProposalId(proposalIds.incrementAndGet()).setMaxValueBytes(maxValueBytes);
        boolean returnsValues = false;
        for (WriteProposal p : proposals) {
            b.addAllOps(p.ops());
            returnsValues |= p.returnsValues();
            if (proposals.size() > 1) {
                b.addRequestSizes(p.ops().size());
            }
        }
        WriteBatch batch = b.build();
        Task task = new Task();
        task.setData(ByteBuffer.wrap(batch.toByteArray()));
        task.setDone(new BatchClosure(batch, returnsValues, proposals, region.reads().onProposal(), region, done));
        // the entry is refused unless jraft's term is the one stamped into it, so a failed entry's term is known
        task.setExpectedTerm(started.term());
        try {
            region.node().apply(task);
        } catch (IllegalStateException shuttingDown) {
            // jraft has already run the closure with ENODESHUTDOWN, which answered the callers
        }
    }

    /**
     * Captures the region's data for a backup at a Raft-consistent point: proposes a BACKUP_POINT entry (no
     * data) and, when this leader applies it, freezes the store's range on the state machine thread. The
     * entry commits after this call, so the capture holds every write acknowledged before it. Only called
     * on the leader; a lost leadership fails the callback with NOT_LEADER or a TIMEOUT.
     */
    public void captureForBackup(BackupPoint.Callback callback) {
        proposeBackupPoint(new BackupPoint(region, callback));
    }

    /** A BACKUP_POINT entry: no data; {@code point} (null: none) captures the store when this leader applies it. */
    private void proposeBackupPoint(BackupPoint point) {
        WriteBatch batch = WriteBatch.newBuilder()
                .addOps(WriteOp.newBuilder().setType(WriteOpType.BACKUP_POINT)).build();
        Task task = new Task();
        task.setData(ByteBuffer.wrap(batch.toByteArray()));
        task.setDone(point);
        try {
            region.node().apply(task);
        } catch (IllegalStateException shuttingDown) {
            // jraft has already run the closure (if any) with ENODESHUTDOWN
        }
    }

    /**
     * Proposes an entry that changes nothing (a BACKUP_POINT no one captures), so that the leader's replicators send
     * entries. jraft reports a new voter caught up only from an AppendEntries answer that carries entries and comes
     * after it started waiting; in a region with no writes its heartbeats never do, and a configuration change adding
     * a replica that was caught up already would wait for ever. Only called on the leader.
     */
    public void nudge() {
        proposeBackupPoint(null);
    }

    /**
     * Proposes a split of this region at {@code splitKey} into a new region {@code newRegionId}, decided at
     * {@code epoch}: the state machine applies it only if the region is still at that epoch and the key still lies
     * strictly inside its range. Only called on the leader; {@code done} gets the outcome (true: split), or the
     * jraft status of a proposal that failed.
     */
    public void split(byte[] splitKey, int newRegionId, long epoch, SplitClosure.Callback done) {
        propose(WriteOp.newBuilder().setType(WriteOpType.SPLIT)
                .setKey(ByteString.copyFrom(splitKey)).setRegionId(newRegionId).setEpoch(epoch).build(), done);
    }

    /**
     * Proposes one entry that changes the region's shape (SPLIT, or a merge step: PREPARE_MERGE, COMMIT_MERGE,
     * MERGE_ABORT, MERGE_ROLLBACK) or records its voters (CONF_CHANGED). Only called on the leader; {@code done} gets whether the state machine took it (see the op
     * types) and the state after it, or the jraft status of a proposal that failed.
     */
    public void propose(WriteOp op, SplitClosure.Callback done) {
        WriteBatch batch = WriteBatch.newBuilder().addOps(op).build();
        Task task = new Task();
        task.setData(ByteBuffer.wrap(batch.toByteArray()));
        task.setDone(new SplitClosure(done));
        try {
            region.node().apply(task);
        } catch (IllegalStateException shuttingDown) {
            // jraft has already run the closure with ENODESHUTDOWN
        }
    }

    /**
     * The lease clock as a read on this leader sees it now (to tell how long a lock has left). Only an estimate
     * during the moment after an election before the leader's start is recorded.
     */
    public Locks.Clock leaseClockNow() {
        TermStart started = termStart;
        return new Locks.Clock(region.id(), started.term(), leaseClockMs.getAsLong(), started.startMs());
    }

    /**
     * Answers the writes of an entry whose proposal failed: at once when the failure proves the entry is not in the
     * log (or cannot tell), or by the entry's fate in the log when the leader stepped down after appending it.
     */
    void failed(BatchClosure closure, Status status) {
        RaftError e = status.getRaftError();
        String msg = status.getErrorMsg() == null ? "" : status.getErrorMsg();
        if (e == RaftError.EPERM && msg.startsWith("Leader stepped down")) {
            undecided.park(closure, closure.batch.getLeaderTerm(), closure.batch.getProposalId());
        } else if (e == RaftError.EPERM && msg.startsWith("expected_term")) {
            // jraft leads a newer term than this node's state machine has started yet: the entry was not appended
            closure.answer(Errors.of(ErrorCode.BUSY, region.leaderHint(), "region " + region.id() + ": leadership is starting"));
        } else if (e == RaftError.EPERM || e == RaftError.EBUSY) {
            closure.answer(region.errorOf(status)); // refused before it was appended: "Is not leader.", or a transfer
        } else {
            closure.answer(Errors.of(ErrorCode.TIMEOUT, region.leaderHint(), "region " + region.id() + " outcome unknown: " + status));
        }
    }
}
