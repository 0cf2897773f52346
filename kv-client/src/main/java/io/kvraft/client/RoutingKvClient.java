package io.kvraft.client;

import io.kvraft.common.KvException;
import com.google.protobuf.ByteString;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.client.route.RetryPolicy;
import io.kvraft.common.RegionViews;
import io.kvraft.client.route.RouteTable;
import io.kvraft.client.route.RouteTable.Route;
import io.kvraft.common.rpc.Transport;

import java.util.ArrayList;
import java.util.Arrays;
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
final class RoutingKvClient implements KvClient, ClientLocks.Backend {

    private final RoutingKvClient root; // this, or the client a read-mode view was made from
    private final ClientConfig config;
    private final Transport transport;
    private final RouteTable routes;
    private final ConcurrentHashMap<Integer, RegionBatcher> batchers;
    private final RetryPolicy retry = RetryPolicy.defaults();
    private final ReadMode readMode;
    private final ScheduledExecutorService timer;
    private final RangeOps ranges;
    private final ClientLocks locks;
    private final ClusterAdmin clusterAdmin;
    private CompletableFuture<Void> refreshing;

    RoutingKvClient(ClientConfig config) {
        this.root = this;
        this.config = config;
        this.transport = new Transport(config.tls());
        this.routes = new RouteTable();
        this.batchers = new ConcurrentHashMap<>();
        this.readMode = ClientConfig.readModeOf(config.readMode());
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kv-client-retry");
            t.setDaemon(true);
            return t;
        });
        this.ranges = new RangeOps(this);
        this.locks = new ClientLocks(this, System::nanoTime);
        this.clusterAdmin = new ClusterAdmin(() -> new LinkedHashSet<>(targets(null)), transport::call, config.operationTimeoutMs(),
                config.requestTimeoutMs(), this::later, System::nanoTime);
    }

    /** A view of {@code root} whose reads default to {@code mode}; it shares everything else. */
    private RoutingKvClient(RoutingKvClient root, ReadMode mode) {
        this.root = root;
        this.config = root.config;
        this.transport = root.transport;
        this.routes = root.routes;
        this.batchers = root.batchers;
        this.readMode = mode;
        this.timer = root.timer;
        this.ranges = new RangeOps(this);
        this.locks = root.locks;
        this.clusterAdmin = root.clusterAdmin;
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
        return submit(PendingOp.read(key == null ? new byte[0] : key, readMode, deadline())).thenApply(r -> (byte[]) r);
    }

    @Override
    public CompletableFuture<Boolean> containsKey(byte[] key) {
        return get(key).thenApply(v -> v != null);
    }

    @Override
    public CompletableFuture<byte[]> getAndPut(byte[] key, byte[] value) {
        return submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.GET_AND_PUT).setKey(bytes(key))
                .setValue(bytes(value)).build(), deadline())).thenApply(r -> (byte[]) r);
    }

    @Override
    public CompletableFuture<byte[]> putIfAbsent(byte[] key, byte[] value) {
        return submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.PUT_IF_ABSENT).setKey(bytes(key))
                .setValue(bytes(value)).build(), deadline())).thenApply(r -> (byte[]) r);
    }

    @Override
    public CompletableFuture<Void> deleteBatch(List<byte[]> keys) {
        long deadline = deadline();
        List<CompletableFuture<Object>> parts = new ArrayList<>(keys.size());
        for (byte[] k : keys) {
            parts.add(submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.DELETE).setKey(bytes(k)).build(),
                    deadline)));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new));
    }

    @Override
    public CompletableFuture<Boolean> compareAndPutAll(List<CasEntry> entries) {
        if (entries.isEmpty()) {
            return CompletableFuture.completedFuture(true);
        }
        if (entries.size() > MAX_CAS_GROUP) {
            return invalid("compareAndPutAll takes at most " + MAX_CAS_GROUP + " entries, got " + entries.size());
        }
        List<WriteOp> ops = new ArrayList<>(entries.size());
        Set<ByteString> seen = new java.util.HashSet<>();
        Route first = null;
        List<String> elsewhere = new ArrayList<>();
        for (CasEntry e : entries) {
            if (e.key() == null || e.key().length == 0) {
                return invalid("compareAndPutAll: empty key");
            }
            WriteOp op = casOp(e.key(), e.expect(), e.update());
            if (!seen.add(op.getKey())) {
                return invalid("compareAndPutAll names key " + printable(e.key()) + " twice");
            }
            Route r = routes.lookup(e.key());
            if (first == null) {
                first = r;
            } else if (r == null || r.regionId() != first.regionId()) {
                elsewhere.add(printable(e.key()));
            }
            ops.add(op);
        }
        if (!elsewhere.isEmpty()) {
            return invalid("compareAndPutAll needs all keys in one region; not in the region of the first key ("
                    + (first == null ? "none" : first.regionId()) + "): " + String.join(", ", elsewhere));
        }
        return submit(PendingOp.group(ops, deadline())).thenApply(r -> (Boolean) r);
    }

    @Override
    public CompletableFuture<List<KeyValue>> scan(byte[] startKey, byte[] endKey, int limit, boolean keysOnly) {
        return scan(startKey, endKey, limit, false, keysOnly);
    }

    @Override
    public CompletableFuture<List<KeyValue>> reverseScan(byte[] startKey, byte[] endKey, int limit, boolean keysOnly) {
        return scan(startKey, endKey, limit, true, keysOnly);
    }

    private CompletableFuture<List<KeyValue>> scan(byte[] startKey, byte[] endKey, int limit, boolean reverse,
                                                   boolean keysOnly) {
        byte[] start = RangeOps.orEmpty(startKey);
        byte[] end = RangeOps.orEmpty(endKey);
        if (limit < 1) {
            return invalid("scan limit must be at least 1, got " + limit);
        }
        String bad = checkRange(start, end);
        if (bad != null) {
            return invalid(bad);
        }
        if (isEmptyRange(start, end)) {
            return CompletableFuture.completedFuture(List.of());
        }
        return ranges.scan(start, end, limit, reverse, keysOnly, readMode, deadline());
    }

    @Override
    public KvIterator iterator(byte[] startKey, byte[] endKey, int pageSize) {
        return iterator(startKey, endKey, pageSize, false);
    }

    @Override
    public KvIterator reverseIterator(byte[] startKey, byte[] endKey, int pageSize) {
        return iterator(startKey, endKey, pageSize, true);
    }

    private KvIterator iterator(byte[] startKey, byte[] endKey, int pageSize, boolean reverse) {
        byte[] start = RangeOps.orEmpty(startKey);
        byte[] end = RangeOps.orEmpty(endKey);
        if (pageSize < 1) {
            throw new KvException(ErrorCode.INVALID_ARGUMENT, "iterator page size must be at least 1, got " + pageSize);
        }
        String bad = checkRange(start, end);
        if (bad != null) {
            throw new KvException(ErrorCode.INVALID_ARGUMENT, bad);
        }
        return new KvIterator(ranges, start, end, pageSize, reverse, readMode, config.operationTimeoutMs());
    }

    @Override
    public CompletableFuture<Void> deleteRange(byte[] startKey, byte[] endKey) {
        byte[] start = RangeOps.orEmpty(startKey);
        byte[] end = RangeOps.orEmpty(endKey);
        String bad = checkRange(start, end);
        if (bad != null) {
            return invalid(bad);
        }
        if (isEmptyRange(start, end)) {
            return CompletableFuture.completedFuture(null);
        }
        return ranges.deleteRange(start, end, deadline());
    }

    @Override
    public KvClient withReadMode(ReadMode mode) {
        if (mode == null || mode == ReadMode.UNRECOGNIZED) {
            throw new KvException(ErrorCode.INVALID_ARGUMENT, "read mode must be one of READ_INDEX, LEADER_LEASE, FOLLOWER, STALE");
        }
        return new RoutingKvClient(root, mode);
    }

    @Override
    public ReadMode readMode() {
        return readMode;
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
            parts.add(submit(PendingOp.read(k == null ? new byte[0] : k, readMode, deadline)));
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
        return submit(PendingOp.write(casOp(key, expect, update), deadline())).thenApply(r -> (Boolean) r);
    }

    private static WriteOp casOp(byte[] key, byte[] expect, byte[] update) {
        WriteOp.Builder op = WriteOp.newBuilder().setType(WriteOpType.COMPARE_AND_PUT).setKey(bytes(key))
                .setValue(bytes(update));
        if (expect == null) {
            op.setExpectAbsent(true);
        } else {
            op.setExpect(ByteString.copyFrom(expect));
        }
        return op.build();
    }

    @Override
    public CompletableFuture<SequenceRange> getSequence(byte[] seqKey, long step) {
        if (step < 1) {
            return invalid("sequence step must be at least 1, got " + step);
        }
        if (step > MAX_SEQUENCE_STEP) {
            return invalid("sequence step " + step + " exceeds " + MAX_SEQUENCE_STEP);
        }
        return sequenceOp(WriteOpType.GET_SEQUENCE, seqKey, step).thenApply(a -> {
            if (!a.succeeded()) {
                throw new KvException(ErrorCode.INVALID_ARGUMENT, "sequence " + printable(seqKey) + " is at "
                        + a.result().getStart() + ": " + step + " more would pass " + Long.MAX_VALUE);
            }
            return new SequenceRange(a.result().getStart(), a.result().getEnd());
        });
    }

    @Override
    public CompletableFuture<Long> getLatestSequence(byte[] seqKey) {
        return sequenceOp(WriteOpType.GET_SEQUENCE, seqKey, 0).thenApply(a -> a.result().getStart());
    }

    @Override
    public CompletableFuture<Boolean> resetSequence(byte[] seqKey) {
        return sequenceOp(WriteOpType.RESET_SEQUENCE, seqKey, 0).thenApply(CoordAnswer::succeeded);
    }

    @Override
    public CompletableFuture<Void> restoreSystemRecord(byte[] key, io.kvraft.common.proto.KvProto.CoordRecord record) {
        if (record == null) {
            return invalid("restoreSystemRecord needs a record");
        }
        WriteOp op = WriteOp.newBuilder().setType(WriteOpType.RESTORE_COORD).setKey(bytes(key))
                .setValue(record.toByteString()).build();
        return submit(PendingOp.write(op, deadline())).thenApply(r -> null);
    }

    private CompletableFuture<CoordAnswer> sequenceOp(WriteOpType type, byte[] seqKey, long step) {
        return coordOp(WriteOp.newBuilder().setType(type).setKey(bytes(seqKey)).setStep(step).build(), deadline());
    }

    /** A sequence or lock op, routed, batched and retried as writes are, until {@code deadlineNanos}. */
    @Override
    public CompletableFuture<CoordAnswer> coordOp(WriteOp op, long deadlineNanos) {
        return root.submit(PendingOp.write(op, deadlineNanos)).thenApply(r -> (CoordAnswer) r);
    }

    @Override
    public CompletableFuture<LockHandle> tryLock(byte[] key, long leaseMs, long waitMs) {
        return locks.tryLock(key, leaseMs, waitMs);
    }

    @Override
    public CompletableFuture<LockHandle> lock(byte[] key, long leaseMs) {
        return locks.tryLock(key, leaseMs, Long.MAX_VALUE);
    }

    @Override
    public CompletableFuture<List<io.kvraft.common.proto.KvProto.LockInfo>> locks(byte[] prefix) {
        byte[] start = RangeOps.orEmpty(prefix);
        return ranges.locks(start, prefixEnd(start), deadline());
    }

    @Override
    public CompletableFuture<io.kvraft.common.proto.KvProto.LockInfo> lockInfo(byte[] key) {
        if (key == null || key.length == 0) {
            return invalid("empty lock key");
        }
        return ranges.locks(key, RangeOps.successor(key), deadline()).thenApply(l -> l.isEmpty() ? null : l.get(0));
    }

    /** The smallest key above every key that starts with {@code prefix}; empty (+inf) when there is none. */
    static byte[] prefixEnd(byte[] prefix) {
        for (int i = prefix.length - 1; i >= 0; i--) {
            if (prefix[i] != (byte) 0xff) {
                byte[] end = Arrays.copyOf(prefix, i + 1);
                end[i]++;
                return end;
            }
        }
        return new byte[0];
    }

    /** The server's limit too ({@code Sequences.MAX_STEP}). */
    static final long MAX_SEQUENCE_STEP = 1L << 40;

    @Override
    public CompletableFuture<RegionCapture> captureRegion(byte[] key) {
        return ranges.capture(RangeOps.orEmpty(key), deadline(), config.operationTimeoutMs());
    }

    @Override
    public CompletableFuture<java.util.Map<String, String>> storeIds() {
        java.util.Map<String, CompletableFuture<RegionsResponse>> asked = new java.util.TreeMap<>();
        for (String n : targets(null)) {
            asked.put(n, transport.call(n, RegionsRequest.getDefaultInstance(), config.requestTimeoutMs()));
        }
        return CompletableFuture.allOf(asked.values().stream().map(f -> f.handle((r, e) -> null))
                .toArray(CompletableFuture[]::new)).thenApply(v -> {
                    java.util.Map<String, String> ids = new java.util.TreeMap<>();
                    asked.forEach((n, f) -> {
                        RegionsResponse r = f.isCompletedExceptionally() ? null : f.join();
                        if (r != null && !r.getStoreId().isEmpty()) {
                            ids.put(r.getNode().isEmpty() ? n : r.getNode(), r.getStoreId());
                        }
                    });
                    return ids;
                });
    }

    @Override
    public CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey) {
        return new RegionAdmin(root).split(regionId, atKey);
    }

    @Override
    public CompletableFuture<RegionInfo> merge(int leftId, int rightId) {
        return new RegionAdmin(root).merge(leftId, rightId);
    }

    @Override
    public CompletableFuture<RegionInfo> moveReplica(int regionId, String from, String to) {
        return new RegionAdmin(root).moveReplica(regionId, from, to);
    }

    @Override
    public CompletableFuture<RegionInfo> rebuildReplica(int regionId, String node) {
        return new RegionAdmin(root).rebuildReplica(regionId, node);
    }

    @Override
    public CompletableFuture<RegionInfo> addReplica(int regionId, String to) {
        return new RegionAdmin(root).addReplica(regionId, to);
    }

    @Override
    public CompletableFuture<RecoveryPlan> planRecovery(int regionId) {
        return new RegionRecovery(root).plan(regionId);
    }

    @Override
    public CompletableFuture<RecoverySurvey> surveyRecovery() {
        return new RegionRecovery(root).survey();
    }

    @Override
    public CompletableFuture<RegionInfo> recoverRegion(RecoveryPlan plan) {
        return new RegionRecovery(root).recover(plan);
    }

    @Override
    public CompletableFuture<MapRecoveryPlan> planMapRecovery() {
        return new MapRecovery(root).plan();
    }

    @Override
    public CompletableFuture<io.kvraft.common.proto.KvProto.ClusterResponse> recoverMap(MapRecoveryPlan plan) {
        return new MapRecovery(root).recover(plan);
    }

    @Override
    public CompletableFuture<io.kvraft.common.proto.KvProto.ClusterResponse> cluster() {
        return clusterAdmin.cluster();
    }

    @Override
    public CompletableFuture<io.kvraft.common.proto.KvProto.NodeStateResponse> nodeState(
            String endpoint, io.kvraft.common.proto.KvProto.NodeState state, boolean force) {
        return clusterAdmin.nodeState(endpoint, state, force);
    }

    @Override
    public CompletableFuture<List<RegionInfo>> regions() {
        return ask(targets(null), 0, null, new RegionViews()).thenApply(RegionsResponse::getRegionsList);
    }

    /** Closes the client; a read-mode view closes the client it was made from. */
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
        if (op.group != null && !sameRoute(op.group, route)) {
            op.result.completeExceptionally(new KvException(ErrorCode.INVALID_ARGUMENT,
                    "compareAndPutAll: its keys are no longer in one region (region " + route.regionId() + " changed)"));
            return;
        }
        RegionBatcher batcher = batchers.computeIfAbsent(route.regionId(), id -> new RegionBatcher(id, root, transport,
                config.batching(), config.requestTimeoutMs()));
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
        ErrorCode code = ErrorCode.fromWire(error.getCode());
        op.attempts++;
        long delay = retryDelay(route, target, error, op.attempts, unsent || op.idempotent(), op.deadlineNanos);
        if (delay == RetryPolicy.NO_RETRY) {
            op.result.completeExceptionally(new KvException(code, error.getDetail(), error.getLeaderHint()));
            return;
        }
        if (RetryPolicy.refreshesRoute(code)) {
            // the node that said the route is stale knows a newer one (or will, once it applies the split)
            refreshRoutes(target).whenComplete((v, e) -> schedule(op, delay));
        } else if (delay == 0) {
            dispatch(op);
        } else {
            schedule(op, delay);
        }
    }

    /**
     * Learns from a failed request (the leader hint, or that {@code target} is not the leader) and says how
     * long to wait before the next try, or {@link RetryPolicy#NO_RETRY}.
     */
    long retryDelay(Route route, String target, Error error, int attempts, boolean idempotent, long deadlineNanos) {
        ErrorCode code = ErrorCode.fromWire(error.getCode());
        String hint = error.getLeaderHint();
        if (route != null) {
            if (!hint.isEmpty() && !hint.equals(target)) {
                route.leader(hint);
            } else if (code != ErrorCode.BUSY) {
                route.leaderUnknown(target);
            }
        }
        return retry.delayNanos(code, attempts, !hint.isEmpty(), idempotent, System.nanoTime(), deadlineNanos);
    }

    private void schedule(PendingOp op, long delayNanos) {
        if (!later(() -> dispatch(op), delayNanos)) {
            op.result.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "client closed"));
        }
    }

    /** Runs {@code task} after {@code delayNanos} on the client's timer (at once when 0); false once closed. */
    @Override
    public boolean later(Runnable task, long delayNanos) {
        if (delayNanos == 0) {
            task.run();
            return true;
        }
        try {
            timer.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
            return true;
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            return false;
        }
    }

    /** Where a request of {@code mode} goes: the believed leader, or any replica for FOLLOWER and STALE reads. */
    static String target(Route route, ReadMode mode) {
        return mode == ReadMode.FOLLOWER || mode == ReadMode.STALE ? route.anyReplica() : route.target();
    }

    Transport transport() {
        return transport;
    }

    long requestTimeoutMs() {
        return config.requestTimeoutMs();
    }

    long operationTimeoutMs() {
        return config.operationTimeoutMs();
    }

    /** One refresh at a time; callers that arrive meanwhile share it. */
    CompletableFuture<Void> refreshRoutes() {
        return root.refreshRootRoutes(null);
    }

    /** As {@link #refreshRoutes()}, asking {@code first} (a host:port; null or empty: none) before the others. */
    CompletableFuture<Void> refreshRoutes(String first) {
        return root.refreshRootRoutes(first);
    }

    private synchronized CompletableFuture<Void> refreshRootRoutes(String first) {
        if (refreshing != null && !refreshing.isDone()) {
            return refreshing;
        }
        refreshing = lookUpRoutes(first).thenAccept(resp -> routes.update(resp.getRegionsList()));
        return refreshing;
    }

    /** The nodes this client knows of: the configured servers, then the replicas its routes name. */
    List<String> knownNodes() {
        return targets(null);
    }

    /** The nodes to ask, {@code first} (when given) first: the configured servers, then the replicas routes name. */
    private List<String> targets(String first) {
        Set<String> targets = new LinkedHashSet<>();
        if (first != null && !first.isEmpty()) {
            targets.add(first);
        }
        targets.addAll(config.servers());
        for (Route r : routes.routes()) {
            targets.addAll(r.info().getPeersList());
        }
        return new ArrayList<>(targets);
    }

    private static final RegionsRequest MAP_LOOKUP = RegionsRequest.newBuilder().setCluster(true).build();

    /**
     * The routes for a refresh. When {@code first}, a node that said a route is stale, is given: its own regions, when
     * they cover the key space (every node holds every region when there are no more nodes than replicas), so a
     * refresh after a split or a move costs one round trip to a node that knows, as before the map answered lookups.
     * Otherwise the cluster map's answer (any node answers it, from the map's leader), merged with {@code first}'s own
     * regions (the map hears from each node once per {@code placement.intervalMs}, so it can lag a split, merge or
     * move by that much; the newer view of each region wins, as {@link RegionViews} merges) when they cover the key
     * space; else, as before the map answered lookups, the nodes' own regions, merged node by node (an error, a
     * timeout, an older server, a map leader still waiting for reports). The route table then keeps a region of a
     * higher epoch than the answer's.
     */
    private CompletableFuture<RegionsResponse> lookUpRoutes(String first) {
        List<String> targets = targets(first);
        if (first == null || first.isEmpty()) {
            return mapOrNodes(targets, null);
        }
        return transport.<RegionsResponse>call(first, RegionsRequest.getDefaultInstance(), config.requestTimeoutMs())
                .handle((resp, err) -> err == null && ok(resp) ? resp : null)
                .thenCompose(own -> {
                    RegionViews views = new RegionViews();
                    if (own != null) {
                        views.add(own.getRegionsList());
                    }
                    return !views.isEmpty() && views.covers()
                            ? CompletableFuture.completedFuture(RegionsResponse.newBuilder().addAllRegions(views.regions())
                                    .build())
                            : mapOrNodes(targets, own);
                });
    }

    /** The map's regions merged with {@code own} (a node's own answer, or null) when they cover; else node by node. */
    private CompletableFuture<RegionsResponse> mapOrNodes(List<String> targets, RegionsResponse own) {
        return askMap(targets, 0, null).thenCompose(m -> {
            RegionViews nodes = new RegionViews();
            if (own != null) {
                nodes.add(own.getRegionsList());
            }
            if (m.views() == null) {
                return ask(targets, m.next(), m.last(), nodes);
            }
            RegionViews both = new RegionViews();
            both.add(m.views().regions());
            if (own != null) {
                both.add(own.getRegionsList());
            }
            if (both.covers()) {
                return CompletableFuture.completedFuture(RegionsResponse.newBuilder().addAllRegions(both.regions()).build());
            }
            // the node's newer regions leave a gap in the map's older view: merge the nodes' answers as before
            return ask(targets, 0, null, nodes);
        });
    }

    /** A route lookup from the cluster map: the map's regions when they cover the key space (else null), and
     *  where node-by-node asking goes on when they do not. */
    private record MapLookup(RegionViews views, int next, Throwable last) {
    }

    /**
     * Asks {@code targets} from the {@code i}-th on for the cluster map's regions ({@code RegionsRequest.cluster}): the
     * next node when one cannot be reached or is stopping; the first answer decides, and so does a timeout (at most
     * one wait is spent on the map). Node-by-node asking goes on from the node that answered, or past the one that
     * timed out: those before it just failed (when all did, it fails at once, as it would have).
     */
    private CompletableFuture<MapLookup> askMap(List<String> targets, int i, Throwable last) {
        if (i >= targets.size() || last != null && KvException.unwrap(last).permanent()) {
            return CompletableFuture.completedFuture(new MapLookup(null, i, last));
        }
        return transport.<RegionsResponse>call(targets.get(i), MAP_LOOKUP, mapLookupTimeoutMs())
                .handle((resp, err) -> {
                    if (err != null && KvException.unwrap(err).code() == ErrorCode.TIMEOUT) {
                        return CompletableFuture.completedFuture(new MapLookup(null, i + 1, err));
                    }
                    if (err != null || resp.getError().getCode() == KvProto.ErrorCode.SHUTTING_DOWN) {
                        return askMap(targets, i + 1, err != null ? err : new KvException(ErrorCode.SHUTTING_DOWN,
                                resp.getError().getDetail()));
                    }
                    RegionViews views = new RegionViews();
                    if (ok(resp)) {
                        // a server that predates map lookups answers its own regions: they may cover, too
                        views.add(resp.getRegionsList());
                    }
                    return CompletableFuture.completedFuture(new MapLookup(views.covers() ? views : null, i, last));
                }).thenCompose(f -> f);
    }

    /**
     * How long a refresh waits for the map's answer before it asks the nodes instead: the request timeout, at most
     * 2.5 s (a node relays a lookup to the map's leader for at most 1.5 s; a map leader stalled, in a long GC say,
     * must not stall every client's refresh for longer).
     */
    private long mapLookupTimeoutMs() {
        return Math.min(config.requestTimeoutMs(), 2_500);
    }

    private static boolean ok(RegionsResponse resp) {
        return !resp.hasError() || resp.getError().getCode() == KvProto.ErrorCode.OK;
    }

    /**
     * The cluster's regions as the cluster map's leader last heard of them from the nodes (a route lookup asked of
     * the servers in turn, relayed by the one asked to the map's leader); fails with the server's error when the map
     * cannot answer for the whole key space.
     */
    @Override
    public CompletableFuture<RegionsResponse> mapRegions() {
        return mapRegions(targets(null), 0, null);
    }

    private CompletableFuture<RegionsResponse> mapRegions(List<String> targets, int i, Throwable last) {
        if (i >= targets.size() || last != null && KvException.unwrap(last).permanent()) {
            return CompletableFuture.failedFuture(last != null ? KvException.unwrap(last)
                    : new KvException(ErrorCode.UNAVAILABLE, "no servers configured"));
        }
        return transport.<RegionsResponse>call(targets.get(i), MAP_LOOKUP, config.requestTimeoutMs())
                .handle((resp, err) -> {
                    if (err != null || resp.getError().getCode() == KvProto.ErrorCode.SHUTTING_DOWN) {
                        return mapRegions(targets, i + 1, err != null ? err : new KvException(ErrorCode.SHUTTING_DOWN,
                                resp.getError().getDetail()));
                    }
                    if (!ok(resp)) {
                        return CompletableFuture.<RegionsResponse>failedFuture(KvException.fromWire(resp.getError()));
                    }
                    if (resp.getMapLeader().isEmpty() && !resp.getFromCopy()) {
                        return CompletableFuture.<RegionsResponse>failedFuture(new KvException(ErrorCode.UNAVAILABLE,
                                "server " + targets.get(i) + " answers no route lookups from the cluster map (an older"
                                        + " version)"));
                    }
                    return CompletableFuture.completedFuture(resp);
                }).thenCompose(f -> f);
    }

    /**
     * Asks {@code targets} from the {@code i}-th on, merging their answers, until the merged map covers the key space
     * (with a replica of every region on every node, the first answer does); then, or when all were asked, answers
     * with what was merged, or fails when no one answered.
     */
    private CompletableFuture<RegionsResponse> ask(List<String> targets, int i, Throwable last, RegionViews views) {
        // a node that refused this client's TLS settings: the others share its CA and would refuse them too
        boolean refused = last != null && KvException.unwrap(last).permanent();
        if (!views.isEmpty() && (views.covers() || i >= targets.size() || refused)) {
            return CompletableFuture.completedFuture(RegionsResponse.newBuilder().addAllRegions(views.regions()).build());
        }
        if (i >= targets.size() || refused) {
            String detail = last == null ? "no servers configured"
                    : "no server answered of " + targets + "; last: " + KvException.unwrap(last).getMessage();
            KvException e = last != null && KvException.unwrap(last).permanent()
                    ? KvException.permanent(ErrorCode.UNAVAILABLE, detail) : new KvException(ErrorCode.UNAVAILABLE, detail);
            return CompletableFuture.failedFuture(e);
        }
        return transport.<RegionsResponse>call(targets.get(i), RegionsRequest.getDefaultInstance(), config.requestTimeoutMs())
                .handle((resp, err) -> {
                    if (err == null && (!resp.hasError() || resp.getError().getCode() == KvProto.ErrorCode.OK)
                            && resp.getRegionsCount() > 0) {
                        views.add(resp.getRegionsList());
                        // nodes that joined after this client was configured: learned from the replicas' lists
                        for (RegionInfo r : resp.getRegionsList()) {
                            for (String p : r.getPeersList()) {
                                if (!targets.contains(p)) {
                                    targets.add(p);
                                }
                            }
                        }
                        return ask(targets, i + 1, last, views);
                    }
                    return ask(targets, i + 1, err != null ? err : new KvException(
                            ErrorCode.fromWire(resp.getError().getCode()), resp.getError().getDetail()), views);
                }).thenCompose(f -> f);
    }

    Error transportError(Throwable err) {
        KvException e = KvException.unwrap(err);
        return localError(e.code(), e.getMessage());
    }

    Error localError(ErrorCode code, String detail) {
        return Error.newBuilder().setCode(code.toWire()).setDetail(detail).build();
    }

    private static final int MAX_CAS_GROUP = 1000;

    private boolean sameRoute(List<WriteOp> ops, Route route) {
        for (WriteOp op : ops) {
            Route r = routes.lookup(op.getKey().toByteArray());
            if (r == null || r.regionId() != route.regionId()) {
                return false;
            }
        }
        return true;
    }

    /** Why [start, end) is not a range (null when it is): a bound too long to be a key's neighbour, or start above end. */
    private static String checkRange(byte[] start, byte[] end) {
        if (end.length > 0 && Arrays.compareUnsigned(start, end) > 0) {
            return "range start " + printable(start) + " is above its end " + printable(end);
        }
        return null;
    }

    private static boolean isEmptyRange(byte[] start, byte[] end) {
        return end.length > 0 && Arrays.compareUnsigned(start, end) >= 0;
    }

    private static <T> CompletableFuture<T> invalid(String why) {
        return CompletableFuture.failedFuture(new KvException(ErrorCode.INVALID_ARGUMENT, why));
    }

    /** A key for an error message: text when it is printable ASCII, else hex. */
    static String printable(byte[] key) {
        for (byte b : key) {
            if (b < 0x20 || b > 0x7e) {
                return "0x" + java.util.HexFormat.of().formatHex(key);
            }
        }
        return "'" + new String(key, java.nio.charset.StandardCharsets.US_ASCII) + "'";
    }

    @Override
    public long deadline() {
        return System.nanoTime() + config.operationTimeoutMs() * 1_000_000L;
    }

    private static ByteString bytes(byte[] b) {
        return b == null ? ByteString.EMPTY : ByteString.copyFrom(b);
    }
}
