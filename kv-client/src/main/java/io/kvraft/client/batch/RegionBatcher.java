package io.kvraft.client.batch;

import io.kvraft.common.Errors;
import io.kvraft.common.KvException;
import io.kvraft.common.Coalescer;
import io.kvraft.client.config.ClientConfig.Batching;
import io.kvraft.common.proto.KvProto.CoordResult;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.ReadRequest;
import io.kvraft.common.proto.KvProto.ReadResponse;
import io.kvraft.common.proto.KvProto.Value;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.client.route.RouteTable.Route;
import io.kvraft.client.route.Routes;
import io.kvraft.common.rpc.Transport;

import com.google.protobuf.Message;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The operations bound for one region: writes coalesce into one WriteRequest, reads into one
 * ReadRequest (one ReadIndex on the server). With batching off every operation is its own RPC.
 * Failed batches hand each operation to the failure handler (the {@link Dispatcher}) for a retry decision.
 */
final class RegionBatcher {

    /** Receives operations whose batch failed, with the wire error. */
    interface FailureHandler {
        void failed(PendingOp op, Route route, String target, Error error, boolean unsent);
    }

    private final int regionId;
    private final Routes routes;
    private final FailureHandler failures;
    private final Transport transport;
    private final long requestTimeoutMs;
    private final Batching batching;
    private final Coalescer<PendingOp> writes;
    /** One queue of reads per read mode, made on first use: a batch RPC carries one mode. */
    private final AtomicReferenceArray<Coalescer<PendingOp>> reads = new AtomicReferenceArray<>(READ_MODES.length);

    private static final ReadMode[] READ_MODES = {ReadMode.READ_INDEX, ReadMode.LEADER_LEASE, ReadMode.FOLLOWER,
            ReadMode.STALE};

    RegionBatcher(int regionId, Routes routes, FailureHandler failures, Transport transport, Batching batching,
                  long requestTimeoutMs) {
        this.regionId = regionId;
        this.routes = routes;
        this.failures = failures;
        this.transport = transport;
        this.batching = batching;
        this.requestTimeoutMs = requestTimeoutMs;
        this.writes = coalescer(this::sendQueued);
    }

    private Coalescer<PendingOp> coalescer(Coalescer.Sender<PendingOp> sender) {
        int inflight = batching.enabled() ? batching.maxInflightPerRegion() : Integer.MAX_VALUE;
        int size = batching.enabled() ? batching.maxBatchSize() : 1;
        return new Coalescer<>(inflight, size, batching.maxBatchBytes(), batching.maxPendingPerRegion(),
                PendingOp::bytes, sender);
    }

    /** False when the region's queue is full (back-pressure). */
    boolean offer(PendingOp op) {
        if (op.group != null) {
            sendWrites(List.of(op), List.of(), () -> { }); // a group travels alone, so no batch outgrows the server's op limit
            return true;
        }
        if (op.isWrite() || ridesWrites(op)) {
            return writes.offer(op);
        }
        int i = op.readMode.getNumber();
        Coalescer<PendingOp> queue = reads.get(i);
        if (queue == null) {
            ReadMode mode = op.readMode;
            reads.compareAndSet(i, null, coalescer((batch, done) -> sendReads(batch, mode, done)));
            queue = reads.get(i);
        }
        return queue.offer(op);
    }

    /**
     * Whether a read_index get joins the write queue (batching.readsWithWrites; see {@link #sendQueued}). There it
     * leaves with the region's next write batch, as one of its read keys: at once when no write batch is in flight
     * (alone, as a ReadRequest, if no write waits either), else when the batch in flight returns. Joining only while
     * writes already waited would send a get alone whenever the queue was empty at that instant, as it often is right
     * after a batch left under load (docs/RESULTS.md, reads and read modes).
     */
    private boolean ridesWrites(PendingOp op) {
        return batching.enabled() && batching.readsWithWrites() && op.readMode == ReadMode.READ_INDEX;
    }

    private long timeoutMs(List<PendingOp> batch) {
        long now = System.nanoTime();
        long latest = 0;
        for (PendingOp op : batch) {
            latest = Math.max(latest, op.deadlineNanos - now);
        }
        return Math.max(1, Math.min(requestTimeoutMs, latest / 1_000_000L));
    }

    /**
     * A batch taken from the write queue: its writes, and the read_index gets that joined them, which ride as the
     * request's read keys (the leader answers them once the writes' entry is applied: one Raft round for both). A
     * batch of such gets alone goes as a read_index ReadRequest.
     */
    private void sendQueued(List<PendingOp> batch, Runnable done) {
        List<PendingOp> riders = new ArrayList<>(0);
        for (PendingOp op : batch) {
            if (!op.isWrite()) {
                riders.add(op);
            }
        }
        if (riders.size() == batch.size()) {
            sendReads(batch, ReadMode.READ_INDEX, done);
        } else {
            sendWrites(batch, riders, done);
        }
    }

    /** One write request of {@code batch}'s writes, with {@code riders} (its gets, in order) as read keys. */
    private void sendWrites(List<PendingOp> batch, List<PendingOp> riders, Runnable done) {
        send(batch, done, route -> {
            WriteRequest.Builder b = WriteRequest.newBuilder().setRegionId(regionId).setRegionEpoch(route.epoch()).setRegionConfVer(route.confVer());
            for (PendingOp op : batch) {
                if (op.group != null) {
                    b.addAllOps(op.group);
                } else if (op.isWrite()) {
                    b.addOps(op.write);
                } else {
                    b.addReadKeys(op.readKey);
                }
            }
            return b.build();
        }, (WriteResponse resp) -> resp.getError(), resp -> {
            completeRiders(riders, resp);
            int at = 0; // the first wire op of each operation
            for (PendingOp op : batch) {
                if (!op.isWrite()) {
                    continue;
                }
                if (op.returnsCoord()) {
                    op.result.complete(new CoordAnswer(at < resp.getSucceededCount() && resp.getSucceeded(at),
                            at < resp.getCoordCount() ? resp.getCoord(at) : CoordResult.getDefaultInstance()));
                } else if (op.returnsPrevious()) {
                    Value v = at < resp.getPreviousCount() ? resp.getPrevious(at) : Value.getDefaultInstance();
                    op.result.complete(v.getFound() ? v.getValue().toByteArray() : null);
                } else {
                    op.result.complete(at < resp.getSucceededCount() && resp.getSucceeded(at));
                }
                at += op.opCount();
            }
        }, null);
    }

    /** Completes the gets that rode on a write request, or hands them back for a retry if the leader could not serve them. */
    private void completeRiders(List<PendingOp> riders, WriteResponse resp) {
        if (riders.isEmpty()) {
            return;
        }
        if (resp.hasReadError()) {
            Route route = routes.table().byId(regionId);
            failAll(riders, route, route == null ? "" : Routes.target(route, ReadMode.READ_INDEX),
                    resp.getReadError(), false);
            return;
        }
        if (resp.getReadValuesCount() != riders.size()) {
            // a server that predates read_keys applied the writes and ignored the reads: ask for them on their own
            sendReads(riders, ReadMode.READ_INDEX, () -> { });
            return;
        }
        for (int i = 0; i < riders.size(); i++) {
            Value v = resp.getReadValues(i);
            riders.get(i).result.complete(v.getFound() ? v.getValue().toByteArray() : null);
        }
    }

    private void sendReads(List<PendingOp> batch, ReadMode readMode, Runnable done) {
        send(batch, done, route -> {
            ReadRequest.Builder b = ReadRequest.newBuilder().setRegionId(regionId).setRegionEpoch(route.epoch()).setRegionConfVer(route.confVer())
                    .setMode(readMode);
            for (PendingOp op : batch) {
                b.addKeys(op.readKey);
            }
            return b.build();
        }, (ReadResponse resp) -> resp.getError(), resp -> {
            for (int i = 0; i < batch.size(); i++) {
                Value v = i < resp.getValuesCount() ? resp.getValues(i) : Value.getDefaultInstance();
                batch.get(i).result.complete(v.getFound() ? v.getValue().toByteArray() : null);
            }
        }, readMode);
    }

    /**
     * One batch RPC to the region's believed leader (or, for reads any replica may serve, to a replica in turn);
     * failures go to the failure handler op by op.
     */
    private <R extends Message> void send(List<PendingOp> batch, Runnable done, Function<Route, Message> request,
                                          Function<R, Error> errorOf, Consumer<R> complete, ReadMode readMode) {
        Route route = routes.table().byId(regionId);
        if (route == null) {
            failAll(batch, null, "", Errors.of(KvProto.ErrorCode.REGION_NOT_FOUND, "region " + regionId
                    + " left the route table"), true);
            done.run();
            return;
        }
        String target = Routes.target(route, readMode);
        transport.<R>call(target, request.apply(route), timeoutMs(batch)).whenComplete((resp, err) -> {
            try {
                Error error = err != null ? Errors.of(KvException.unwrap(err)) : errorOf.apply(resp);
                if (err != null || error.getCode() != KvProto.ErrorCode.OK) {
                    failAll(batch, route, target, error, err != null && KvException.unwrap(err).unsent());
                } else {
                    complete.accept(resp);
                }
            } finally {
                done.run();
            }
        });
    }

    private void failAll(List<PendingOp> batch, Route route, String target, Error error, boolean unsent) {
        for (PendingOp op : batch) {
            failures.failed(op, route, target, error, unsent);
        }
    }
}
