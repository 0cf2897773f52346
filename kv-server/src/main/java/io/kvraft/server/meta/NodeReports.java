package io.kvraft.server.meta;

import io.kvraft.common.Errors;
import io.kvraft.common.RegionViews;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeReport;
import io.kvraft.common.proto.KvProto.NodeReportResponse;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.server.balance.Placement;
import io.kvraft.server.config.ServerConfig;

import com.alipay.sofa.jraft.rpc.RpcContext;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * On the map's leader: the nodes' reports of their regions (one message per node and {@code placement.intervalMs}) and
 * the view of the cluster made from them: every region as the nodes last reported it, which nodes are live or down, and
 * which voters' replicas are missing. A new leader starts with no report: it forgets those of an earlier term.
 */
final class NodeReports {

    /** A node's last report, and when it came (nanoTime). */
    record Report(NodeReport report, long atNanos) {
    }

    /** How long a voter's replica must stay missing from its node's reports before it is rebuilt. */
    private static final long MISSING_CONFIRM_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final ServerConfig config;
    private final MetaGroup group;
    private final MapRecovery recovery;
    private final long intervalNanos;
    private final long downAfterNanos;
    private final Map<String, Report> reports = new ConcurrentHashMap<>();
    private volatile long leaderSinceNanos;
    /** Voters whose live node reports no replica of their region, since when (nanoTime). */
    private final Map<String, Long> missingSince = new ConcurrentHashMap<>();

    NodeReports(ServerConfig config, MetaGroup group, MapRecovery recovery) {
        this.config = config;
        this.group = group;
        this.recovery = recovery;
        this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(config.placement().intervalMs());
        this.downAfterNanos = TimeUnit.MILLISECONDS.toNanos(config.placement().downAfterMs());
    }

    /** On the group's thread: this node leads the map from now, or no longer does; the reports start again. */
    void leaderChanged() {
        leaderSinceNanos = System.nanoTime();
        reports.clear();
        missingSince.clear();
    }

    /** When this node last became (or stopped being) the map's leader (nanoTime). */
    long leaderSinceNanos() {
        return leaderSinceNanos;
    }

    /** The node's last report, or null. */
    Report get(String endpoint) {
        return reports.get(endpoint);
    }

    /** How many nodes have reported to this leader. */
    int size() {
        return reports.size();
    }

    boolean isEmpty() {
        return reports.isEmpty();
    }

    void report(RpcContext ctx, NodeReport report) {
        ctx.sendResponse(handle(report));
    }

    NodeReportResponse handle(NodeReport report) {
        if (!group.isLeader()) {
            return NodeReportResponse.newBuilder().setError(group.notLeader(config.endpoint())).build();
        }
        ClusterMap map = group.map();
        if (!map.getClusterId().isEmpty() && !report.getClusterId().isEmpty()
                && !report.getClusterId().equals(map.getClusterId())) {
            return NodeReportResponse.newBuilder().setError(Errors.of(ErrorCode.WRONG_CLUSTER, "node "
                    + report.getEndpoint() + " belongs to cluster " + report.getClusterId() + ", not "
                    + map.getClusterId())).build();
        }
        NodeRecord rec = Membership.find(map, report.getEndpoint());
        if (Membership.removedForGood(rec, report.getNodeId(), recovery)) {
            return NodeReportResponse.newBuilder().setError(Errors.of(ErrorCode.NODE_REMOVED, "node "
                    + report.getEndpoint() + " was removed from cluster " + map.getClusterId())).build();
        }
        reports.put(report.getEndpoint(), new Report(report, System.nanoTime()));
        return NodeReportResponse.getDefaultInstance();
    }

    /** The map's record of the regions with the nodes' reports over it: a report of a region is newer or as new. */
    RegionViews recordAndReports(ClusterMap map) {
        RegionViews views = new RegionViews();
        views.add(map.getRegionsList());
        reports.values().forEach(r -> views.add(r.report().getRegionsList()));
        return views;
    }

    /**
     * The nodes' reports merged into one view per region ({@link RegionViews}'s rule): the newest shape (highest epoch)
     * wins, so a report from before a split or merge loses to one after it whoever sent it; at one epoch, the higher
     * conf version (newer voters), then the latest term, then the report of the node that is the region's leader, then
     * one that knows a leader. A region no node
     * reports as its leader thus takes a replica's report of the highest epoch. Regions a newer region overlaps (the
     * report of a node that had not applied a split or merge yet) are left out.
     */
    static RegionViews merged(java.util.Collection<NodeReport> reports) {
        RegionViews views = new RegionViews();
        for (NodeReport r : reports) {
            views.add(r.getRegionsList());
        }
        return views;
    }

    /** Every region as the nodes last reported it (the leader's own view first), and which nodes are live or down. */
    Placement.View view() {
        return view(false);
    }

    /**
     * @param track whether to record when each missing replica was first seen (placement's tick does, once per
     *              interval; requests that only read the view do not)
     */
    Placement.View view(boolean track) {
        RegionViews views = merged(reports.values().stream().map(Report::report).toList());
        long now = System.nanoTime();
        Set<String> live = new HashSet<>();
        Set<String> down = new HashSet<>();
        long liveNanos = 3 * intervalNanos + TimeUnit.SECONDS.toNanos(2);
        Map<String, Set<Integer>> held = new java.util.HashMap<>();
        for (NodeRecord n : group.map().getNodesList()) {
            Report r = reports.get(n.getEndpoint());
            long age = r == null ? now - leaderSinceNanos : now - r.atNanos();
            if (r != null && age < liveNanos) {
                live.add(n.getEndpoint());
                Set<Integer> ids = new HashSet<>();
                r.report().getRegionsList().forEach(x -> ids.add(x.getId()));
                held.put(n.getEndpoint(), ids);
            }
            // silent too long, or found so by an earlier leader of the map and not heard from since; not before this
            // leader had time to hear from every live node, so a node back just as the leader changed is not taken down
            boolean recordedDown = n.getDownSinceMs() != 0 && !live.contains(n.getEndpoint())
                    && now - leaderSinceNanos >= liveNanos;
            if ((age >= downAfterNanos || recordedDown) && n.getState() != NodeState.REMOVED) {
                down.add(n.getEndpoint());
            }
        }
        List<RegionInfo> regions = views.regions();
        // a voter on a live node that reports no replica of its region: missing, once it stays so for a while (a
        // replica that has not applied its region's split yet lacks the new region for a moment)
        Set<String> seen = new HashSet<>();
        for (RegionInfo r : regions) {
            for (String v : r.getPeersList()) {
                Set<Integer> ids = held.get(v);
                if (ids != null && !ids.contains(r.getId())) {
                    String key = Placement.missingKey(r.getId(), v);
                    seen.add(key);
                    if (track) {
                        missingSince.putIfAbsent(key, now);
                    }
                }
            }
        }
        if (track) {
            missingSince.keySet().retainAll(seen);
        }
        Set<String> missing = new HashSet<>();
        for (String k : seen) {
            Long since = missingSince.get(k);
            if (since != null && now - since >= MISSING_CONFIRM_NANOS) {
                missing.add(k);
            }
        }
        return new Placement.View(regions, live, down, missing, seen);
    }
}
