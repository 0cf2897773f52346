package io.kvraft.server.meta;

import io.kvraft.server.raft.Processors;

import io.kvraft.server.balance.Placement;

import com.alipay.sofa.jraft.rpc.RpcServer;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ClusterRequest;
import io.kvraft.common.proto.KvProto.JoinRequest;
import io.kvraft.common.proto.KvProto.MapReplicaRequest;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeReport;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.NodeStateRequest;
import io.kvraft.common.proto.KvProto.RecoverMapRequest;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.host.RegionHost;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Consumer;

/**
 * The cluster's membership on one node, around its replica of the map's group ({@link MetaGroup}), wired from its parts:
 * <ul>
 *   <li>on every node: its registration, then its reports to the map's leader ({@link Registration}), the host's list
 *       of nodes following the map ({@link KnownNodes}), and route lookups ({@link RouteLookups});</li>
 *   <li>on the map's leader: joins, drains and removals ({@link Membership}), the nodes' reports and the live view
 *       ({@link NodeReports}) and what the map records of them ({@link MapRecords}), the map's own replicas
 *       ({@link MapReplicas}), placement ({@link PlacementDriver}) and the cluster's status ({@link ClusterStatus}).</li>
 * </ul>
 */
public final class MetaService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(MetaService.class);

    /** Moves replicas, asked of the region's leader wherever it is (the node's RegionLeaderCalls). */
    public interface Mover {
        CompletableFuture<RegionInfo> move(int regionId, String from, String to);

        /** Rebuilds {@code node}'s replica of the region in place (its data is gone). */
        CompletableFuture<RegionInfo> rebuild(int regionId, String node);

        /** Adds a replica of the region on {@code to}. */
        CompletableFuture<RegionInfo> add(int regionId, String to);
    }

    private final ServerConfig config;
    private final Executor housekeeping;
    private final MetaGroup group;
    private final MapRecovery recovery;
    private final NodeReports reports;
    private final Membership membership;
    private final Registration registration;
    private final RouteLookups routes;
    private final MapRecords records;
    private final MapReplicas replicas;
    private final PlacementDriver placement;

    /**
     * @param fatal         called once when the cluster refuses this node for good (removed, or another cluster's): the
     *                      node must stop
     * @param storageFailed called, on the group's thread, when jraft stopped the map's group for its storage (log,
     *                      snapshot or Raft meta)
     */
    public MetaService(ServerConfig config, RegionHost host, RpcServer rpcServer, Transport peers, Mover mover,
                       Executor housekeeping, String nodeId, Consumer<String> fatal, Consumer<String> storageFailed) {
        this.config = config;
        this.housekeeping = housekeeping;
        Path dataDir = Path.of(config.dataDir());
        String clusterId = Registration.readClusterId(dataDir);
        KnownNodes known = KnownNodes.restore(dataDir, host);
        this.group = new MetaGroup(config, rpcServer, known::follow, this::leaderChanged, storageFailed);
        this.recovery = new MapRecovery(group, config.endpoint(), config.raft().startupElectionTimeoutMs());
        this.reports = new NodeReports(config, group, recovery);
        this.membership = new Membership(config, group, recovery, reports);
        this.registration = new Registration(config, host, group, peers, housekeeping, nodeId, clusterId, fatal,
                membership, reports);
        this.routes = new RouteLookups(config, host, group, peers, reports);
        this.records = new MapRecords(group, reports, config.placement().downAfterMs());
        this.replicas = new MapReplicas(config, group);
        this.placement = new PlacementDriver(config, mover, reports);
        ClusterStatus status = new ClusterStatus(config, group, reports, placement);
        rpcServer.registerProcessor(Processors.direct(JoinRequest.class, membership::join));
        rpcServer.registerProcessor(Processors.direct(ClusterRequest.class, status::cluster));
        rpcServer.registerProcessor(Processors.direct(NodeStateRequest.class, membership::nodeState));
        rpcServer.registerProcessor(Processors.direct(NodeReport.class, reports::report));
        rpcServer.registerProcessor(Processors.direct(MapReplicaRequest.class,
                (ctx, req) -> ctx.sendResponse(recovery.replica())));
        rpcServer.registerProcessor(Processors.direct(RecoverMapRequest.class,
                (ctx, req) -> ctx.sendResponse(recovery.recover(req))));
    }

    public void start() {
        group.start();
    }

    public MetaGroup group() {
        return group;
    }

    /** The cluster id this node belongs to, or empty before it first registered. */
    public String clusterId() {
        return registration.clusterId();
    }

    public boolean registered() {
        return registration.registered();
    }

    /** On the group's thread: a new leader forgets the reports and moves of an earlier term of its own. */
    private void leaderChanged() {
        reports.leaderChanged();
        placement.leaderChanged();
        try {
            housekeeping.execute(group::leaderSeen);
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            // the node is closing: its housekeeping stopped before the map's group, which now leaves its leadership
        }
    }

    /** One step of this node's part: called every {@code placement.intervalMs} on the housekeeping thread. */
    public void tick() {
        if (registration.stopped()) {
            return;
        }
        try {
            registration.step();
            if (group.isLeader() && recovery.removeLost()) { // a forced recovery's lost voters are removed first
                lead();
            }
        } catch (RuntimeException e) {
            LOG.warn("cluster map: {}", e.toString());
        }
    }

    /** The map leader's step: the first map, the records of regions and down nodes, the map's replicas, placement. */
    private void lead() {
        ClusterMap map = group.map();
        if (map.getClusterId().isEmpty()) {
            if (!config.cluster().joining()) {
                membership.init();
            }
            return;
        }
        records.recordRegions(map);
        Placement.View view = reports.view(true);
        records.recordDown(map, view);
        if (!replicas.adjust(map, view)) {
            return; // this node hands the map's leadership over
        }
        if (config.placement().enabled()) {
            placement.place(map, view);
        }
    }

    /**
     * Answers a route lookup from the cluster map ({@code RegionsRequest.cluster}): see {@link RouteLookups}. Never a
     * partial list: an error when the map cannot answer for the whole key space, so the client asks the nodes one by one
     * instead.
     */
    public CompletableFuture<RegionsResponse> clusterRegions(RegionsRequest req) {
        return routes.clusterRegions(req);
    }

    /** A node's state in this node's copy of the cluster map (which may lag its leader's), or null when not listed. */
    public NodeState nodeState(String endpoint) {
        NodeRecord rec = Membership.find(group.map(), endpoint);
        return rec == null ? null : rec.getState();
    }

    @Override
    public void close() {
        registration.stop();
        group.close();
    }
}
