package io.kvraft.client;

import io.kvraft.client.batch.Coalescer;
import io.kvraft.client.config.ClientConfig.Batching;
import io.kvraft.client.proto.KvProto.Error;
import io.kvraft.client.proto.KvProto.ErrorCode;
import io.kvraft.client.proto.KvProto.ReadMode;
import io.kvraft.client.proto.KvProto.ReadRequest;
import io.kvraft.client.proto.KvProto.ReadResponse;
import io.kvraft.client.proto.KvProto.Value;
import io.kvraft.client.proto.KvProto.WriteRequest;
import io.kvraft.client.proto.KvProto.WriteResponse;
import io.kvraft.client.route.RouteTable.Route;
import io.kvraft.client.rpc.Transport;

import com.google.protobuf.Message;

import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The operations bound for one region: writes coalesce into one WriteRequest, reads into one
 * ReadRequest (one ReadIndex on the server). With batching off every operation is its own RPC.
 * Failed batches hand each operation back to the client for a retry decision.
 */
final class RegionBatcher {

    /** Receives operations whose batch failed, with the wire error. */
    interface FailureHandler {
        void failed(PendingOp op, Route route, String target, Error error, boolean unsent);
    }

    private final int regionId;
    private final RoutingKvClient client;
    private final Transport transport;
    private final ReadMode readMode;
    private final long requestTimeoutMs;
    private final Coalescer<PendingOp> writes;
    private final Coalescer<PendingOp> reads;

    RegionBatcher(int regionId, RoutingKvClient client, Transport transport, Batching batching, ReadMode readMode,
                  long requestTimeoutMs) {
        this.regionId = regionId;
        this.client = client;
        this.transport = transport;
        this.readMode = readMode;
        this.requestTimeoutMs = requestTimeoutMs;
        int inflight = batching.enabled() ? batching.maxInflightPerRegion() : Integer.MAX_VALUE;
        int size = batching.enabled() ? batching.maxBatchSize() : 1;
        this.writes = new Coalescer<>(inflight, size, batching.maxBatchBytes(), batching.maxPendingPerRegion(),
                PendingOp::bytes, this::sendWrites);
        this.reads = new Coalescer<>(inflight, size, batching.maxBatchBytes(), batching.maxPendingPerRegion(),
                PendingOp::bytes, this::sendReads);
    }

    /** False when the region's queue is full (back-pressure). */
    boolean offer(PendingOp op) {
        return op.isWrite() ? writes.offer(op) : reads.offer(op);
    }

    private long timeoutMs(List<PendingOp> batch) {
        long now = System.nanoTime();
        long latest = 0;
        for (PendingOp op : batch) {
            latest = Math.max(latest, op.deadlineNanos - now);
        }
        return Math.max(1, Math.min(requestTimeoutMs, latest / 1_000_000L));
    }

    private void sendWrites(List<PendingOp> batch, Runnable done) {
        send(batch, done, route -> {
            WriteRequest.Builder b = WriteRequest.newBuilder().setRegionId(regionId).setRegionEpoch(route.epoch());
            for (PendingOp op : batch) {
                b.addOps(op.write);
            }
            return b.build();
        }, (WriteResponse resp) -> resp.getError(), resp -> {
            for (int i = 0; i < batch.size(); i++) {
                batch.get(i).result.complete(i < resp.getSucceededCount() && resp.getSucceeded(i));
            }
        });
    }

    private void sendReads(List<PendingOp> batch, Runnable done) {
        send(batch, done, route -> {
            ReadRequest.Builder b = ReadRequest.newBuilder().setRegionId(regionId).setRegionEpoch(route.epoch())
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
        });
    }

    /** One batch RPC to the region's believed leader; failures go back to the client op by op. */
    private <R extends Message> void send(List<PendingOp> batch, Runnable done, Function<Route, Message> request,
                                          Function<R, Error> errorOf, Consumer<R> complete) {
        Route route = client.routes().byId(regionId);
        if (route == null) {
            failAll(batch, null, "", client.localError(ErrorCode.REGION_NOT_FOUND, "region " + regionId + " left the route table"),
                    true);
            done.run();
            return;
        }
        String target = route.target();
        transport.<R>call(target, request.apply(route), timeoutMs(batch)).whenComplete((resp, err) -> {
            try {
                Error error = err != null ? client.transportError(err) : errorOf.apply(resp);
                if (err != null || error.getCode() != ErrorCode.OK) {
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
            client.failed(op, route, target, error, unsent);
        }
    }
}
