package io.kvraft.server.host;

import io.kvraft.server.region.Region;

import io.kvraft.server.config.ClusterConfig;
import io.kvraft.server.store.KeyRange;

import java.util.ArrayList;
import java.util.List;

/**
 * How the key space is split into regions, and on which nodes each region's replicas live. Without explicit split
 * keys the space is split evenly by the first two key bytes (unsigned), which balances uniformly random keys. Region
 * ids start at 1. Replicas go round the nodes in turn: region i (from 0) on nodes i .. i+factor-1 of
 * {@code cluster.peers}, so every node holds within one of the same number of regions; with a factor equal to the
 * node count every region is on every node, in the configured order.
 */
public final class RegionLayout {

    private RegionLayout() {
    }

    /** @param peers the nodes holding the region's replicas, as host:port */
    public record RegionSpec(int id, KeyRange range, List<String> peers) {
        public RegionSpec {
            peers = List.copyOf(peers);
        }
    }

    /** The layout with a replica of every region on every node. */
    public static List<RegionSpec> of(ClusterConfig cluster) {
        return of(cluster, cluster.peers().size());
    }

    public static List<RegionSpec> of(ClusterConfig cluster, int factor) {
        List<String> nodes = cluster.peers();
        if (factor < 1 || factor > nodes.size()) {
            throw new IllegalArgumentException("replication factor " + factor + " for " + nodes.size() + " nodes");
        }
        List<byte[]> splits = cluster.splitKeys().isEmpty()
                ? evenSplits(cluster.regionCount())
                : ClusterConfig.parseSplits(cluster.splitKeys());
        List<RegionSpec> regions = new ArrayList<>(splits.size() + 1);
        byte[] start = new byte[0];
        for (int i = 0; i <= splits.size(); i++) {
            byte[] end = i < splits.size() ? splits.get(i) : new byte[0];
            regions.add(new RegionSpec(i + 1, new KeyRange(start, end), placement(nodes, factor, i)));
            start = end;
        }
        return List.copyOf(regions);
    }

    /** The nodes of the {@code index}-th region (from 0): all of them in order, or {@code factor} in turn. */
    static List<String> placement(List<String> nodes, int factor, int index) {
        if (factor == nodes.size()) {
            return nodes;
        }
        List<String> chosen = new ArrayList<>(factor);
        for (int k = 0; k < factor; k++) {
            chosen.add(nodes.get((index + k) % nodes.size()));
        }
        return chosen;
    }

    static List<byte[]> evenSplits(int regionCount) {
        List<byte[]> splits = new ArrayList<>();
        for (int i = 1; i < regionCount; i++) {
            int prefix = (int) ((long) i * 65536 / regionCount);
            splits.add(new byte[]{(byte) (prefix >>> 8), (byte) prefix});
        }
        return splits;
    }
}
