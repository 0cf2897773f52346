package io.kvraft.client.admin;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The admin API's types from and to the wire's (kv.proto): the one place they are converted. */
final class AdminWire {

    private AdminWire() {
    }

    static RegionInfo region(KvProto.RegionInfo r) {
        return new RegionInfo(r.getId(), r.getStartKey().toByteArray(), r.getEndKey().toByteArray(), r.getEpoch(),
                r.getPeersList(), r.getLeader(), r.getTerm(), r.getAppliedIndex(), r.getRole(), r.getMergingInto(),
                r.getMergeReady(), r.getConfVer(), r.getLearnersList());
    }

    static List<RegionInfo> regions(List<KvProto.RegionInfo> regions) {
        return regions.stream().map(AdminWire::region).toList();
    }

    static KvProto.RegionInfo toWire(RegionInfo r) {
        return KvProto.RegionInfo.newBuilder().setId(r.id()).setStartKey(ByteString.copyFrom(r.startKey()))
                .setEndKey(ByteString.copyFrom(r.endKey())).setEpoch(r.epoch()).addAllPeers(r.peers())
                .setLeader(r.leader()).setTerm(r.term()).setAppliedIndex(r.appliedIndex()).setRole(r.role())
                .setMergingInto(r.mergingInto()).setMergeReady(r.mergeReady()).setConfVer(r.confVer())
                .addAllLearners(r.learners()).build();
    }

    static MapRegions mapRegions(KvProto.RegionsResponse r) {
        return new MapRegions(regions(r.getRegionsList()), r.getNode(), r.getMapLeader(), r.getFromCopy());
    }

    /** A node state this client does not know (a newer server's) is null. */
    static NodeState nodeState(KvProto.NodeState s) {
        return switch (s) {
            case UP -> NodeState.UP;
            case DRAINING -> NodeState.DRAINING;
            case REMOVED -> NodeState.REMOVED;
            case UNRECOGNIZED -> null;
        };
    }

    static KvProto.NodeState toWire(NodeState s) {
        return switch (s) {
            case UP -> KvProto.NodeState.UP;
            case DRAINING -> KvProto.NodeState.DRAINING;
            case REMOVED -> KvProto.NodeState.REMOVED;
        };
    }

    /** The map leader's answer: the map, its view of each node, the map group, the moves and the regions. */
    static ClusterInfo cluster(KvProto.ClusterResponse c) {
        Map<String, ClusterInfo.Status> status = new HashMap<>();
        for (KvProto.NodeStatus s : c.getStatusList()) {
            status.put(s.getEndpoint(), new ClusterInfo.Status(s.getLive(), s.getReplicas(), s.getLeaders(),
                    s.getDiskBytes(), s.getLastReportMs(), s.getDown(), s.getMissing()));
        }
        List<ClusterInfo.Move> moves = c.getMovesList().stream().map(m -> new ClusterInfo.Move(m.getRegionId(),
                m.getFrom(), m.getTo(), m.getReason(), m.getRunningMs())).toList();
        KvProto.ClusterMap m = c.getMap();
        return new ClusterInfo(m.getClusterId(), m.getFactor(), m.getVersion(), nodes(m, status), c.getMetaLeader(),
                c.getMetaVotersList(), c.getMetaLearnersList(), moves, c.getMovesDone(), regions(c.getRegionsList()));
    }

    /** The map alone (a node-state change's answer): no leader's view, map group, moves or regions. */
    static ClusterInfo cluster(KvProto.ClusterMap m) {
        return new ClusterInfo(m.getClusterId(), m.getFactor(), m.getVersion(), nodes(m, Map.of()), "", List.of(),
                List.of(), List.of(), 0, List.of());
    }

    private static List<ClusterInfo.Node> nodes(KvProto.ClusterMap m, Map<String, ClusterInfo.Status> status) {
        return m.getNodesList().stream().map(n -> new ClusterInfo.Node(n.getEndpoint(), n.getNodeId(),
                nodeState(n.getState()), n.getSinceMs(), n.getDownSinceMs(), status.get(n.getEndpoint()))).toList();
    }

    static MapReplica mapReplica(KvProto.MapReplicaResponse r) {
        return new MapReplica(r.getNode(), r.getRole(), r.getLeader(), r.getVotersList(), r.getLearnersList(),
                r.getLastLogIndex(), r.getMap().getVersion(), nodes(r.getMap(), Map.of()));
    }
}
