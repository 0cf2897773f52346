package io.kvraft.server.rpc;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.rpc.RpcContext;
import com.alipay.sofa.jraft.rpc.RpcServer;
import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.AdminResponse;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.MergeRequest;
import io.kvraft.common.proto.KvProto.MergeResponse;
import io.kvraft.common.proto.KvProto.MergeStepRequest;
import io.kvraft.common.proto.KvProto.MergeStepResponse;
import io.kvraft.common.proto.KvProto.MoveReplicaRequest;
import io.kvraft.common.proto.KvProto.MoveReplicaResponse;
import io.kvraft.common.proto.KvProto.RecoverRegionRequest;
import io.kvraft.common.proto.KvProto.RecoverRegionResponse;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.proto.KvProto.ReplicaRequest;
import io.kvraft.common.proto.KvProto.SplitRequest;
import io.kvraft.common.proto.KvProto.SplitResponse;
import io.kvraft.common.proto.KvProto.TransferLeaderRequest;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.server.host.RegionHost;
import io.kvraft.server.raft.Processors;
import io.kvraft.server.region.Region;
import io.kvraft.server.shape.Merger;
import io.kvraft.server.shape.RegionRecovery;
import io.kvraft.server.shape.ReplicaMover;
import io.kvraft.server.shape.Splitter;

import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The admin requests on the node's shared RPC server: the node's regions and route lookups, leader transfers,
 * splits, merges (and the steps one leader asks of another), replica moves (and their steps on the nodes involved),
 * forced recovery. Each is checked here and handed to the part of the node that does it.
 */
public final class AdminHandlers {

    private final RegionHost host;
    private final RequestGate gate;
    private final int metricsPort;
    private final String storeId;
    private final Splitter splitter;
    private final Merger merger;
    private final ReplicaMover mover;
    private final RegionRecovery recovery;
    /** Answers route lookups from the cluster map (RegionsRequest.cluster): the node's map service. */
    private final Function<RegionsRequest, CompletableFuture<RegionsResponse>> clusterRegions;

    /**
     * @param metricsPort announced in the Regions answer, so tools find the node's metrics; 0 = none
     * @param storeId     the data directory's id, announced in the Regions answer
     */
    public AdminHandlers(RegionHost host, RequestGate gate, int metricsPort, String storeId, Splitter splitter,
                         Merger merger, ReplicaMover mover, RegionRecovery recovery,
                         Function<RegionsRequest, CompletableFuture<RegionsResponse>> clusterRegions) {
        this.host = host;
        this.gate = gate;
        this.metricsPort = metricsPort;
        this.storeId = storeId;
        this.splitter = splitter;
        this.merger = merger;
        this.mover = mover;
        this.recovery = recovery;
        this.clusterRegions = clusterRegions;
    }

    public void register(RpcServer server) {
        server.registerProcessor(Processors.direct(RegionsRequest.class, this::regions));
        server.registerProcessor(Processors.direct(TransferLeaderRequest.class, this::transferLeader));
        server.registerProcessor(Processors.direct(SplitRequest.class, this::split));
        server.registerProcessor(Processors.direct(MergeRequest.class, this::merge));
        server.registerProcessor(Processors.direct(MergeStepRequest.class, this::mergeStep));
        server.registerProcessor(Processors.direct(MoveReplicaRequest.class, this::moveReplica));
        server.registerProcessor(Processors.direct(ReplicaRequest.class, this::replica));
        server.registerProcessor(Processors.direct(RecoverRegionRequest.class, this::recover));
    }


    /** A forced recovery's step on a surviving replica (see RegionRecovery): answered at once. */
    private void recover(RpcContext ctx, RecoverRegionRequest req) {
        if (gate.shuttingDown()) {
            ctx.sendResponse(RecoverRegionResponse.newBuilder()
                    .setError(gate.notNow("recover regions")).build());
            return;
        }
        ctx.sendResponse(recovery.recover(req));
    }

    private void moveReplica(RpcContext ctx, MoveReplicaRequest req) {
        if (gate.shuttingDown()) {
            ctx.sendResponse(MoveReplicaResponse.newBuilder()
                    .setError(gate.notNow("move replicas")).build());
            return;
        }
        Runnable done = gate.track();
        mover.move(req).whenComplete((resp, e) -> {
            try {
                ctx.sendResponse(e == null ? resp : MoveReplicaResponse.newBuilder()
                        .setError(Errors.of(ErrorCode.INTERNAL, "move failed: " + e)).build());
            } finally {
                done.run();
            }
        });
    }

    /** A step of a replica move asked by the region's leader: start an empty replica here, or drop this node's. */
    private void replica(RpcContext ctx, ReplicaRequest req) {
        Error error = null;
        int id = req.getRegion().getId();
        if (gate.shuttingDown()) {
            error = Errors.of(ErrorCode.SHUTTING_DOWN, "", "node " + host.endpoint() + " is shutting down");
        } else {
            try {
                if (req.getOp() == ReplicaRequest.Op.ADD) {
                    host.addReplica(req.getRegion());
                } else {
                    host.dropReplica(id, req.getRegion().getPeersList());
                }
            } catch (IllegalArgumentException e) {
                error = Errors.of(ErrorCode.INVALID_ARGUMENT, e.getMessage());
            } catch (RuntimeException e) {
                org.slf4j.LoggerFactory.getLogger(AdminHandlers.class).warn("region {}: replica {} failed: {}", id, req.getOp(),
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
    private void mergeStep(RpcContext ctx, MergeStepRequest req) {
        Region region = host.region(req.getRegionId());
        WriteOpType type = req.getOp().getType();
        Error error = null;
        if (gate.shuttingDown()) {
            error = Errors.of(ErrorCode.SHUTTING_DOWN, "", "node " + host.endpoint() + " is shutting down");
        } else if (region == null) {
            error = Errors.of(ErrorCode.REGION_NOT_FOUND, "no region " + req.getRegionId() + " on " + host.endpoint());
        } else if (type != WriteOpType.PREPARE_MERGE && type != WriteOpType.MERGE_ROLLBACK) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "a merge step is PREPARE_MERGE or MERGE_ROLLBACK, not " + type);
        } else {
            error = RequestGate.checkLeader(region);
        }
        if (error == null && type == WriteOpType.PREPARE_MERGE && region.moving()) {
            error = Errors.of(ErrorCode.BUSY, "region " + region.id() + " is moving a replica; merge after that");
        }
        if (error == null && type == WriteOpType.PREPARE_MERGE) {
            java.util.Set<String> mine = new java.util.HashSet<>();
            try {
                region.node().listPeers().forEach(p -> mine.add(p.getEndpoint().toString()));
            } catch (IllegalStateException notLeader) {
                error = RequestGate.checkLeader(region);
            }
            if (error == null && !mine.equals(new java.util.HashSet<>(req.getPeersList()))) {
                error = Errors.of(ErrorCode.INVALID_ARGUMENT, "region " + region.id() + " is on " + mine
                        + ", the region it would merge into on " + req.getPeersList() + ": only regions on the same peers merge");
            }
        }
        if (error != null) {
            ctx.sendResponse(MergeStepResponse.newBuilder().setError(error).build());
            return;
        }
        Runnable done = gate.track();
        region.propose(req.getOp(), (status, changed, state, other) -> {
            try {
                MergeStepResponse.Builder b =
                        MergeStepResponse.newBuilder();
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

    private void merge(RpcContext ctx, MergeRequest req) {
        if (gate.shuttingDown()) {
            ctx.sendResponse(MergeResponse.newBuilder()
                    .setError(gate.notNow("merge regions")).build());
            return;
        }
        Runnable done = gate.track();
        merger.merge(req.getLeftId(), req.getRightId(), req.getLeftEpoch(), req.getRightEpoch()).whenComplete((resp, e) -> {
            try {
                ctx.sendResponse(e == null ? resp : MergeResponse.newBuilder()
                        .setError(Errors.of(ErrorCode.INTERNAL, "merge failed: " + e)).build());
            } finally {
                done.run();
            }
        });
    }

    private void split(RpcContext ctx, SplitRequest req) {
        if (gate.shuttingDown()) {
            ctx.sendResponse(SplitResponse.newBuilder().setError(gate.notNow("split regions")).build());
            return;
        }
        Runnable done = gate.track();
        splitter.split(req.getRegionId(), req.getRegionEpoch(), req.getSplitKey().toByteArray()).whenComplete((resp, e) -> {
            try {
                ctx.sendResponse(e == null ? resp : SplitResponse.newBuilder()
                        .setError(Errors.of(ErrorCode.INTERNAL, "split failed: " + e)).build());
            } finally {
                done.run();
            }
        });
    }

    private void regions(RpcContext ctx, RegionsRequest req) {
        if (gate.shuttingDown()) { // so clients take routes, and peers' balancers take their cue, from nodes that stay
            ctx.sendResponse(RegionsResponse.newBuilder().setNode(host.endpoint())
                    .setError(Errors.of(ErrorCode.SHUTTING_DOWN, "node " + host.endpoint() + " is shutting down"))
                    .build());
            gate.closeIfStopped(ctx);
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
        Runnable done = gate.track();
        clusterRegions.apply(req).whenComplete((resp, e) -> {
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
        Error error = region != null && !gate.shuttingDown() && region.mergingInto() != 0 ? null
                : gate.checkRegion(region, req.getRegionId(), region == null ? 0 : region.epoch());
        PeerId target = new PeerId();
        if (error == null && (!target.parse(req.getTarget()) || !region.peers().contains(req.getTarget()))) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "target '" + req.getTarget() + "' is not a peer of region "
                    + req.getRegionId() + " " + region.peers());
        }
        if (error == null) {
            error = RequestGate.checkLeader(region);
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
}
