package io.kvraft.client.admin;

import java.util.List;
import java.util.Map;

/**
 * A forced recovery of a region, as {@link KvAdmin#planRecovery} found it.
 *
 * @param confVer   the conf version of the survivors' configuration
 * @param voters    the region's voters in it, sorted
 * @param survivors the voters whose node is live and holds a replica of it at that conf version, sorted: fewer
 *                  than a majority of the voters; they become the region's voters
 * @param lost      the other voters, each on a node the cluster map lists as removed
 * @param applied   the highest applied index among the survivors: writes acknowledged after it may be lost
 * @param replicas  each survivor's replica as its node reported it
 */
public record RecoveryPlan(int regionId, long confVer, List<String> voters, List<String> survivors, List<String> lost,
                           long applied, Map<String, RegionInfo> replicas) {
}
