package io.kvraft.client.admin;

import java.util.List;
import java.util.Map;

/**
 * A forced recovery of the cluster map's own group, as {@link KvAdmin#planMapRecovery} found it.
 *
 * @param voters       the group's voters, sorted, as the surviving voter with the longest log has them
 * @param survivors    the voters whose node answered, sorted: fewer than a majority; they become the voters
 * @param lost         the other voters: their nodes are marked removed in the map once a survivor leads it
 * @param lastLogIndex the longest survivor log's last index: map changes after it may be lost
 * @param replicas     each survivor's replica of the group as its node answered
 */
public record MapRecoveryPlan(List<String> voters, List<String> survivors, List<String> lost, long lastLogIndex,
                              Map<String, MapReplica> replicas) {
}
