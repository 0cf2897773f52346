package io.kvraft.server.region;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.closure.ReadIndexClosure;
import com.alipay.sofa.jraft.error.RaftError;
import com.alipay.sofa.jraft.option.ReadOnlyOption;
import com.google.protobuf.ByteString;
import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.LockInfo;
import io.kvraft.common.proto.KvProto.Pair;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.ReadResponse;
import io.kvraft.common.proto.KvProto.ScanResponse;
import io.kvraft.common.proto.KvProto.Value;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.server.coord.Locks;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.ScanPage;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * A region's read paths: gets, scan pages and lock listings, each served from the store once it is fresh enough for
 * the read's mode. Linearizable reads on the leader ride on the next log entry when one is in flight (its commit in
 * this term proves what a ReadIndex round would), else take a ReadIndex round.
 */
public final class Reads {

    private final Object readLock = new Object();
    /** Reads that arrived while an entry was in flight; they ride on the next one. Guarded by readLock. */
    private List<PendingRead> waitingReads = new ArrayList<>();
    /** Guarded by readLock. */
    private int proposalsInFlight;
    /** raft.readsRideWrites: off only to compare, every linearizable read then takes a ReadIndex round. */
    private final boolean rideWrites;
    private final Region region;
    private final KvStore store;

    Reads(Region region, KvStore store, boolean rideWrites) {
        this.region = region;
        this.store = store;
        this.rideWrites = rideWrites;
    }

    /** Reads waiting for the log entry in flight to commit. */
    public int queued() {
        synchronized (readLock) {
            return waitingReads.size();
        }
    }

    /** Answers the gets that rode on a write request into its response; the request's entry is applied. */
    void serveRiders(List<ByteString> keys, WriteResponse.Builder response) {
        gets(keys, r -> {
            if (r.hasError()) {
                response.setReadError(r.getError());
            } else {
                response.addAllReadValues(r.getValuesList());
            }
        }).serve();
    }

    /** Gets of {@code keys}, answered in their order. */
    public PendingRead gets(List<ByteString> keys, Consumer<ReadResponse> reply) {
        return new PendingRead() {
            @Override
            public void serve() {
                if (region.mergingInto() != 0) {
                    fail(region.merging());
                    return;
                }
                KeyRange now = region.range();
                for (ByteString key : keys) {
                    if (!now.contains(key)) { // split off while the read waited: ask the region holding it
                        fail(Errors.of(ErrorCode.KEY_OUT_OF_RANGE, "region " + region.id() + " was split while the read"
                                + " waited; the key is no longer in its range " + now));
                        return;
                    }
                }
                ReadResponse.Builder b = ReadResponse.newBuilder();
                for (ByteString key : keys) {
                    byte[] v = store.read(region.id(), key.toByteArray());
                    b.addValues(v == null ? Value.getDefaultInstance()
                            : Value.newBuilder().setFound(true).setValue(ByteString.copyFrom(v)).build());
                }
                region.countReads(keys.size());
                reply.accept(b.build());
            }

            @Override
            public void fail(Error error) {
                reply.accept(ReadResponse.newBuilder().setError(error).build());
            }
        };
    }

    /**
     * Why a read of {@code range} that waited (for an entry or a ReadIndex round) cannot be served now: the region is
     * merging into another, or was split and no longer holds the whole range; null when it may be.
     */
    private Error moved(KeyRange range, String what) {
        if (region.mergingInto() != 0) {
            return region.merging();
        }
        if (!region.range().covers(range)) {
            return Errors.of(ErrorCode.KEY_OUT_OF_RANGE, "region " + region.id() + " was split while the " + what
                    + " waited; " + range + " is no longer inside its range " + region.range());
        }
        return null;
    }

    /** One page of the keys in {@code range} (which the caller checked lies in this region). */
    public PendingRead scan(KeyRange range, boolean reverse, ScanPage.Builder page, Consumer<ScanResponse> reply) {
        return new PendingRead() {
            @Override
            public void serve() {
                Error moved = moved(range, "scan");
                if (moved != null) {
                    fail(moved);
                    return;
                }
                ScanPage result = store.scan(region.id(), range, reverse, page);
                ScanResponse.Builder b = ScanResponse.newBuilder().setMore(result.more());
                for (int i = 0; i < result.keys().size(); i++) {
                    b.addPairs(Pair.newBuilder().setKey(ByteString.copyFrom(result.keys().get(i)))
                            .setValue(ByteString.copyFrom(result.values().get(i))));
                }
                region.countReads(1);
                reply.accept(b.build());
            }

            @Override
            public void fail(Error error) {
                reply.accept(ScanResponse.newBuilder().setError(error).build());
            }
        };
    }

    /**
     * Serves {@code read} as {@code mode} asks. READ_INDEX is linearizable: with writes in flight, the read
     * rides on the next log entry this leader proposes; once that entry is applied, a majority has accepted
     * it in this leader's term after the read arrived, which proves what a ReadIndex round would (no newer
     * leader had committed anything before the read arrived), and the store then holds every write
     * acknowledged before it. So under a mixed load reads cost no Raft round of their own. Without writes in
     * flight: ReadIndex. LEADER_LEASE reads on the leader's lease; FOLLOWER on any replica after a ReadIndex
     * the leader confirms (jraft waits until this replica has applied up to it); STALE at once, from
     * whatever this replica has applied.
     */
    public void read(PendingRead read, ReadMode mode) {
        switch (mode) {
            case LEADER_LEASE -> readIndex(List.of(read), ReadOnlyOption.ReadOnlyLeaseBased);
            case STALE -> read.serve();
            case FOLLOWER -> {
                if (region.isLeader()) {
                    readLinearizable(read);
                } else {
                    readIndex(List.of(read), ReadOnlyOption.ReadOnlySafe);
                }
            }
            default -> readLinearizable(read);
        }
    }

    private void readLinearizable(PendingRead read) {
        if (rideWrites) {
            synchronized (readLock) {
                if (proposalsInFlight > 0) {
                    waitingReads.add(read);
                    return;
                }
            }
        }
        readIndex(List.of(read), ReadOnlyOption.ReadOnlySafe);
    }

    /** One ReadIndex for all of {@code reads}, then the store. */
    void readIndex(List<PendingRead> reads, ReadOnlyOption option) {
        if (reads.isEmpty()) {
            return;
        }
        // no jraft timeout (-1): a timeout starts jraft's read-index timer thread, which then ticks every
        // millisecond for the life of the JVM; jraft fails the read on a lost heartbeat or leadership, and
        // the client times out and retries on its own
        long start = System.nanoTime();
        region.node().readIndex(option, null, new ReadIndexClosure(-1) {
            @Override
            public void run(Status status, long index, byte[] reqCtx) {
                region.timings().readIndexDone(start);
                if (!status.isOk()) {
                    // a read changes nothing, so whatever failed it may be tried again: only "not the leader" is kept
                    Error err = status.getRaftError() == RaftError.EPERM ? region.errorOf(status)
                            : Errors.of(ErrorCode.UNAVAILABLE, region.leaderHint(), "region " + region.id() + ": read failed: " + status);
                    for (PendingRead r : reads) {
                        r.fail(err);
                    }
                    return;
                }
                serve(reads);
            }
        });
    }

    /** Answers {@code reads} from the store; the caller has established that the store is fresh enough. */
    void serve(List<PendingRead> reads) {
        for (PendingRead r : reads) {
            r.serve();
        }
    }

    /** Called when a proposed entry leaves: it carries the reads that arrived before it. */
    List<PendingRead> onProposal() {
        synchronized (readLock) {
            proposalsInFlight++;
            if (waitingReads.isEmpty()) {
                return List.of();
            }
            List<PendingRead> taken = waitingReads;
            waitingReads = new ArrayList<>();
            return taken;
        }
    }

    /** Called when a proposed entry is done (applied or failed), before the next one may leave. */
    void onProposalDone() {
        synchronized (readLock) {
            proposalsInFlight--;
        }
    }

    /** After a proposal is done and the next had its chance to leave: reads nobody took go to ReadIndex. */
    void flushWaitingReads() {
        List<PendingRead> taken;
        synchronized (readLock) {
            if (proposalsInFlight > 0 || waitingReads.isEmpty()) {
                return;
            }
            taken = waitingReads;
            waitingReads = new ArrayList<>();
        }
        readIndex(taken, ReadOnlyOption.ReadOnlySafe);
    }

    /** The system records of {@code range}, one page, as LockInfo pairs (an empty value for keys never locked). */
    public PendingRead locks(KeyRange range, ScanPage.Builder page, Consumer<ScanResponse> reply) {
        return new PendingRead() {
            @Override
            public void serve() {
                Error moved = moved(range, "listing");
                if (moved != null) {
                    fail(moved);
                    return;
                }
                ScanPage result = store.scanSystem(region.id(), range, page);
                Locks.Clock clock = region.writes().leaseClockNow();
                ScanResponse.Builder b = ScanResponse.newBuilder().setMore(result.more());
                try {
                    for (int i = 0; i < result.keys().size(); i++) {
                        ByteString key = ByteString.copyFrom(result.keys().get(i));
                        LockInfo info = Locks.info(key,
                                CoordRecord.parseFrom(result.values().get(i)), clock);
                        // a key never locked (a sequence's) comes with an empty value, so the client goes on after it
                        b.addPairs(Pair.newBuilder().setKey(key).setValue(info == null ? ByteString.EMPTY : info.toByteString()));
                    }
                } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                    fail(Errors.of(ErrorCode.INTERNAL, "region " + region.id() + ": undecodable lock record: " + e.getMessage()));
                    return;
                }
                region.countReads(1);
                reply.accept(b.build());
            }

            @Override
            public void fail(Error error) {
                reply.accept(ScanResponse.newBuilder().setError(error).build());
            }
        };
    }
}
