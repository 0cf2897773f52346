package io.kvraft.server.region;

import io.kvraft.server.config.ServerConfig.ClusterConfig;
import io.kvraft.server.store.KeyRange;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * How the key space is split into regions. Without explicit split keys the space is split evenly
 * by the first two key bytes (unsigned), which balances uniformly random keys. Region ids start at 1.
 */
public final class RegionLayout {

    private RegionLayout() {
    }

    public record RegionSpec(int id, KeyRange range) {
    }

    public static List<RegionSpec> of(ClusterConfig cluster) {
        List<byte[]> splits = cluster.splitKeys().isEmpty()
                ? evenSplits(cluster.regionCount())
                : parseSplits(cluster.splitKeys());
        List<RegionSpec> regions = new ArrayList<>(splits.size() + 1);
        byte[] start = new byte[0];
        for (int i = 0; i <= splits.size(); i++) {
            byte[] end = i < splits.size() ? splits.get(i) : new byte[0];
            regions.add(new RegionSpec(i + 1, new KeyRange(start, end)));
            start = end;
        }
        return List.copyOf(regions);
    }

    static List<byte[]> evenSplits(int regionCount) {
        List<byte[]> splits = new ArrayList<>();
        for (int i = 1; i < regionCount; i++) {
            int prefix = (int) ((long) i * 65536 / regionCount);
            splits.add(new byte[]{(byte) (prefix >>> 8), (byte) prefix});
        }
        return splits;
    }

    /** Parses split keys given in hex; rejects non-hex, empty and not strictly ascending keys. */
    public static List<byte[]> parseSplits(List<String> hex) {
        List<byte[]> splits = new ArrayList<>();
        for (String h : hex) {
            byte[] key;
            try {
                key = HexFormat.of().parseHex(h);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("cluster.splitKeys: '" + h + "' is not hex");
            }
            if (key.length == 0) {
                throw new IllegalArgumentException("cluster.splitKeys: empty split key");
            }
            if (!splits.isEmpty() && Arrays.compareUnsigned(splits.get(splits.size() - 1), key) >= 0) {
                throw new IllegalArgumentException("cluster.splitKeys must be strictly ascending at '" + h + "'");
            }
            splits.add(key);
        }
        return splits;
    }
}
