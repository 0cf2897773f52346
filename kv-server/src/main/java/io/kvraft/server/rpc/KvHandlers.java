package io.kvraft.server.rpc;

import io.kvraft.common.Errors;

import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.rpc.RpcContext;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.Status;
import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.AdminResponse;
import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.ReadRequest;
import io.kvraft.common.proto.KvProto.ReadResponse;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.proto.KvProto.ScanRequest;
import io.kvraft.common.proto.KvProto.ScanResponse;
import io.kvraft.common.proto.KvProto.TransferLeaderRequest;
import io.kvraft.common.proto.KvProto.SplitRequest;
import io.kvraft.common.proto.KvProto.SplitResponse;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.server.config.ServerConfig.LimitsConfig;
import io.kvraft.server.raft.Processors;
import io.kvraft.server.coord.Locks;
import io.kvraft.server.coord.Sequences;
import io.kvraft.server.metrics.KvMetrics;
import io.kvraft.server.region.Region;
import io.kvraft.server.host.RegionHost;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.ScanPage;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * The KV request handlers on the node's shared RPC server. Every request is validated here, on the
 * leader, before it reaches the log: region, epoch, leadership, key and value sizes, key range.
 * Handlers never block, so they run on bolt's I/O threads.
 */
public final class KvHandlers {


    private final RegionHost host;
    private final KvStore store;
    private final LimitsConfig limits;
    private volatile boolean shuttingDown;
    private volatile boolean stopped;
    /** KV requests received and not yet answered: a graceful shutdown waits for them. */
    private final LongAdder inFlight = new LongAdder();

    private final KvMetrics metrics;
    private final int metricsPort;
    private final String storeId;
    private volatile io.kvraft.server.shape.Splitter splitter;
    private volatile io.kvraft.server.shape.Merger merger;
    private volatile io.kvraft.server.shape.ReplicaMover mover;
    private volatile io.kvraft.server.shape.RegionRecovery recovery;
    /** Answers route lookups from the cluster map (RegionsRequest.cluster): the node's MetaService; null: none. */
    private volatile java.util.function.Function<RegionsRequest, CompletableFuture<RegionsResponse>> clusterRegions;

    public KvHandlers(RegionHost host, KvStore store, LimitsConfig limits) {
        this(host, store, limits, new KvMetrics(), 0, "");
    }

    /**
     * @param metricsPort announced in the Regions answer, so tools find the node's metrics; 0 = none
     * @param storeId     the data directory's id, announced in the Regions answer
     */
    public KvHandlers(RegionHost host, KvStore store, LimitsConfig limits, KvMetrics metrics, int metricsPort,
                      String storeId) {
        this.host = host;
        this.store = store;
        this.limits = limits;
        this.metrics = metrics;
        this.metricsPort = metricsPort;
        this.storeId = storeId;
    }

    String storeId() {
        return storeId;
    }

    LimitsConfig limits() {
        return limits;
    }

    RegionHost host() {
        return host;
    }

    /** Counts a request in flight until the returned action runs (a graceful shutdown waits for it). */
    Runnable track() {
        inFlight.increment();
        return inFlight::decrement;
    }

    /** The error for a request to {@code region} that needs its leader, or null when this node may serve it. */
    Error checkRegionLeader(Region region, int regionId, long epoch) {
        Error error = checkRegion(region, regionId, epoch);
        return error != null ? error : checkLeader(region);
    }

    public void register(RpcServer server) {
        server.registerProcessor(Processors.direct(WriteRequest.class, this::write));
        server.registerProcessor(Processors.direct(ReadRequest.class, this::read));
        server.registerProcessor(Processors.direct(ScanRequest.class, this::scan));
        server.registerProcessor(Processors.direct(RegionsRequest.class, this::regions));
        server.registerProcessor(Processors.direct(TransferLeaderRequest.class, this::transferLeader));
        server.registerProcessor(Processors.direct(SplitRequest.class, this::split));
        server.registerProcessor(Processors.direct(io.kvraft.common.proto.KvProto.MergeRequest.class, this::merge));
        server.registerProcessor(Processors.direct(io.kvraft.common.proto.KvProto.MergeStepRequest.class, this::mergeStep));
        server.registerProcessor(Processors.direct(io.kvraft.common.proto.KvProto.MoveReplicaRequest.class, this::moveReplica));
        server.registerProcessor(Processors.direct(io.kvraft.common.proto.KvProto.ReplicaRequest.class, this::replica));
        server.registerProcessor(Processors.direct(io.kvraft.common.proto.KvProto.RecoverRegionRequest.class, this::recover));
    }

    /** Who answers route lookups from the cluster map ({@code RegionsRequest.cluster}): the node's cluster map service. */
    public void clusterRegions(java.util.function.Function<RegionsRequest, CompletableFuture<RegionsResponse>> answer) {
        this.clusterRegions = answer;
    }

    public void mover(io.kvraft.server.shape.ReplicaMover mover) {
        this.mover = mover;
    }

    /** The answer of a node that is shutting down, or has no part to do an admin operation ("move replicas"). */
    private Error notNow(String doing) {
        return Errors.of(shuttingDown ? ErrorCode.SHUTTING_DOWN : ErrorCode.UNAVAILABLE,
                "node " + host.endpoint() + " does not " + doing + " now");
    }

    public void recovery(io.kvraft.server.shape.RegionRecovery recovery) {
        this.recovery = recovery;
    }

    /** A forced recovery's step on a surviving replica (see RegionRecovery): answered at once. */
    private void recover(RpcContext ctx, io.kvraft.common.proto.KvProto.RecoverRegionRequest req) {
        io.kvraft.server.shape.RegionRecovery r = recovery;
        if (shuttingDown || r == null) {
            ctx.sendResponse(io.kvraft.common.proto.KvProto.RecoverRegionResponse.newBuilder()
                    .setError(notNow("recover regions")).build());
            return;
        }
        ctx.sendResponse(r.recover(req));
    }

    private void moveReplica(RpcContext ctx, io.kvraft.common.proto.KvProto.MoveReplicaRequest req) {
        io.kvraft.server.shape.ReplicaMover m = mover;
        if (shuttingDown || m == null) {
            ctx.sendResponse(io.kvraft.common.proto.KvProto.MoveReplicaResponse.newBuilder()
                    .setError(notNow("move replicas")).build());
            return;
        }
        Runnable done = track();
        m.move(req).whenComplete((resp, e) -> {
            try {
                ctx.sendResponse(e == null ? resp : io.kvraft.common.proto.KvProto.MoveReplicaResponse.newBuilder()
                        .setError(Errors.of(ErrorCode.INTERNAL, "move failed: " + e)).build());
            } finally {
                done.run();
            }
        });
    }

    /** A step of a replica move asked by the region's leader: start an empty replica here, or drop this node's. */
    private void replica(RpcContext ctx, io.kvraft.common.proto.KvProto.ReplicaRequest req) {
        Error error = null;
        int id = req.getRegion().getId();
        if (shuttingDown) {
            error = Errors.of(ErrorCode.SHUTTING_DOWN, "", "node " + host.endpoint() + " is shutting down");
        } else {
            try {
                if (req.getOp() == io.kvraft.common.proto.KvProto.ReplicaRequest.Op.ADD) {
                    host.addReplica(req.getRegion());
                } else {
                    host.dropReplica(id, req.getRegion().getPeersList());
                }
            } catch (IllegalArgumentException e) {
                error = Errors.of(ErrorCode.INVALID_ARGUMENT, e.getMessage());
            } catch (RuntimeException e) {
                org.slf4j.LoggerFactory.getLogger(KvHandlers.class).warn("region {}: replica {} failed: {}", id, req.getOp(),
                        e.toString());
                error = Errors.of(ErrorCode.INTERNAL, "region " + id + ": replica " + req.getOp() + " failed on "
                        + host.endpoint() + ": " + e.getMessage());
            }
        }
        AdminResponse.Builder b = AdminResponse.newBuilder();
        if (error != null) {
            b.setError(error);
        }
        ctx.sendResponse(b.build());
    }

    /** A merge step asked by the leader of the region merged into: proposed here when this node leads the region. */
    private void mergeStep(RpcContext ctx, io.kvraft.common.proto.KvProto.MergeStepRequest req) {
        Region region = host.region(req.getRegionId());
        WriteOpType type = req.getOp().getType();
        Error error = null;
        if (shuttingDown) {
            error = Errors.of(ErrorCode.SHUTTING_DOWN, "", "node " + host.endpoint() + " is shutting down");
        } else if (region == null) {
            error = Errors.of(ErrorCode.REGION_NOT_FOUND, "no region " + req.getRegionId() + " on " + host.endpoint());
        } else if (type != WriteOpType.PREPARE_MERGE && type != WriteOpType.MERGE_ROLLBACK) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "a merge step is PREPARE_MERGE or MERGE_ROLLBACK, not " + type);
        } else {
            error = checkLeader(region);
        }
        if (error == null && type == WriteOpType.PREPARE_MERGE && region.moving()) {
            error = Errors.of(ErrorCode.BUSY, "region " + region.id() + " is moving a replica; merge after that");
        }
        if (error == null && type == WriteOpType.PREPARE_MERGE) {
            java.util.Set<String> mine = new java.util.HashSet<>();
            try {
                region.node().listPeers().forEach(p -> mine.add(p.getEndpoint().toString()));
            } catch (IllegalStateException notLeader) {
                error = checkLeader(region);
            }
            if (error == null && !mine.equals(new java.util.HashSet<>(req.getPeersList()))) {
                error = Errors.of(ErrorCode.INVALID_ARGUMENT, "region " + region.id() + " is on " + mine
                        + ", the region it would merge into on " + req.getPeersList() + ": only regions on the same peers merge");
            }
        }
        if (error != null) {
            ctx.sendResponse(io.kvraft.common.proto.KvProto.MergeStepResponse.newBuilder().setError(error).build());
            return;
        }
        Runnable done = track();
        region.propose(req.getOp(), (status, changed, state, other) -> {
            try {
                io.kvraft.common.proto.KvProto.MergeStepResponse.Builder b =
                        io.kvraft.common.proto.KvProto.MergeStepResponse.newBuilder();
                if (status.isOk()) {
                    b.setChanged(changed).setState(state);
                } else {
                    b.setError(region.errorOf(status));
                }
                ctx.sendResponse(b.build());
            } finally {
                done.run();
            }
        });
    }

    /** Where merge requests go (null: they are answered UNAVAILABLE). Set before the node serves. */
    public void merger(io.kvraft.server.shape.Merger merger) {
        this.merger = merger;
    }

    private void merge(RpcContext ctx, io.kvraft.common.proto.KvProto.MergeRequest req) {
        io.kvraft.server.shape.Merger m = merger;
        if (shuttingDown || m == null) {
            ctx.sendResponse(io.kvraft.common.proto.KvProto.MergeResponse.newBuilder()
                    .setError(notNow("merge regions")).build());
            return;
        }
        Runnable done = track();
        m.merge(req.getLeftId(), req.getRightId(), req.getLeftEpoch(), req.getRightEpoch()).whenComplete((resp, e) -> {
            try {
                ctx.sendResponse(e == null ? resp : io.kvraft.common.proto.KvProto.MergeResponse.newBuilder()
                        .setError(Errors.of(ErrorCode.INTERNAL, "merge failed: " + e)).build());
            } finally {
                done.run();
            }
        });
    }

    /** Where split requests go (null: they are answered UNAVAILABLE). Set before the node serves. */
    public void splitter(io.kvraft.server.shape.Splitter splitter) {
        this.splitter = splitter;
    }

    private void split(RpcContext ctx, SplitRequest req) {
        io.kvraft.server.shape.Splitter s = splitter;
        if (shuttingDown || s == null) {
            ctx.sendResponse(SplitResponse.newBuilder().setError(Errors.of(shuttingDown ? ErrorCode.SHUTTING_DOWN
                    : ErrorCode.UNAVAILABLE, "node " + host.endpoint() + " does not split regions now")).build());
            return;
        }
        Runnable done = track();
        s.split(req.getRegionId(), req.getRegionEpoch(), req.getSplitKey().toByteArray()).whenComplete((resp, e) -> {
            try {
                ctx.sendResponse(e == null ? resp : SplitResponse.newBuilder()
                        .setError(Errors.of(ErrorCode.INTERNAL, "split failed: " + e)).build());
            } finally {
                done.run();
            }
        });
    }

    /** From now on every KV request is answered SHUTTING_DOWN; those already accepted still finish. */
    public void beginShutdown() {
        shuttingDown = true;
    }

    /**
     * The node has stopped, but its JVM runs on (a node stopped and started again in one process, as tests do): bolt
     * leaves open the connections this node's server accepted, on the JVM's shared event loop, so a client that had
     * one went on asking this stopped node (answered SHUTTING_DOWN or NOT_LEADER for its whole deadline) instead of
     * the node started again on the same port. From now on each answer closes its connection, a moment after it was
     * sent, so the client connects again.
     */
    public void stopped() {
        beginShutdown();
        stopped = true;
    }

    private void closeIfStopped(RpcContext ctx) {
        if (stopped) {
            CompletableFuture.delayedExecutor(100, java.util.concurrent.TimeUnit.MILLISECONDS).execute(() -> {
                try {
                    ctx.getConnection().close();
                } catch (RuntimeException alreadyClosed) {
                    // nothing to close
                }
            });
        }
    }

    /** KV requests accepted and not answered yet. */
    public long inFlight() {
        return inFlight.sum();
    }

    /**
     * The answer to a write request: counted in flight until sent, then timed and counted by op type
     * (one lambda per request, as the plain {@code ctx::sendResponse} was).
     */
    /** @param reads gets that ride on the request's entry */
    private Consumer<WriteResponse> writeReply(RpcContext ctx, int puts, int deletes, int cas, int reads) {
        inFlight.increment(); // before the shuttingDown check, so a drain that saw zero cannot miss this request
        long start = System.nanoTime();
        return resp -> {
            try {
                ctx.sendResponse(resp);
            } finally {
                inFlight.decrement();
                closeIfStopped(ctx);
                ErrorCode error = resp.hasError() ? resp.getError().getCode() : null;
                metrics.written(start, puts, deletes, cas, error);
                if (reads > 0 && error == null) { // a failed request's error is counted once, above
                    metrics.read(start, reads, resp.hasReadError() ? resp.getReadError().getCode() : null);
                }
            }
        };
    }

    private Consumer<ScanResponse> scanReply(RpcContext ctx) {
        inFlight.increment();
        long start = System.nanoTime();
        return resp -> {
            try {
                ctx.sendResponse(resp);
            } finally {
                inFlight.decrement();
                closeIfStopped(ctx);
                metrics.scanned(start, resp.getPairsCount(), resp.hasError() ? resp.getError().getCode() : null);
            }
        };
    }

    private Consumer<ReadResponse> readReply(RpcContext ctx, int keys) {
        inFlight.increment();
        long start = System.nanoTime();
        return resp -> {
            try {
                ctx.sendResponse(resp);
            } finally {
                inFlight.decrement();
                closeIfStopped(ctx);
                metrics.read(start, keys, resp.hasError() ? resp.getError().getCode() : null);
            }
        };
    }

    private void write(RpcContext ctx, WriteRequest req) {
        int puts = 0;
        int deletes = 0;
        int cas = 0;
        boolean returnsValues = false;
        for (int i = 0; i < req.getOpsCount(); i++) {
            switch (req.getOps(i).getType()) {
                case PUT -> puts++;
                case GET_AND_PUT, PUT_IF_ABSENT -> {
                    puts++;
                    returnsValues = true;
                }
                case DELETE, DELETE_RANGE -> deletes++;
                case COMPARE_AND_PUT -> cas++;
                default -> { }
            }
        }
        write(req, returnsValues, writeReply(ctx, puts, deletes, cas, req.getReadKeysCount()), LEADER_WAITS);
    }

    /** @param waits how often more a request that finds no leader here may wait for one */
    private void write(WriteRequest req, boolean returnsValues, Consumer<WriteResponse> reply, int waits) {
        Region region = host.region(req.getRegionId());
        Error error = checkRegion(region, req.getRegionId(), req.getRegionEpoch(), req.getRegionConfVer());
        int bytes = 0;
        if (error == null) {
            if (req.getOpsCount() == 0) {
                error = Errors.of(ErrorCode.INVALID_ARGUMENT, "empty write batch");
            } else if (req.getOpsCount() + req.getReadKeysCount() > limits.maxBatchOps()) {
                error = Errors.of(ErrorCode.INVALID_ARGUMENT, "batch of " + req.getOpsCount() + " ops"
                        + (req.getReadKeysCount() > 0 ? " and " + req.getReadKeysCount() + " reads" : "")
                        + " exceeds limits.maxBatchOps " + limits.maxBatchOps());
            }
        }
        for (int i = 0; error == null && i < req.getReadKeysCount(); i++) {
            error = checkKey(region, req.getReadKeys(i));
        }
        for (int i = 0; error == null && i < req.getOpsCount(); i++) {
            WriteOp op = req.getOps(i);
            error = checkOp(region, req, i);
            bytes += op.getKey().size() + op.getValue().size() + op.getExpect().size() + op.getEndKey().size();
        }
        if (error == null) {
            error = checkLeader(region);
        }
        if (error != null) {
            if (waits > 0 && waitsForLeader(region, error, () -> write(req, returnsValues, reply, waits - 1))) {
                return;
            }
            reply.accept(WriteResponse.newBuilder().setError(error).build());
            return;
        }
        region.write(req.getOpsList(), req.getReadKeysList(), bytes, returnsValues, reply);
    }

    private void read(RpcContext ctx, ReadRequest req) {
        read(req, readReply(ctx, req.getKeysCount()), LEADER_WAITS);
    }

    private void read(ReadRequest req, Consumer<ReadResponse> reply, int waits) {
        Region region = host.region(req.getRegionId());
        Error error = checkRegion(region, req.getRegionId(), req.getRegionEpoch(), req.getRegionConfVer());
        if (error == null && req.getKeysCount() == 0) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "empty read batch");
        }
        if (error == null && req.getKeysCount() > limits.maxBatchOps()) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "batch exceeds limits.maxBatchOps " + limits.maxBatchOps());
        }
        for (int i = 0; error == null && i < req.getKeysCount(); i++) {
            error = checkKey(region, req.getKeys(i));
        }
        if (error == null) {
            error = checkReadMode(region, req.getMode());
        }
        if (error != null) {
            if (waits > 0 && waitsForLeader(region, error, () -> read(req, reply, waits - 1))) {
                return;
            }
            reply.accept(ReadResponse.newBuilder().setError(error).build());
            return;
        }
        region.read(region.gets(req.getKeysList(), store, reply), req.getMode());
    }

    private void scan(RpcContext ctx, ScanRequest req) {
        scan(req, scanReply(ctx), LEADER_WAITS);
    }

    private void scan(ScanRequest req, Consumer<ScanResponse> reply, int waits) {
        Region region = host.region(req.getRegionId());
        Error error = checkRegion(region, req.getRegionId(), req.getRegionEpoch(), req.getRegionConfVer());
        KeyRange range = new KeyRange(req.getStartKey().toByteArray(), req.getEndKey().toByteArray());
        if (error == null) {
            error = checkRange(region, range, req.getStartKey(), req.getEndKey());
        }
        if (error == null && req.getLimit() < 1) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "scan limit must be at least 1, got " + req.getLimit());
        }
        if (error == null) {
            // a lock's time left is told by the leader's lease clock, so lock listings are the leader's
            error = req.getLocks() ? checkLeader(region) : checkReadMode(region, req.getMode());
        }
        if (error != null) {
            if (waits > 0 && waitsForLeader(region, error, () -> scan(req, reply, waits - 1))) {
                return;
            }
            reply.accept(ScanResponse.newBuilder().setError(error).build());
            return;
        }
        if (req.getLocks()) {
            int limit = req.getLimit() < 0 ? limits.maxBatchOps() : Math.min(req.getLimit(), limits.maxBatchOps());
            ScanPage.Builder page = new ScanPage.Builder(limit, limits.maxScanBytes(), false);
            region.read(region.locks(range, page, store, reply), ReadMode.READ_INDEX);
            return;
        }
        // an unsigned limit above maxBatchOps (or above Integer.MAX_VALUE, negative here) is capped: the page ends early
        int limit = req.getLimit() < 0 ? limits.maxBatchOps() : Math.min(req.getLimit(), limits.maxBatchOps());
        ScanPage.Builder page = new ScanPage.Builder(limit, limits.maxScanBytes(), req.getKeysOnly());
        region.read(region.scan(range, req.getReverse(), page, store, reply), req.getMode());
    }

    private void regions(RpcContext ctx, RegionsRequest req) {
        if (shuttingDown) { // so clients take routes, and peers' balancers take their cue, from nodes that stay
            ctx.sendResponse(RegionsResponse.newBuilder().setNode(host.endpoint())
                    .setError(Errors.of(ErrorCode.SHUTTING_DOWN, "node " + host.endpoint() + " is shutting down"))
                    .build());
            closeIfStopped(ctx);
            return;
        }
        if (req.getCluster()) {
            clusterRegions(ctx, req);
            return;
        }
        if (host.layoutPending()) {
            // a new data directory waits for the cluster map before it makes its regions (or is making them now): a
            // partial list would look like a key space with gaps; clients ask another node
            ctx.sendResponse(RegionsResponse.newBuilder().setNode(host.endpoint())
                    .setError(Errors.of(ErrorCode.NO_LEADER, "node " + host.endpoint() + " is starting: it makes"
                            + " its regions once the cluster map answers"))
                    .build());
            return;
        }
        RegionsResponse.Builder b = RegionsResponse.newBuilder()
                .setNode(host.endpoint())
                .setWriteOps(host.writeOps())
                .setReadOps(host.readOps())
                .setMetricsPort(metricsPort)
                .setStoreId(storeId);
        for (Region r : host.regions()) {
            b.addRegions(r.info());
        }
        b.addAllRegions(host.starting());
        ctx.sendResponse(b.build());
    }

    /** A route lookup from the cluster map: answered (or relayed to the map's leader) by the cluster map service. */
    private void clusterRegions(RpcContext ctx, RegionsRequest req) {
        java.util.function.Function<RegionsRequest, CompletableFuture<RegionsResponse>> answer = clusterRegions;
        if (answer == null) {
            ctx.sendResponse(RegionsResponse.newBuilder().setNode(host.endpoint()).setError(Errors.of(
                    ErrorCode.UNAVAILABLE, "node " + host.endpoint() + " has no cluster map to answer from")).build());
            return;
        }
        Runnable done = track();
        answer.apply(req).whenComplete((resp, e) -> {
            try {
                ctx.sendResponse(e == null ? resp : RegionsResponse.newBuilder().setNode(host.endpoint())
                        .setError(Errors.of(ErrorCode.INTERNAL, "route lookup failed: " + e)).build());
            } finally {
                done.run();
            }
        });
    }

    private void transferLeader(RpcContext ctx, TransferLeaderRequest req) {
        Region region = host.region(req.getRegionId());
        // a region merging into another takes no requests, but moves its leader: a merge's rollback is proposed there
        Error error = region != null && !shuttingDown && region.mergingInto() != 0 ? null
                : checkRegion(region, req.getRegionId(), region == null ? 0 : region.epoch());
        PeerId target = new PeerId();
        if (error == null && (!target.parse(req.getTarget()) || !region.peers().contains(req.getTarget()))) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "target '" + req.getTarget() + "' is not a peer of region "
                    + req.getRegionId() + " " + region.peers());
        }
        if (error == null) {
            error = checkLeader(region);
        }
        if (error == null) {
            Status st = region.node().transferLeadershipTo(target);
            if (!st.isOk()) {
                error = Errors.of(ErrorCode.BUSY, region.leaderHint(), "transfer refused: " + st.getErrorMsg());
            }
        }
        AdminResponse.Builder b = AdminResponse.newBuilder();
        if (error != null) {
            b.setError(error);
        }
        ctx.sendResponse(b.build());
    }

    private Error checkRegion(Region region, int regionId, long epoch) {
        return checkRegion(region, regionId, epoch, 0);
    }

    /**
     * @param confVer the region's conf version the client's route has (0: not checked); an older one than this
     *                replica's is answered STALE_EPOCH, so the client asks for the region's replicas again. A newer
     *                one is no error: this replica has not applied the change yet.
     */
    private Error checkRegion(Region region, int regionId, long epoch, long confVer) {
        if (shuttingDown) {
            // the leader hint sends the client straight to the new leader once this node has handed it over
            String hint = region == null ? "" : region.leaderHint();
            return Errors.of(ErrorCode.SHUTTING_DOWN, hint.equals(host.endpoint()) ? "" : hint,
                    "node " + host.endpoint() + " is shutting down");
        }
        if (region == null) {
            return Errors.of(ErrorCode.REGION_NOT_FOUND, "no region " + regionId + " on " + host.endpoint());
        }
        long current = region.epoch();
        if (epoch != current) {
            return Errors.of(ErrorCode.STALE_EPOCH, "region " + regionId + " is at epoch " + current + " "
                    + region.range() + ", request has " + epoch);
        }
        if (confVer != 0 && confVer < region.confVer()) {
            return Errors.of(ErrorCode.STALE_EPOCH, "region " + regionId + "'s replicas changed: conf version "
                    + region.confVer() + " " + region.peers() + ", request has " + confVer);
        }
        if (region.mergingInto() != 0) {
            return region.merging();
        }
        return null;
    }

    private Error checkKey(Region region, ByteString key) {
        if (key.isEmpty()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "empty key");
        }
        if (key.size() > limits.maxKeyBytes()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT,
                    "key of " + key.size() + " bytes exceeds limits.maxKeyBytes " + limits.maxKeyBytes());
        }
        if (!region.range().contains(key.toByteArray())) {
            return Errors.of(ErrorCode.KEY_OUT_OF_RANGE, "key is outside region " + region.id() + " " + region.range());
        }
        return null;
    }

    /** Checks op {@code i} of a write request: type, key or range, sizes, and compare-and-put groups. */
    private Error checkOp(Region region, WriteRequest req, int i) {
        WriteOp op = req.getOps(i);
        switch (op.getType()) {
            case PUT, GET_AND_PUT, PUT_IF_ABSENT, DELETE, COMPARE_AND_PUT -> {
                Error error = checkKey(region, op.getKey());
                if (error != null) {
                    return error;
                }
            }
            case DELETE_RANGE -> {
                return checkRange(region, new KeyRange(op.getKey().toByteArray(), op.getEndKey().toByteArray()),
                        op.getKey(), op.getEndKey());
            }
            case GET_SEQUENCE, RESET_SEQUENCE -> {
                Error error = checkKey(region, op.getKey());
                if (error == null && op.getType() == WriteOpType.RESET_SEQUENCE
                        && op.getKey().equals(io.kvraft.server.shape.Splitter.REGION_ID_SEQUENCE)) {
                    error = Errors.of(ErrorCode.INVALID_ARGUMENT, "the sequence of region ids is reserved: it is"
                            + " never reset, so no region id is handed out twice");
                }
                if (error == null && Long.compareUnsigned(op.getStep(), Sequences.MAX_STEP) > 0) {
                    error = Errors.of(ErrorCode.INVALID_ARGUMENT, "sequence step " + Long.toUnsignedString(op.getStep())
                            + " exceeds " + Sequences.MAX_STEP);
                }
                return error;
            }
            case LOCK_ACQUIRE, LOCK_RENEW, LOCK_RELEASE -> {
                Error error = checkKey(region, op.getKey());
                return error != null ? error : checkLockOp(op);
            }
            case RESTORE_COORD -> {
                Error error = checkKey(region, op.getKey());
                return error != null ? error : checkRestoredRecord(op);
            }
            case BACKUP_POINT, SPLIT, CONF_CHANGED -> {
                return Errors.of(ErrorCode.INVALID_ARGUMENT, "op " + i + ": " + op.getType()
                        + " entries are proposed by region leaders only");
            }
            default -> {
                return Errors.of(ErrorCode.INVALID_ARGUMENT, "op " + i + " has an unknown type " + op.getTypeValue());
            }
        }
        if (op.getType() != WriteOpType.DELETE && op.getValue().size() > limits.maxValueBytes()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT,
                    "value of " + op.getValue().size() + " bytes exceeds limits.maxValueBytes " + limits.maxValueBytes());
        }
        if (op.getType() == WriteOpType.COMPARE_AND_PUT && op.getExpect().size() > limits.maxValueBytes()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "expected value exceeds limits.maxValueBytes");
        }
        if (op.getGroupSize() > 1) {
            return checkGroup(req, i);
        }
        return null;
    }

    /** A RESTORE_COORD's value: a CoordRecord (of sane size) whose counters are numbers a sequence or lock can reach. */
    private Error checkRestoredRecord(WriteOp op) {
        if (op.getValue().size() > limits.maxValueBytes()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT,
                    "value of " + op.getValue().size() + " bytes exceeds limits.maxValueBytes " + limits.maxValueBytes());
        }
        CoordRecord record;
        try {
            record = CoordRecord.parseFrom(op.getValue());
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "a restored system record must be a CoordRecord: "
                    + e.getMessage());
        }
        if (record.getNextSequence() < 0 || record.getLockToken() < 0 || record.getLockTokenFloor() < 0) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "a restored system record's next_sequence and lock_token"
                    + " must be below 2^63");
        }
        return null;
    }

    /** A lock op's holder, lease and token: present where the op needs them, and of sane size. */
    private static Error checkLockOp(WriteOp op) {
        if (op.getHolder().isEmpty() || op.getHolder().size() > Locks.MAX_HOLDER_BYTES) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "lock holder must have 1 to " + Locks.MAX_HOLDER_BYTES
                    + " bytes, got " + op.getHolder().size());
        }
        if (op.getType() != WriteOpType.LOCK_RELEASE
                && (op.getLeaseMs() == 0 || Long.compareUnsigned(op.getLeaseMs(), Locks.MAX_LEASE_MS) > 0)) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "lock lease must be 1 to " + Locks.MAX_LEASE_MS
                    + " ms, got " + Long.toUnsignedString(op.getLeaseMs()));
        }
        if (op.getType() != WriteOpType.LOCK_ACQUIRE && op.getToken() == 0) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "a lock renewal or release needs the holding's fencing token");
        }
        return null;
    }

    /** A compare-and-put group: all its ops follow in this request, are compare-and-puts, and name distinct keys. */
    private static Error checkGroup(WriteRequest req, int first) {
        WriteOp op = req.getOps(first);
        int size = op.getGroupSize();
        if (op.getType() != WriteOpType.COMPARE_AND_PUT) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "op " + first + ": only compare-and-puts form groups");
        }
        if ((long) first + size > req.getOpsCount()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "op " + first + " opens a group of " + size
                    + " ops, but the request has only " + (req.getOpsCount() - first) + " from there");
        }
        java.util.Set<ByteString> keys = new java.util.HashSet<>();
        for (int j = first; j < first + size; j++) {
            WriteOp member = req.getOps(j);
            if (member.getType() != WriteOpType.COMPARE_AND_PUT || (j > first && member.getGroupSize() > 1)) {
                return Errors.of(ErrorCode.INVALID_ARGUMENT, "op " + j + " in the group opened by op " + first
                        + " is not a plain compare-and-put");
            }
            if (!keys.add(member.getKey())) {
                return Errors.of(ErrorCode.INVALID_ARGUMENT, "the group opened by op " + first
                        + " names a key twice");
            }
        }
        return null;
    }

    /**
     * A range in the region: bounds of legal size (one byte more than a key, to name the key just past one),
     * start below end, and no bound past the region's.
     */
    private Error checkRange(Region region, KeyRange range, ByteString start, ByteString end) {
        if (start.size() > limits.maxKeyBytes() + 1 || end.size() > limits.maxKeyBytes() + 1) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "a range bound exceeds limits.maxKeyBytes "
                    + limits.maxKeyBytes() + " + 1");
        }
        if (range.isEmpty()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "range start is not below its end: " + range);
        }
        if (!region.range().covers(range)) {
            return Errors.of(ErrorCode.KEY_OUT_OF_RANGE, "range " + range + " is not inside region "
                    + region.id() + " " + region.range());
        }
        return null;
    }

    /** Leader-only modes need this node to lead; FOLLOWER and STALE are served by any replica. */
    private static Error checkReadMode(Region region, ReadMode mode) {
        return switch (mode) {
            case READ_INDEX, LEADER_LEASE -> checkLeader(region);
            case FOLLOWER, STALE -> null;
            default -> Errors.of(ErrorCode.INVALID_ARGUMENT, "unknown read mode " + mode);
        };
    }

    /**
     * Holds a request that found its region here with no known leader (NO_LEADER: an election, such as a new region's
     * first after a split) until this replica knows one; {@code retry} answers it then. False: answer now.
     */
    private static boolean waitsForLeader(Region region, Error error, Runnable retry) {
        return error.getCode() == ErrorCode.NO_LEADER && region != null && region.awaitLeader(retry);
    }

    /**
     * How often a request that finds its region here without a known leader is held for one: twice, since a leader
     * that hands its leadership over first steps down (the request is released, and the new leader is not known yet)
     * and learns the new leader a moment later.
     */
    private static final int LEADER_WAITS = 2;

    private static Error checkLeader(Region region) {
        if (region.isLeader()) {
            return null;
        }
        if (region.transferring()) {
            // jraft refuses writes while it hands the leadership over (0.1-0.3 s) and names itself the leader: the
            // client went straight back, three times, then paused 10, 20, 40 ... 320 ms, and its writes waited well
            // after the new leader was there. No leader is the truth for that moment: the request waits here for it.
            return Errors.of(ErrorCode.NO_LEADER, "", "region " + region.id() + ": its leadership is moving to "
                    + "another node");
        }
        String hint = region.leaderHint();
        return Errors.of(hint.isEmpty() ? ErrorCode.NO_LEADER : ErrorCode.NOT_LEADER, hint,
                "this node does not lead region " + region.id() + " (" + region.raftState() + ")");
    }
}
