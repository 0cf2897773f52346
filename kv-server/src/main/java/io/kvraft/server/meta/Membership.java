package io.kvraft.server.meta;

import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.JoinRequest;
import io.kvraft.common.proto.KvProto.JoinResponse;
import io.kvraft.common.proto.KvProto.MetaCommand;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.NodeStateRequest;
import io.kvraft.common.proto.KvProto.NodeStateResponse;
import io.kvraft.server.balance.Placement;
import io.kvraft.server.config.ServerConfig;

import com.alipay.sofa.jraft.rpc.RpcContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * On the map's leader: who is in the cluster. The first map (the nodes of {@code cluster.peers}), every node's
 * registration (a node that joins, a member starting again, one whose disk was wiped; a removed node, or one of another
 * cluster, is refused for good), and the drain, undrain and remove requests.
 */
final class Membership {

    private static final Logger LOG = LoggerFactory.getLogger(Membership.class);

    private final ServerConfig config;
    private final MetaGroup group;
    private final MapRecovery recovery;
    private final NodeReports reports;

    Membership(ServerConfig config, MetaGroup group, MapRecovery recovery, NodeReports reports) {
        this.config = config;
        this.group = group;
        this.recovery = recovery;
        this.reports = reports;
    }

    /** Proposes the first map: every node of {@code cluster.peers} UP. */
    void init() {
        ClusterMap.Builder b = ClusterMap.newBuilder().setClusterId(UUID.randomUUID().toString())
                .setFactor(config.replicationFactor());
        long now = System.currentTimeMillis();
        for (String p : config.cluster().peers()) {
            b.addNodes(NodeRecord.newBuilder().setEndpoint(p).setState(NodeState.UP).setSinceMs(now));
        }
        group.propose(MetaCommand.newBuilder().setInit(b).build()).whenComplete((m, e) -> {
            if (e == null) {
                LOG.info("cluster map made: cluster {} of {}, replication.factor {}", m.getClusterId(),
                        endpoints(m), m.getFactor());
            }
        });
    }

    /**
     * Whether a node with data directory {@code nodeId} at {@code rec}'s address is refused for good: the map lists it
     * removed, or a forced recovery of the map left it out and has not marked it removed yet.
     */
    static boolean removedForGood(NodeRecord rec, String nodeId, MapRecovery recovery) {
        return rec != null && rec.getNodeId().equals(nodeId)
                && (rec.getState() == NodeState.REMOVED || recovery.lost(rec.getEndpoint(), nodeId));
    }

    static NodeRecord find(ClusterMap map, String endpoint) {
        for (NodeRecord n : map.getNodesList()) {
            if (n.getEndpoint().equals(endpoint)) {
                return n;
            }
        }
        return null;
    }

    static List<String> endpoints(ClusterMap map) {
        return map.getNodesList().stream().map(NodeRecord::getEndpoint).toList();
    }

    void join(RpcContext ctx, JoinRequest req) {
        handleJoin(req).whenComplete((resp, e) -> ctx.sendResponse(e == null ? resp : JoinResponse.newBuilder()
                .setError(Errors.of(ErrorCode.INTERNAL, e.getMessage())).build()));
    }

    CompletableFuture<JoinResponse> handleJoin(JoinRequest req) {
        if (!group.isLeader()) {
            return done(JoinResponse.newBuilder().setError(group.notLeader(config.endpoint())).build());
        }
        ClusterMap map = group.map();
        if (map.getClusterId().isEmpty()) {
            return done(JoinResponse.newBuilder().setError(Errors.of(ErrorCode.NO_LEADER,
                    "the cluster map is not made yet; ask again in a moment")).build());
        }
        try {
            io.kvraft.common.config.HostPort.parse(req.getEndpoint());
        } catch (IllegalArgumentException e) {
            return done(JoinResponse.newBuilder().setError(Errors.of(ErrorCode.INVALID_ARGUMENT, e.getMessage()))
                    .build());
        }
        if (!req.getClusterId().isEmpty() && !req.getClusterId().equals(map.getClusterId())) {
            return done(JoinResponse.newBuilder().setError(Errors.of(ErrorCode.WRONG_CLUSTER, "node "
                    + req.getEndpoint() + "'s data directory belongs to cluster " + req.getClusterId() + ", and this is"
                    + " cluster " + map.getClusterId() + ": start it on an empty data directory to join this one"))
                    .build());
        }
        NodeRecord rec = find(map, req.getEndpoint());
        if (removedForGood(rec, req.getNodeId(), recovery)) {
            return done(JoinResponse.newBuilder().setError(Errors.of(ErrorCode.NODE_REMOVED, "node "
                    + req.getEndpoint() + " (node id " + req.getNodeId() + ") was removed from cluster "
                    + map.getClusterId() + ": it may not come back with its data; start it on an empty data directory"
                    + " to join as a new node")).build());
        }
        if (rec != null && rec.getNodeId().equals(req.getNodeId())) {
            return done(JoinResponse.newBuilder().setMap(map).build()); // a member starting again
        }
        return admit(req, rec);
    }

    /** Records a node that joins, or comes back at a member's address with another data directory. */
    private CompletableFuture<JoinResponse> admit(JoinRequest req, NodeRecord rec) {
        NodeState state = rec == null || rec.getState() == NodeState.REMOVED ? NodeState.UP : rec.getState();
        // a member's address with another data directory: its disk was wiped. It must not vote in its old regions
        // with an empty log; it starts with none, and placement rebuilds each replica (the voter out, then a learner)
        boolean wiped = rec != null && rec.getState() != NodeState.REMOVED && !rec.getNodeId().isEmpty();
        if (wiped) {
            LOG.warn("cluster map: node {} comes back with another data directory (node id {}, was {}): it starts"
                    + " empty and its replicas are rebuilt", req.getEndpoint(), req.getNodeId(), rec.getNodeId());
        }
        NodeRecord joined = NodeRecord.newBuilder().setEndpoint(req.getEndpoint()).setNodeId(req.getNodeId())
                .setState(state).setSinceMs(rec != null && rec.getState() == state ? rec.getSinceMs()
                        : System.currentTimeMillis()).build();
        return group.propose(MetaCommand.newBuilder().setJoin(joined).build()).handle((m, e) -> {
            if (e != null) {
                return JoinResponse.newBuilder().setError(Errors.of(ErrorCode.NO_LEADER, group.leaderHint(),
                        e.getMessage())).build();
            }
            if (rec == null || rec.getState() == NodeState.REMOVED) {
                LOG.info("cluster map: node {} ({}) joined", req.getEndpoint(), req.getNodeId());
            }
            return JoinResponse.newBuilder().setMap(m).setStartEmpty(wiped).build();
        });
    }

    void nodeState(RpcContext ctx, NodeStateRequest req) {
        handleNodeState(req).whenComplete((resp, e) -> ctx.sendResponse(e == null ? resp : NodeStateResponse.newBuilder()
                .setError(Errors.of(ErrorCode.INTERNAL, e.getMessage())).build()));
    }

    private CompletableFuture<NodeStateResponse> handleNodeState(NodeStateRequest req) {
        if (!group.isLeader()) {
            return done(NodeStateResponse.newBuilder().setError(group.notLeader(config.endpoint())).build());
        }
        ClusterMap map = group.map();
        NodeRecord rec = find(map, req.getEndpoint());
        String refused = refusal(map, rec, req);
        if (refused != null) {
            return done(NodeStateResponse.newBuilder().setError(Errors.of(ErrorCode.INVALID_ARGUMENT, refused))
                    .build());
        }
        if (rec.getState() == req.getState()) {
            return done(NodeStateResponse.newBuilder().setMap(map).build());
        }
        NodeRecord changed = rec.toBuilder().setState(req.getState()).setSinceMs(System.currentTimeMillis()).build();
        return group.propose(MetaCommand.newBuilder().setSetState(changed).build()).handle((m, e) -> {
            if (e != null) {
                return NodeStateResponse.newBuilder().setError(Errors.of(ErrorCode.NO_LEADER, group.leaderHint(),
                        e.getMessage())).build();
            }
            LOG.info("cluster map: node {} is {} now (was {})", rec.getEndpoint(), req.getState(), rec.getState());
            return NodeStateResponse.newBuilder().setMap(m).build();
        });
    }

    /** Why the state change is refused (nothing changes), or null. */
    private String refusal(ClusterMap map, NodeRecord rec, NodeStateRequest req) {
        if (rec == null) {
            return "node " + req.getEndpoint() + " is not a node of the cluster " + endpoints(map);
        }
        if (req.getState() == NodeState.UNRECOGNIZED) {
            return "unknown node state";
        }
        if (rec.getState() == NodeState.REMOVED && req.getState() != NodeState.REMOVED) {
            return "node " + rec.getEndpoint() + " was removed for good; a node with an empty data directory may join"
                    + " at its address";
        }
        if (rec.getState() == req.getState()) {
            return null;
        }
        long upAfter = map.getNodesList().stream().filter(n -> n.getState() == NodeState.UP
                && !n.getEndpoint().equals(rec.getEndpoint())).count();
        int factor = map.getFactor();
        if (req.getState() != NodeState.UP && upAfter < factor) {
            return (req.getState() == NodeState.DRAINING ? "draining " : "removing ") + rec.getEndpoint()
                    + " would leave " + upAfter + " UP nodes for replication.factor " + factor
                    + ": every region needs that many; add a node first";
        }
        return req.getState() == NodeState.REMOVED ? stillHolds(rec, req) : null;
    }

    /** Why {@code rec}'s node may not be removed yet (it holds replicas, or a voter of the map), or null. */
    private String stillHolds(NodeRecord rec, NodeStateRequest req) {
        Placement.View view = reports.view();
        int held = Placement.replicaCounts(view.regions()).getOrDefault(rec.getEndpoint(), 0);
        boolean live = view.live().contains(rec.getEndpoint());
        boolean metaVoter = group.voters().contains(rec.getEndpoint());
        if ((held > 0 || metaVoter) && !(req.getForce() && !live)) {
            return "node " + rec.getEndpoint() + " still holds " + held + " region replicas"
                    + (metaVoter ? " and a voter of the cluster map" : "") + ": drain it first (node drain "
                    + rec.getEndpoint() + ")" + (live ? "" : ", or remove it with --force (it is down: its replicas"
                    + " are rebuilt on the other nodes)");
        }
        return null;
    }

    private static <T> CompletableFuture<T> done(T value) {
        return CompletableFuture.completedFuture(value);
    }
}
