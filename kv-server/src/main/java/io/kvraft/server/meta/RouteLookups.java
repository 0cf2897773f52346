package io.kvraft.server.meta;

import io.kvraft.common.Errors;
import io.kvraft.common.KvException;
import io.kvraft.common.RegionViews;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.Region;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Route lookups from the cluster map ({@code RegionsRequest.cluster}), on any node: on the map's leader, every region as
 * the nodes last reported it ({@link NodeReports#merged}); elsewhere, the leader's answer, relayed (one hop, at most
 * {@link #RELAY_TIMEOUT_MS}), or this node's copy of the map when the leader cannot answer. Never a partial list: an
 * error when the map cannot answer for the whole key space, so the client asks the nodes one by one instead.
 */
final class RouteLookups {

    /** How long a node waits for the map's leader to answer a route lookup it relays (clients wait 5 s by default). */
    static final long RELAY_TIMEOUT_MS = 1_500;
    /** A new leader of the map answers route lookups once every node had this many intervals to report to it. */
    private static final int LOOKUP_AFTER_INTERVALS = 2;

    private final ServerConfig config;
    private final RegionHost host;
    private final MetaGroup group;
    private final Transport peers;
    private final NodeReports reports;
    private final long intervalNanos;

    RouteLookups(ServerConfig config, RegionHost host, MetaGroup group, Transport peers, NodeReports reports) {
        this.config = config;
        this.host = host;
        this.group = group;
        this.peers = peers;
        this.reports = reports;
        this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(config.placement().intervalMs());
    }

    CompletableFuture<RegionsResponse> clusterRegions(RegionsRequest req) {
        if (group.isLeader()) {
            return CompletableFuture.completedFuture(mapRegions());
        }
        String leader = group.leaderHint();
        if (req.getRelayed()) {
            return CompletableFuture.completedFuture(RegionsResponse.newBuilder().setNode(config.endpoint())
                    .setError(group.notLeader(config.endpoint())).build());
        }
        if (leader.isEmpty() || leader.equals(config.endpoint())) {
            return CompletableFuture.completedFuture(fromCopy("it knows no leader of the cluster map"));
        }
        return peers.<RegionsResponse>call(leader, req.toBuilder().setRelayed(true).build(), RELAY_TIMEOUT_MS)
                .handle((resp, e) -> {
                    if (e == null && (!resp.hasError() || resp.getError().getCode() == ErrorCode.OK)) {
                        return resp.toBuilder().setNode(config.endpoint()).build();
                    }
                    String why = e != null ? KvException.unwrap(e).getMessage() : resp.getError().getDetail();
                    return fromCopy("the cluster map's leader " + leader + " did not answer: " + why);
                });
    }

    /**
     * A route lookup answered from this node's own copy of the map's region record, with the regions this node holds
     * over it (they know their leaders): when the map's leader cannot answer. An error when the two do not cover the key
     * space (a map made before regions were recorded, or not made yet).
     */
    private RegionsResponse fromCopy(String why) {
        RegionsResponse.Builder b = RegionsResponse.newBuilder().setNode(config.endpoint());
        ClusterMap map = group.map();
        if (map.getClusterId().isEmpty()) {
            return b.setError(Errors.of(ErrorCode.NO_LEADER, "the cluster map is not made yet (node "
                    + config.endpoint() + ": " + why + "); ask again in a moment")).build();
        }
        RegionViews views = new RegionViews();
        views.add(map.getRegionsList());
        views.add(host.regions().stream().map(Region::info).toList());
        if (!views.covers()) {
            return b.setError(Errors.of(ErrorCode.UNAVAILABLE, "node " + config.endpoint() + " cannot answer for"
                    + " the cluster map: " + why + ", and its copy of the map's " + map.getRegionsCount()
                    + " regions with its own does not cover the key space; ask the nodes")).build();
        }
        return b.setFromCopy(true).addAllRegions(views.regions()).build();
    }

    /**
     * The map leader's answer to a route lookup: every region, from the map's record with the nodes' reports over it, or
     * an error when they do not tell them all. A new leader with no record yet (a map of an older version) waits for
     * every node to report first.
     */
    private RegionsResponse mapRegions() {
        RegionsResponse.Builder b = RegionsResponse.newBuilder().setNode(config.endpoint());
        ClusterMap map = group.map();
        if (map.getClusterId().isEmpty()) {
            return b.setError(Errors.of(ErrorCode.NO_LEADER, "the cluster map is not made yet; ask again in a"
                    + " moment")).build();
        }
        long leading = System.nanoTime() - reports.leaderSinceNanos();
        if (map.getRegionsCount() == 0 && leading < LOOKUP_AFTER_INTERVALS * intervalNanos) {
            return b.setError(Errors.of(ErrorCode.UNAVAILABLE, "node " + config.endpoint() + " leads the cluster"
                    + " map since " + TimeUnit.NANOSECONDS.toMillis(leading) + " ms only: it waits for the nodes'"
                    + " reports; ask the nodes")).build();
        }
        RegionViews views = reports.recordAndReports(map);
        if (!views.covers()) {
            return b.setError(Errors.of(ErrorCode.UNAVAILABLE, "the cluster map's " + map.getRegionsCount()
                    + " recorded regions and the reports of " + reports.size() + " nodes to its leader "
                    + config.endpoint() + " do not cover the key space yet (" + views.regions().size()
                    + " regions); ask the nodes")).build();
        }
        return b.setMapLeader(config.endpoint()).addAllRegions(views.regions()).build();
    }
}
