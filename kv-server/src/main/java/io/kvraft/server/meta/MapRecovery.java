package io.kvraft.server.meta;

import io.kvraft.server.balance.Placement;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.conf.Configuration;
import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.MapReplicaResponse;
import io.kvraft.common.proto.KvProto.MetaCommand;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.RecoverMapRequest;
import io.kvraft.common.proto.KvProto.RecoverMapResponse;
import io.kvraft.common.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Forced recovery of the cluster map's own group when a majority of its voters is lost for good (two of three disks
 * gone): then no node answers admin calls, so neither {@code node remove} nor {@code recover-region} can run. On a
 * surviving voter, {@link #recover} sets the group's voters to the survivors with jraft's {@link Node#resetPeers} (in
 * memory; the term goes up by one and the survivors elect a leader among themselves, whose first entry records the new
 * voters) and remembers the voters left out. Once this node leads the map, {@link #removeLost} marks each of their nodes
 * REMOVED before the leader does anything else: a lost node that comes back with its old copy is then refused when it
 * registers, and stops, rather than elect a leader of the old voters with another one. Placement then adds voters on the
 * live nodes.
 *
 * <p>Refused with nothing changed unless every condition of {@link RecoverMapRequest} holds: like a region's forced
 * recovery it may lose the map entries only the lost voters had, so it never runs on a group that could still elect a
 * leader.
 */
final class MapRecovery {

    private static final Logger LOG = LoggerFactory.getLogger(MapRecovery.class);

    private final MetaGroup group;
    private final String self;
    /** The lost voters this node's recovery left out, with the node id the map had for each then. */
    private final Map<String, String> lost = new ConcurrentHashMap<>();
    private volatile boolean removing;
    private final int campaignMs;

    /**
     * @param campaignMs the election timeout a survivor takes after the reset ({@code raft.startupElectionTimeoutMs}):
     *                   it leads within 2-3 s, not the configured 5-10; it takes the configured one back once it knows
     *                   a leader ({@link MetaGroup#leaderSeen})
     */
    MapRecovery(MetaGroup group, String self, int campaignMs) {
        this.group = group;
        this.self = self;
        this.campaignMs = campaignMs;
    }

    /** This node's replica of the map's group, as {@code MapReplicaRequest} answers it. */
    MapReplicaResponse replica() {
        MapReplicaResponse.Builder b = MapReplicaResponse.newBuilder().setNode(self);
        Node n = group.node();
        if (n == null) {
            return b.setRole("STOPPED").build();
        }
        try {
            b.setRole(n.getNodeState().name().replace("STATE_", "")).setLeader(group.leaderHint())
                    .addAllVoters(group.voters()).addAllLearners(group.learners()).setLastLogIndex(n.getLastLogIndex());
        } catch (RuntimeException groupInError) {
            b.setRole("ERROR");
        }
        return b.setMap(group.map().toBuilder().clearRegions()).build();
    }

    RecoverMapResponse recover(RecoverMapRequest req) {
        Node node = group.node();
        if (node == null) {
            return failed(ErrorCode.UNAVAILABLE, "the cluster map's group is not running on " + self);
        }
        TreeSet<String> voters;
        try {
            voters = io.kvraft.server.shape.RegionRecovery.voters(req.getVotersList());
        } catch (IllegalArgumentException e) {
            return failed(ErrorCode.INVALID_ARGUMENT, e.getMessage());
        }
        List<String> current = group.voters();
        String refused = refusal(voters, current);
        if (refused != null) {
            return failed(ErrorCode.INVALID_ARGUMENT, "cluster map not recovered: " + refused);
        }
        Status st = node.resetPeers(new Configuration(voters.stream().map(PeerId::parsePeer).toList()));
        if (!st.isOk()) {
            return failed(ErrorCode.UNAVAILABLE, "jraft did not reset the cluster map's voters on " + self + ": "
                    + st.getErrorMsg());
        }
        ClusterMap map = group.map();
        List<String> left = current.stream().filter(v -> !voters.contains(v)).toList();
        for (String v : left) {
            NodeRecord rec = find(map, v);
            lost.put(v, rec == null ? "" : rec.getNodeId());
        }
        if (campaignMs < node.getOptions().getElectionTimeoutMs()) {
            node.resetElectionTimeoutMs(campaignMs);
        }
        LOG.warn("cluster map: FORCED RECOVERY on {}: voters reset from {} to {}; once one of them leads, {} are marked"
                + " removed; map entries only the lost voters had are gone", self, current, voters, left);
        return RecoverMapResponse.newBuilder().setReplica(replica()).addAllRemoved(left).build();
    }

    /** Why the recovery is refused, or null. */
    private String refusal(TreeSet<String> voters, List<String> current) {
        if (voters.isEmpty()) {
            return "no voters given: name the surviving voters of the map's group";
        }
        if (!voters.contains(self)) {
            return "the voters " + voters + " do not name this node " + self + ", which is asked to take them";
        }
        if (group.isLeader() || group.node().isLeader()) {
            return "this node " + self + " leads the map's group: nothing to recover";
        }
        String leader = group.leaderHint();
        if (!leader.isEmpty()) {
            return "the map's group has a leader, " + leader + ": nothing to recover";
        }
        for (String v : voters) {
            if (!current.contains(v)) {
                return v + " is no voter of the map's group (its voters on " + self + " are " + current + ")";
            }
        }
        int majority = current.size() / 2 + 1;
        if (voters.size() >= majority) {
            return voters.size() + " of its " + current.size() + " voters " + voters + " are a majority: they elect a"
                    + " leader by themselves once they hear from each other";
        }
        return null;
    }

    /** Whether this node's recovery left out {@code endpoint}'s voter with this node id, not marked removed yet. */
    boolean lost(String endpoint, String nodeId) {
        return nodeId.equals(lost.get(endpoint));
    }

    /**
     * On the map's leader, every placement interval: proposes REMOVED for each voter this node's recovery left out
     * (one at a time) while the map lists it with the node id it had then. Returns true when none is left to mark, so
     * the leader may go on with its other work.
     */
    boolean removeLost() {
        if (lost.isEmpty()) {
            return true;
        }
        if (removing) {
            return false;
        }
        ClusterMap map = group.map();
        for (Map.Entry<String, String> e : lost.entrySet()) {
            NodeRecord rec = find(map, e.getKey());
            // gone from the map, removed, or back with a wiped disk (another node id): nothing for this recovery to do
            if (rec == null || rec.getState() == NodeState.REMOVED || !rec.getNodeId().equals(e.getValue())) {
                lost.remove(e.getKey(), e.getValue());
                continue;
            }
            removing = true;
            NodeRecord removed = rec.toBuilder().setState(NodeState.REMOVED).setSinceMs(System.currentTimeMillis())
                    .build();
            group.propose(MetaCommand.newBuilder().setSetState(removed).build()).whenComplete((m, x) -> {
                removing = false;
                if (x == null) {
                    LOG.warn("cluster map: node {} is removed now (a voter of the map lost for good, left out by the"
                            + " forced recovery)", rec.getEndpoint());
                } else {
                    LOG.warn("cluster map: could not mark lost voter {} removed yet: {}", rec.getEndpoint(),
                            x.getMessage());
                }
            });
            return false;
        }
        return lost.isEmpty();
    }

    private static NodeRecord find(ClusterMap map, String endpoint) {
        for (NodeRecord n : map.getNodesList()) {
            if (n.getEndpoint().equals(endpoint)) {
                return n;
            }
        }
        return null;
    }

    private static RecoverMapResponse failed(ErrorCode code, String detail) {
        return RecoverMapResponse.newBuilder().setError(Errors.of(code, detail)).build();
    }
}
