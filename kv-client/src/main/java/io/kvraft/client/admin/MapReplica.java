package io.kvraft.client.admin;

import java.util.List;

/**
 * One node's replica of the cluster map's own Raft group, as the node answered without a leader (see
 * {@link KvAdmin#planMapRecovery}).
 *
 * @param node         host:port of the node
 * @param role         its replica's role in the group: LEADER, FOLLOWER, CANDIDATE, LEARNER, ...
 * @param leader       the group's leader as this replica knows it; empty when none
 * @param voters       the group's voters in this replica's configuration
 * @param learners     the group's learners in it
 * @param lastLogIndex the last entry of this replica's log
 * @param mapVersion   the version of the map as this replica applied it
 * @param mapNodes     the map's nodes as this replica applied them (no leader's view)
 */
public record MapReplica(String node, String role, String leader, List<String> voters, List<String> learners,
                         long lastLogIndex, long mapVersion, List<ClusterInfo.Node> mapNodes) {

    public MapReplica {
        voters = List.copyOf(voters);
        learners = List.copyOf(learners);
        mapNodes = List.copyOf(mapNodes);
    }
}
