package io.kvraft.client.admin;

import java.util.List;

/**
 * Every region as the cluster map knows it (see {@link KvAdmin#mapRegions}).
 *
 * @param regions   the regions, each with the newest report over the map's record
 * @param node      host:port of the node asked
 * @param mapLeader the map's leader whose view it is; empty when {@code fromCopy}
 * @param fromCopy  the map's leader did not answer: the asked node's own copy of the map, with leaders only of the
 *                  regions that node holds
 */
public record MapRegions(List<RegionInfo> regions, String node, String mapLeader, boolean fromCopy) {

    public MapRegions {
        regions = List.copyOf(regions);
    }
}
