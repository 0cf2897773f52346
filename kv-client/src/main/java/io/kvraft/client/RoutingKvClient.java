package io.kvraft.client;

import com.google.protobuf.ByteString;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.client.proto.KvProto.Error;
import io.kvraft.client.proto.KvProto.ErrorCode;
import io.kvraft.client.proto.KvProto.ReadMode;
import io.kvraft.client.proto.KvProto.RegionInfo;
import io.kvraft.client.proto.KvProto.RegionsRequest;
import io.kvraft.client.proto.KvProto.RegionsResponse;
import io.kvraft.client.proto.KvProto.WriteOp;
import io.kvraft.client.proto.KvProto.WriteOpType;
import io.kvraft.client.route.RetryPolicy;
import io.kvraft.client.route.RouteTable;
import io.kvraft.client.route.RouteTable.Route;
import io.kvraft.client.rpc.Transport;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The client: routes each key to its region, hands it to the region's batcher, and retries
 * failures by error code until the operation's deadline. Multi-key calls split by key and so may
 * span regions.
 */
final class RoutingKvClient implements KvClient {

    private final ClientConfig config;
    private final Transport transport;
    private final RouteTable routes = new RouteTable();
    private final ConcurrentHashMap<Integer, RegionBatcher> batchers = new ConcurrentHashMap<>();
    private final RetryPolicy retry = RetryPolicy.defaults();
    private final ReadMode readMode;
    private final ScheduledExecutorService timer;
    private CompletableFuture<Void> refreshing;

    RoutingKvClient(ClientConfig config) {
        this.config = config;
        this.transport = new Transport(config.tls());
        this.readMode = config.readMode().equals("leader_lease") ? ReadMode.LEADER_LEASE : ReadMode.READ_INDEX;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kv-client-retry");
            t.setDaemon(true);
            return t;
        });
    }

    /** Fetches the route table once, so that a wrong address fails at connect with a clear error. */
    void connect() {
        long deadline = System.nanoTime() + config.operationTimeoutMs() * 1_000_000L;
        KvException last = null;
        while (System.nanoTime() < deadline) {
            try {
                refreshRoutes().join();
                return;
            } catch (RuntimeException e) {
                last = KvException.unwrap(e);
                if (!RetryPolicy.retriable(last.code()) || last.permanent()) {
                    break;
                }
                try {
                    Thread.sleep(100); // a pause between rounds of asking every seed, not a wait for a state
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        close();
        throw last != null ? last : new KvException(ErrorCode.UNAVAILABLE, "no server answered: " + config.servers());
    }

    RouteTable routes() {
        return routes;
    }

    // ---- the API ----------------------------------------------------------------------------------

    @Override
    public CompletableFuture<Void> put(byte[] key, byte[] value) {
        return submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.PUT).setKey(bytes(key))
                .setValue(bytes(value)).build(), deadline())).thenApply(r -> null);
    }

    @Override
    public CompletableFuture<byte[]> get(byte[] key) {
        return submit(PendingOp.read(key == null ? new byte[0] : key, deadline())).thenApply(r -> (byte[]) r);
    }

    @Override
    public CompletableFuture<Boolean> delete(byte[] key) {
        return submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.DELETE).setKey(bytes(key)).build(),
                deadline())).thenApply(r -> (Boolean) r);
    }

    @Override
    public CompletableFuture<List<byte[]>> multiGet(List<byte[]> keys) {
        long deadline = deadline();
        List<CompletableFuture<Object>> parts = new ArrayList<>(keys.size());
        for (byte[] k : keys) {
            parts.add(submit(PendingOp.read(k == null ? new byte[0] : k, deadline)));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(v -> {
            List<byte[]> out = new ArrayList<>(parts.size());
            for (CompletableFuture<Object> p : parts) {
                out.add((byte[]) p.join());
            }
            return out;
        });
    }

    @Override
    public CompletableFuture<Void> batchPut(List<KeyValue> entries) {
        long deadline = deadline();
        List<CompletableFuture<Object>> parts = new ArrayList<>(entries.size());
        for (KeyValue kv : entries) {
            parts.add(submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.PUT).setKey(bytes(kv.key()))
                    .setValue(bytes(kv.value())).build(), deadline)));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new));
    }

    @Override
    public CompletableFuture<Boolean> compareAndPut(byte[] key, byte[] expect, byte[] update) {
        WriteOp.Builder op = WriteOp.newBuilder().setType(WriteOpType.COMPARE_AND_PUT).setKey(bytes(key))
                .setValue(bytes(update));
        if (expect == null) {
            op.setExpectAbsent(true);
        } else {
            op.setExpect(ByteString.copyFrom(expect));
        }
        return submit(PendingOp.write(op.build(), deadline())).thenApply(r -> (Boolean) r);
    }

    @Override
    public CompletableFuture<List<RegionInfo>> regions() {
        return askAnyServer().thenApply(RegionsResponse::getRegionsList);
    }

    @Override
    public void close() {
        timer.shutdownNow();
        transport.close();
    }

    // ---- routing and retries ----------------------------------------------------------------------

    private CompletableFuture<Object> submit(PendingOp op) {
        if (op.key.length == 0) {
            op.result.completeExceptionally(new KvException(ErrorCode.INVALID_ARGUMENT, "empty key"));
            return op.result;
        }
        dispatch(op);
        return op.result;
    }

    private void dispatch(PendingOp op) {
        if (op.result.isDone()) {
            return;
        }
        Route route = routes.lookup(op.key);
        if (route == null) {
            failed(op, null, "", localError(ErrorCode.REGION_NOT_FOUND, "no region holds the key in the route table"), true);
            return;
        }
        RegionBatcher batcher = batchers.computeIfAbsent(route.regionId(), id -> new RegionBatcher(id, this, transport,
                config.batching(), readMode, config.requestTimeoutMs()));
        if (!batcher.offer(op)) {
            op.result.completeExceptionally(new KvException(ErrorCode.BUSY, "region " + route.regionId()
                    + " has batching.maxPendingPerRegion operations queued"));
        }
    }

    /**
     * Called by batchers for each operation of a failed batch; {@code unsent} when the request never left
     * this client, so even a write whose error would leave its outcome unknown can safely go again.
     */
    void failed(PendingOp op, Route route, String target, Error error, boolean unsent) {
        ErrorCode code = error.getCode();
        String hint = error.getLeaderHint();
        if (route != null) {
            if (!hint.isEmpty() && !hint.equals(target)) {
                route.leader(hint);
            } else if (code != ErrorCode.BUSY) {
                route.leaderUnknown(target);
            }
        }
        op.attempts++;
        long now = System.nanoTime();
        long delay = retry.delayNanos(code, op.attempts, !hint.isEmpty(), unsent || op.idempotent(), now,
                op.deadlineNanos);
        if (delay == RetryPolicy.NO_RETRY) {
            op.result.completeExceptionally(new KvException(code, error.getDetail(), hint));
            return;
        }
        if (RetryPolicy.refreshesRoute(code)) {
            refreshRoutes().whenComplete((v, e) -> schedule(op, delay));
        } else if (delay == 0) {
            dispatch(op);
        } else {
            schedule(op, delay);
        }
    }

    private void schedule(PendingOp op, long delayNanos) {
        try {
            timer.schedule(() -> dispatch(op), delayNanos, TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            op.result.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "client closed"));
        }
    }

    /** One refresh at a time; callers that arrive meanwhile share it. */
    synchronized CompletableFuture<Void> refreshRoutes() {
        if (refreshing != null && !refreshing.isDone()) {
            return refreshing;
        }
        refreshing = askAnyServer().thenAccept(resp -> routes.update(resp.getRegionsList()));
        return refreshing;
    }

    private CompletableFuture<RegionsResponse> askAnyServer() {
        Set<String> targets = new LinkedHashSet<>(config.servers());
        for (Route r : routes.routes()) {
            targets.addAll(r.info().getPeersList());
        }
        return ask(new ArrayList<>(targets), 0, null);
    }

    private CompletableFuture<RegionsResponse> ask(List<String> targets, int i, Throwable last) {
        // a node that refused this client's TLS settings: the others share its CA and would refuse them too
        boolean refused = last != null && KvException.unwrap(last).permanent();
        if (i >= targets.size() || refused) {
            String detail = last == null ? "no servers configured"
                    : "no server answered of " + targets + "; last: " + KvException.unwrap(last).getMessage();
            KvException e = last != null && KvException.unwrap(last).permanent()
                    ? KvException.permanent(ErrorCode.UNAVAILABLE, detail) : new KvException(ErrorCode.UNAVAILABLE, detail);
            return CompletableFuture.failedFuture(e);
        }
        return transport.<RegionsResponse>call(targets.get(i), RegionsRequest.getDefaultInstance(), config.requestTimeoutMs())
                .handle((resp, err) -> {
                    if (err == null && (!resp.hasError() || resp.getError().getCode() == ErrorCode.OK)
                            && resp.getRegionsCount() > 0) {
                        return CompletableFuture.completedFuture(resp);
                    }
                    return ask(targets, i + 1, err != null ? err : new KvException(resp.getError().getCode(),
                            resp.getError().getDetail()));
                }).thenCompose(f -> f);
    }

    Error transportError(Throwable err) {
        KvException e = KvException.unwrap(err);
        return localError(e.code(), e.getMessage());
    }

    Error localError(ErrorCode code, String detail) {
        return Error.newBuilder().setCode(code).setDetail(detail).build();
    }

    private long deadline() {
        return System.nanoTime() + config.operationTimeoutMs() * 1_000_000L;
    }

    private static ByteString bytes(byte[] b) {
        return b == null ? ByteString.EMPTY : ByteString.copyFrom(b);
    }
}
