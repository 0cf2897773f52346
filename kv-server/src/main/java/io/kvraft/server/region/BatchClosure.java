package io.kvraft.server.region;

import com.alipay.sofa.jraft.Closure;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.option.ReadOnlyOption;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.CoordResult;
import io.kvraft.common.proto.KvProto.WriteBatch;
import io.kvraft.common.proto.KvProto.Value;
import io.kvraft.common.proto.KvProto.WriteResponse;
import com.google.protobuf.ByteString;
import io.kvraft.common.Errors;

import java.util.List;

/**
 * The closure of one log entry that carries the writes of several client requests. The state
 * machine sets the per-op results and runs it; jraft runs it with an error if the entry failed.
 */
final class BatchClosure implements Closure, UndecidedWrites.Write {

    final WriteBatch batch;
    private final List<WriteProposal> proposals;
    private final Runnable coalescerDone;
    private final Region region;
    /** Reads that arrived before this entry was proposed: answered once it is applied. */
    private final List<PendingRead> reads;
    /** Whether the answers carry the value each op found (the entry has a GET_AND_PUT or PUT_IF_ABSENT). */
    final boolean returnsValues;
    boolean[] results;
    /** Set by the state machine when {@link #returnsValues}: per op, the value it found (null = absent). */
    byte[][] previous;
    /** Whether the answers carry a {@link CoordResult} per op (the entry has a sequence op). */
    final boolean returnsCoord;
    /** Set by the state machine when {@link #returnsCoord}: per op, its answer (null for other ops). */
    CoordResult[] coord;
    /** Set by the state machine: per op, whether its request was skipped for a key outside the region (null: none). */
    boolean[] outOfRange;
    private final long proposedNanos = System.nanoTime();

    BatchClosure(WriteBatch batch, boolean returnsValues, List<WriteProposal> proposals, List<PendingRead> reads,
                 Region region, Runnable coalescerDone) {
        this.batch = batch;
        this.proposals = proposals;
        this.reads = reads;
        this.region = region;
        this.coalescerDone = coalescerDone;
        this.returnsValues = returnsValues;
        this.returnsCoord = RegionStateMachine.returnsCoord(batch);
    }

    @Override
    public void run(Status status) {
        region.timings().committed(proposedNanos);
        try {
            if (status.isOk()) {
                answerApplied();
                region.reads().serve(reads);
            } else {
                region.writes().failed(this, status); // answers now, or once the entry's fate in the log is known
                region.reads().readIndex(reads, ReadOnlyOption.ReadOnlySafe); // answers them, or says who leads now
            }
        } finally {
            region.reads().onProposalDone();
            coalescerDone.run(); // may propose the next entry, which takes the reads waiting meanwhile
            region.reads().flushWaitingReads();
        }
    }

    /** Answers the writes with their results, which the state machine has set: the entry is applied. */
    void answerApplied() {
        int at = 0;
        for (WriteProposal p : proposals) {
            if (outOfRange != null && !p.ops().isEmpty() && outOfRange[at]) {
                at += p.ops().size();
                p.reply().accept(WriteResponse.newBuilder().setError(Errors.of(ErrorCode.KEY_OUT_OF_RANGE,
                        "region " + region.id() + " was split before the request's entry applied; nothing of it"
                                + " was written")).build());
                continue;
            }
            WriteResponse.Builder b = WriteResponse.newBuilder();
            for (int i = 0; i < p.ops().size(); i++, at++) {
                b.addSucceeded(results[at]);
                if (previous != null) {
                    byte[] v = previous[at];
                    b.addPrevious(v == null ? Value.getDefaultInstance()
                            : Value.newBuilder().setFound(true).setValue(ByteString.copyFrom(v)).build());
                }
                if (coord != null) {
                    b.addCoord(coord[at] == null ? CoordResult.getDefaultInstance() : coord[at]);
                }
            }
            if (!p.readKeys().isEmpty()) {
                region.reads().serveRiders(p.readKeys(), b);
            }
            p.reply().accept(b.build());
        }
        region.countWrites(batch.getOpsCount());
    }

    @Override
    public void applied(UndecidedWrites.Early r) {
        results = r.results();
        previous = returnsValues ? r.previous() : null;
        coord = returnsCoord ? r.coord() : null;
        outOfRange = r.outOfRange();
        answerApplied();
    }

    /** Answers every write of the entry with {@code err}. */
    @Override
    public void answer(Error err) {
        WriteResponse error = WriteResponse.newBuilder().setError(err).build();
        for (WriteProposal p : proposals) {
            p.reply().accept(error);
        }
    }
}
