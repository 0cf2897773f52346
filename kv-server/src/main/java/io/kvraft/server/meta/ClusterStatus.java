package io.kvraft.server.meta;

import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ClusterRequest;
import io.kvraft.common.proto.KvProto.ClusterResponse;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeStatus;
import io.kvraft.common.proto.KvProto.ReplicaMove;
import io.kvraft.server.balance.Placement;
import io.kvraft.server.config.ServerConfig;

import com.alipay.sofa.jraft.rpc.RpcContext;

import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The map leader's answer to {@link ClusterRequest} ({@code kv-client node list}, {@code status}): the map, the map's own
 * replicas, each node's state as its reports show it, and the replica moves under way.
 */
final class ClusterStatus {

    private final ServerConfig config;
    private final MetaGroup group;
    private final NodeReports reports;
    private final PlacementDriver placement;

    ClusterStatus(ServerConfig config, MetaGroup group, NodeReports reports, PlacementDriver placement) {
        this.config = config;
        this.group = group;
        this.reports = reports;
        this.placement = placement;
    }

    void cluster(RpcContext ctx, ClusterRequest req) {
        if (!group.isLeader()) {
            ctx.sendResponse(ClusterResponse.newBuilder().setError(group.notLeader(config.endpoint())).build());
            return;
        }
        ClusterMap map = group.map();
        Placement.View view = reports.view();
        Map<String, Integer> counts = Placement.replicaCounts(view.regions());
        ClusterResponse.Builder b = ClusterResponse.newBuilder().setMap(map).setMetaLeader(config.endpoint())
                .addAllMetaVoters(group.voters()).addAllMetaLearners(group.learners())
                .setMovesDone(placement.movesDone()).addAllRegions(view.regions());
        long now = System.nanoTime();
        for (NodeRecord n : map.getNodesList()) {
            NodeReports.Report r = reports.get(n.getEndpoint());
            long leaders = view.regions().stream().filter(x -> x.getLeader().equals(n.getEndpoint())).count();
            b.addStatus(NodeStatus.newBuilder().setEndpoint(n.getEndpoint()).setLive(view.live().contains(n.getEndpoint()))
                    .setDown(view.down().contains(n.getEndpoint()))
                    .setReplicas(counts.getOrDefault(n.getEndpoint(), 0)).setLeaders((int) leaders)
                    .setMissing(view.unheldOn(n.getEndpoint()))
                    .setDiskBytes(r == null ? 0 : r.report().getDiskBytes())
                    .setLastReportMs(r == null ? 0 : TimeUnit.NANOSECONDS.toMillis(now - r.atNanos())));
        }
        for (PlacementDriver.Running run : placement.running()) {
            b.addMoves(ReplicaMove.newBuilder().setRegionId(run.move().regionId()).setFrom(run.move().from())
                    .setTo(run.move().to()).setReason(run.move().reason())
                    .setRunningMs(TimeUnit.NANOSECONDS.toMillis(now - run.startNanos())));
        }
        ctx.sendResponse(b.build());
    }
}
