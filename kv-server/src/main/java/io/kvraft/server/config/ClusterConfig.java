package io.kvraft.server.config;

import io.kvraft.common.config.HostPort;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

import static java.util.Objects.requireNonNullElse;
import static java.util.Objects.requireNonNull;

/**
 * The {@code cluster:} section of a node's YAML: who the nodes are and how the key space starts out.
 *
 * @param peers       every node's endpoint at the cluster's start; each region has a replica on
 *                    {@code replication.factor} of them, and the first three (or all, when fewer) hold the
 *                    cluster map's Raft group. Not given on a node that joins: then its join list and itself.
 * @param regionCount regions the key space is split into, evenly by the first two key bytes
 * @param splitKeys   explicit split points (hex, ascending), instead of the even split; regionCount
 *                    must then be splitKeys.size() + 1
 * @param join        members of a running cluster (host:port) that this node, started on an empty data directory,
 *                    asks to let it join; it starts with no region, and the cluster moves replicas onto it
 */
public record ClusterConfig(List<String> peers, Integer regionCount, List<String> splitKeys, List<String> join) {
    public ClusterConfig {
        join = List.copyOf(requireNonNullElse(join, List.of()));
        join.forEach(HostPort::parse);
        if (peers == null && !join.isEmpty()) {
            peers = join;
        }
        requireNonNull(peers, "cluster.peers is required (or cluster.join, on a node that joins a running cluster)");
        peers = List.copyOf(peers);
        if (peers.isEmpty()) {
            throw new IllegalArgumentException("cluster.peers must not be empty");
        }
        peers.forEach(HostPort::parse);
        if (peers.stream().distinct().count() != peers.size()) {
            throw new IllegalArgumentException("cluster.peers has duplicates: " + peers);
        }
        splitKeys = List.copyOf(requireNonNullElse(splitKeys, List.of()));
        parseSplits(splitKeys);  // hex, non-empty, strictly ascending: fail at load, naming the file
        regionCount = requireNonNullElse(regionCount, splitKeys.isEmpty() ? 24 : splitKeys.size() + 1);
        if (regionCount < 1 || regionCount > 65536) {
            throw new IllegalArgumentException("cluster.regionCount must be in 1..65536, got " + regionCount);
        }
        if (!splitKeys.isEmpty() && regionCount != splitKeys.size() + 1) {
            throw new IllegalArgumentException("cluster.regionCount (" + regionCount
                    + ") must be splitKeys.size() + 1 (" + (splitKeys.size() + 1) + ")");
        }
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

    public ClusterConfig(List<String> peers, Integer regionCount, List<String> splitKeys) {
        this(peers, regionCount, splitKeys, null);
    }

    /** Whether this node joins a running cluster ({@code cluster.join}) rather than being one it starts with. */
    public boolean joining() {
        return !join.isEmpty();
    }

    /** A joining node's peers: the members it knows of and itself. */
    ClusterConfig withSelf(String endpoint) {
        if (peers.contains(endpoint)) {
            return this;
        }
        List<String> all = new java.util.ArrayList<>(peers);
        all.add(endpoint);
        return new ClusterConfig(all, regionCount, splitKeys, join);
    }

    /** The nodes that hold the cluster map's Raft group when the cluster starts: the first three peers. */
    public List<String> metaVoters() {
        return joining() ? List.of() : peers.subList(0, Math.min(3, peers.size()));
    }
}
