package io.kvraft.client.admin;

import io.kvraft.client.batch.Dispatcher;
import io.kvraft.client.batch.PendingOp;
import io.kvraft.client.route.Calls;
import io.kvraft.client.route.MapLeaderCalls;
import io.kvraft.client.route.Routes;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.rpc.Transport;

import com.google.protobuf.ByteString;

import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * The admin view of a client: each operation goes to the node that decides it (a region's leader by
 * {@link RegionAdmin}, the cluster map's leader by {@link MapLeaderCalls}, the live nodes by {@link RegionRecovery} and
 * {@link MapRecovery}) over the routes and connections it shares with the client. Made by {@code KvClients}; users get
 * one from {@code KvClient.admin()} or {@code KvClients.admin(config)}.
 */
public final class RoutingKvAdmin implements KvAdmin {

    private final Calls calls;
    private final Routes routes;
    private final Dispatcher dispatcher;
    private final MapLeaderCalls mapLeader;

    /** @param dispatcher sends the writes of {@link #restoreSystemRecord}, routed and batched as the client's are */
    public RoutingKvAdmin(Calls calls, Routes routes, Dispatcher dispatcher) {
        this.calls = calls;
        this.routes = routes;
        this.dispatcher = dispatcher;
        this.mapLeader = new MapLeaderCalls(() -> new LinkedHashSet<>(routes.knownNodes()), calls.transport()::call,
                calls.operationTimeoutMs(), calls.requestTimeoutMs(), calls::later, System::nanoTime);
    }

    /**
     * The cluster map as {@link #cluster} answers it, asked of {@code nodes} over a transport of the caller's, with no
     * routes: for a tool that asks the nodes directly (the CLI's {@code status}). Each request waits at most 3 s, the
     * whole call at most {@code timeoutMs}.
     */
    public static CompletableFuture<ClusterInfo> cluster(Transport transport, Collection<String> nodes, long timeoutMs) {
        return new MapLeaderCalls(nodes, transport::call, timeoutMs).cluster().thenApply(AdminWire::cluster);
    }

    @Override
    public CompletableFuture<List<RegionInfo>> regions() {
        return routes.regions().thenApply(AdminWire::regions);
    }

    @Override
    public CompletableFuture<MapRegions> mapRegions() {
        return routes.mapRegions().thenApply(AdminWire::mapRegions);
    }

    @Override
    public CompletableFuture<RegionCapture> captureRegion(byte[] key) {
        return RegionCapture.open(routes, calls, key == null ? new byte[0] : key);
    }

    @Override
    public CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey) {
        return regionAdmin().split(regionId, atKey);
    }

    @Override
    public CompletableFuture<RegionInfo> merge(int leftId, int rightId) {
        return regionAdmin().merge(leftId, rightId);
    }

    @Override
    public CompletableFuture<RegionInfo> moveReplica(int regionId, String from, String to) {
        return regionAdmin().moveReplica(regionId, from, to);
    }

    @Override
    public CompletableFuture<RegionInfo> rebuildReplica(int regionId, String node) {
        return regionAdmin().rebuildReplica(regionId, node);
    }

    @Override
    public CompletableFuture<RegionInfo> addReplica(int regionId, String to) {
        return regionAdmin().addReplica(regionId, to);
    }

    private RegionAdmin regionAdmin() {
        return new RegionAdmin(routes, calls);
    }

    @Override
    public CompletableFuture<RecoveryPlan> planRecovery(int regionId) {
        return regionRecovery().plan(regionId);
    }

    @Override
    public CompletableFuture<RecoverySurvey> surveyRecovery() {
        return regionRecovery().survey();
    }

    @Override
    public CompletableFuture<RegionInfo> recoverRegion(RecoveryPlan plan) {
        return regionRecovery().recover(plan);
    }

    private RegionRecovery regionRecovery() {
        return new RegionRecovery(routes, calls, mapLeader);
    }

    @Override
    public CompletableFuture<MapRecoveryPlan> planMapRecovery() {
        return new MapRecovery(routes, calls, mapLeader).plan();
    }

    @Override
    public CompletableFuture<ClusterInfo> recoverMap(MapRecoveryPlan plan) {
        return new MapRecovery(routes, calls, mapLeader).recover(plan).thenApply(AdminWire::cluster);
    }

    @Override
    public CompletableFuture<Map<String, String>> storeIds() {
        return calls.<RegionsResponse>askAll(routes.knownNodes(), RegionsRequest.getDefaultInstance()).thenApply(answers -> {
            Map<String, String> ids = new TreeMap<>();
            answers.forEach((n, r) -> {
                if (r != null && !r.getStoreId().isEmpty()) {
                    ids.put(r.getNode().isEmpty() ? n : r.getNode(), r.getStoreId());
                }
            });
            return ids;
        });
    }

    @Override
    public CompletableFuture<ClusterInfo> cluster() {
        return mapLeader.cluster().thenApply(AdminWire::cluster);
    }

    @Override
    public CompletableFuture<ClusterInfo> nodeState(String endpoint, NodeState state, boolean force) {
        return mapLeader.nodeState(endpoint, state == null ? null : AdminWire.toWire(state), force)
                .thenApply(r -> AdminWire.cluster(r.getMap()));
    }

    @Override
    public CompletableFuture<Void> restoreSystemRecord(byte[] key, byte[] record) {
        if (record == null) {
            return CompletableFuture.failedFuture(new KvException(ErrorCode.INVALID_ARGUMENT,
                    "restoreSystemRecord needs a record"));
        }
        WriteOp op = WriteOp.newBuilder().setType(WriteOpType.RESTORE_COORD)
                .setKey(key == null ? ByteString.EMPTY : ByteString.copyFrom(key)).setValue(ByteString.copyFrom(record))
                .build();
        return dispatcher.submit(PendingOp.write(op, calls.deadline())).thenApply(r -> null);
    }

    @Override
    public void close() {
        calls.close();
    }
}
