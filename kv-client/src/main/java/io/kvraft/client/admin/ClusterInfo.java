package io.kvraft.client.admin;

import java.util.List;

/**
 * The cluster map as its leader (the leader of the {@code kv-meta} Raft group) holds it, with that leader's view of
 * each node, the map group's members, the replica moves in progress and the regions (see {@link KvAdmin#cluster}).
 *
 * @param clusterId   random, made once when the cluster's map was first written
 * @param factor      replication.factor
 * @param mapVersion  bumped by every change to the map
 * @param nodes       every node of the map, removed ones included
 * @param mapLeader   host:port of the map's leader whose view this is; empty when the answer holds the map only
 * @param mapVoters   the map group's voters
 * @param mapLearners the map group's learners (every other node)
 * @param moves       the replica moves in progress
 * @param movesDone   the moves done by this map leader since it took over
 * @param regions     every region as its leader (or else a replica) last reported it to the map's leader
 */
public record ClusterInfo(String clusterId, int factor, long mapVersion, List<Node> nodes, String mapLeader,
                          List<String> mapVoters, List<String> mapLearners, List<Move> moves, long movesDone,
                          List<RegionInfo> regions) {

    public ClusterInfo {
        nodes = List.copyOf(nodes);
        mapVoters = List.copyOf(mapVoters);
        mapLearners = List.copyOf(mapLearners);
        moves = List.copyOf(moves);
        regions = List.copyOf(regions);
    }

    /**
     * A node of the map.
     *
     * @param endpoint    host:port
     * @param nodeId      its data directory's random id (store id): a wiped node comes back with another
     * @param state       its state in the map; null for a state this client does not know (a newer server's)
     * @param sinceMs     wall clock of the map's leader when the node got this state
     * @param downSinceMs wall clock of the map's leader when it found the node down (silent longer than
     *                    placement.downAfterMs); 0: not down
     * @param status      the map leader's view of the node; null when the answer has none (see {@link KvAdmin#nodeState})
     */
    public record Node(String endpoint, String nodeId, NodeState state, long sinceMs, long downSinceMs, Status status) {

        /** Whether the map's leader heard from the node within the last few seconds. */
        public boolean live() {
            return status != null && status.live();
        }
    }

    /**
     * The map leader's view of one node.
     *
     * @param live         reported within the last few seconds
     * @param replicas     regions whose voters list it (the map's view, whether or not it holds them)
     * @param leaders      regions it leads
     * @param diskBytes    bytes under its data directory
     * @param lastReportMs ms since its last report (0: never reported since this leader took over)
     * @param down         silent longer than placement.downAfterMs: its replicas are rebuilt on other nodes
     * @param missing      of its replicas, regions its own reports do not hold (a wiped disk not rebuilt yet)
     */
    public record Status(boolean live, int replicas, int leaders, long diskBytes, long lastReportMs, boolean down,
                         int missing) {
    }

    /**
     * A replica move in progress.
     *
     * @param reason drain, down, balance or removed
     */
    public record Move(int regionId, String from, String to, String reason, long runningMs) {
    }

    /** {@code endpoint}'s node in the map, or null when the map has none. */
    public Node node(String endpoint) {
        for (Node n : nodes) {
            if (n.endpoint().equals(endpoint)) {
                return n;
            }
        }
        return null;
    }

    /** The region replicas {@code endpoint} holds, as the map's leader counts them (else from the regions' peers). */
    public int replicas(String endpoint) {
        Node n = node(endpoint);
        if (n != null && n.status() != null) {
            return n.status().replicas();
        }
        int count = 0;
        for (RegionInfo r : regions) {
            if (r.peers().contains(endpoint)) {
                count++;
            }
        }
        return count;
    }
}
