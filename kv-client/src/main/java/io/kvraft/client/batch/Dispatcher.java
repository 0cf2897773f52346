package io.kvraft.client.batch;

import io.kvraft.client.config.ClientConfig.Batching;
import io.kvraft.client.route.Calls;
import io.kvraft.client.route.RetryPolicy;
import io.kvraft.client.route.RouteTable.Route;
import io.kvraft.client.route.Routes;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.Errors;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.WriteOp;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Sends single-key operations: routes each to its region, hands it to that region's {@link RegionBatcher}, and when
 * its batch fails decides by error code whether and when it goes again (a refreshed route first when the route was
 * stale), until the operation's deadline. Shared by a client, its views and its admin view.
 */
public final class Dispatcher {

    private final Routes routes;
    private final Calls calls;
    private final Batching batching;
    private final ConcurrentHashMap<Integer, RegionBatcher> batchers = new ConcurrentHashMap<>();

    public Dispatcher(Routes routes, Calls calls, Batching batching) {
        this.routes = routes;
        this.calls = calls;
        this.batching = batching;
    }

    /**
     * Sends {@code op}; its future completes with a Boolean (writes), the previous value or null (writes that return
     * one), a {@link CoordAnswer} (sequence and lock ops) or a byte[]/null (reads), or fails with a KvException.
     */
    public CompletableFuture<Object> submit(PendingOp op) {
        if (op.key.length == 0) {
            op.result.completeExceptionally(new KvException(ErrorCode.INVALID_ARGUMENT, "empty key"));
            return op.result;
        }
        dispatch(op);
        return op.result;
    }

    /** A sequence or lock op, routed, batched and retried as writes are, until {@code deadlineNanos}. */
    public CompletableFuture<CoordAnswer> coordOp(WriteOp op, long deadlineNanos) {
        return submit(PendingOp.write(op, deadlineNanos)).thenApply(r -> (CoordAnswer) r);
    }

    private void dispatch(PendingOp op) {
        if (op.result.isDone()) {
            return;
        }
        Route route = routes.table().lookup(op.key);
        if (route == null) {
            failed(op, null, "", Errors.of(KvProto.ErrorCode.REGION_NOT_FOUND, "no region holds the key in the route table"),
                    true);
            return;
        }
        if (op.group != null && !sameRoute(op.group, route)) {
            op.result.completeExceptionally(new KvException(ErrorCode.INVALID_ARGUMENT,
                    "compareAndPutAll: its keys are no longer in one region (region " + route.regionId() + " changed)"));
            return;
        }
        RegionBatcher batcher = batchers.computeIfAbsent(route.regionId(), id -> new RegionBatcher(id, routes,
                this::failed, calls.transport(), batching, calls.requestTimeoutMs()));
        if (!batcher.offer(op)) {
            op.result.completeExceptionally(new KvException(ErrorCode.BUSY, "region " + route.regionId()
                    + " has batching.maxPendingPerRegion operations queued"));
        }
    }

    /**
     * Called by batchers for each operation of a failed batch; {@code unsent} when the request never left
     * this client, so even a write whose error would leave its outcome unknown can safely go again.
     */
    private void failed(PendingOp op, Route route, String target, Error error, boolean unsent) {
        op.attempts++;
        long delay = routes.retryDelay(route, target, error, op.attempts, unsent || op.idempotent(), op.deadlineNanos);
        if (delay == RetryPolicy.NO_RETRY) {
            op.result.completeExceptionally(KvException.fromWire(error));
            return;
        }
        if (RetryPolicy.refreshesRoute(ErrorCode.fromWire(error.getCode()))) {
            // the node that said the route is stale knows a newer one (or will, once it applies the split)
            routes.refresh(target).whenComplete((v, e) -> schedule(op, delay));
        } else if (delay == 0) {
            dispatch(op);
        } else {
            schedule(op, delay);
        }
    }

    private void schedule(PendingOp op, long delayNanos) {
        if (!calls.later(() -> dispatch(op), delayNanos)) {
            op.result.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "client closed"));
        }
    }

    private boolean sameRoute(List<WriteOp> ops, Route route) {
        for (WriteOp op : ops) {
            Route r = routes.table().lookup(op.getKey().toByteArray());
            if (r == null || r.regionId() != route.regionId()) {
                return false;
            }
        }
        return true;
    }
}
