package io.kvraft.client.route;

import io.kvraft.client.route.RouteTable.Route;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;
import io.kvraft.common.RegionViews;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The client's routes: the {@link RouteTable}, how it is fetched and refreshed (from the cluster map, or node by node),
 * the nodes the client knows of, and what a failed request teaches about its region's leader. Shared by a client, its
 * views and its admin view.
 */
public final class Routes {

    private static final RegionsRequest MAP_LOOKUP = RegionsRequest.newBuilder().setCluster(true).build();

    private final List<String> servers;
    private final Calls calls;
    private final RouteTable table = new RouteTable();
    private final RetryPolicy retry = RetryPolicy.defaults();
    private CompletableFuture<Void> refreshing; // guarded by this

    /** @param servers the configured seed servers, host:port */
    public Routes(List<String> servers, Calls calls) {
        this.servers = List.copyOf(servers);
        this.calls = calls;
    }

    public RouteTable table() {
        return table;
    }

    /**
     * Fetches the route table once, so that a wrong address fails at connect with a clear error: rounds of asking the
     * servers until the operation timeout, or until an error that no retry can mend.
     *
     * @throws KvException UNAVAILABLE when no server answered
     */
    public void connect() {
        long deadline = calls.deadline();
        KvException last = null;
        while (System.nanoTime() < deadline) {
            try {
                refresh().join();
                return;
            } catch (RuntimeException e) {
                last = KvException.unwrap(e);
                if (!RetryPolicy.retriable(last.code()) || last.permanent()) {
                    break;
                }
                try {
                    Thread.sleep(100); // a pause between rounds of asking every seed, not a wait for a state
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        throw last != null ? last : new KvException(ErrorCode.UNAVAILABLE, "no server answered: " + servers);
    }

    /** One refresh at a time; callers that arrive meanwhile share it. */
    public CompletableFuture<Void> refresh() {
        return refresh(null);
    }

    /** As {@link #refresh()}, asking {@code first} (a host:port; null or empty: none) before the others. */
    public synchronized CompletableFuture<Void> refresh(String first) {
        if (refreshing != null && !refreshing.isDone()) {
            return refreshing;
        }
        refreshing = lookUp(first).thenAccept(resp -> table.update(resp.getRegionsList()));
        return refreshing;
    }

    /** The nodes this client knows of: the configured servers, then the replicas its routes name. */
    public List<String> knownNodes() {
        return targets(null);
    }

    /** The nodes to ask, {@code first} (when given) first: the configured servers, then the replicas routes name. */
    private List<String> targets(String first) {
        Set<String> targets = new LinkedHashSet<>();
        if (first != null && !first.isEmpty()) {
            targets.add(first);
        }
        targets.addAll(servers);
        for (Route r : table.routes()) {
            targets.addAll(r.info().getPeersList());
        }
        return new ArrayList<>(targets);
    }

    /** Where a request of {@code mode} goes: the believed leader, or any replica for FOLLOWER and STALE reads. */
    public static String target(Route route, ReadMode mode) {
        return mode == ReadMode.FOLLOWER || mode == ReadMode.STALE ? route.anyReplica() : route.target();
    }

    /**
     * Learns from a failed request (the leader hint, or that {@code target} is not the leader) and says how long to
     * wait before the next try, or {@link RetryPolicy#NO_RETRY}.
     */
    public long retryDelay(Route route, String target, Error error, int attempts, boolean idempotent, long deadlineNanos) {
        ErrorCode code = ErrorCode.fromWire(error.getCode());
        String hint = error.getLeaderHint();
        if (route != null) {
            if (!hint.isEmpty() && !hint.equals(target)) {
                route.leader(hint);
            } else if (code != ErrorCode.BUSY) {
                route.leaderUnknown(target);
            }
        }
        return retry.delayNanos(code, attempts, !hint.isEmpty(), idempotent, System.nanoTime(), deadlineNanos);
    }

    /**
     * The cluster's regions as the nodes answer now, merged node by node ({@link RegionViews}), asked of the known
     * nodes in turn until the merged answers cover the key space.
     */
    public CompletableFuture<List<RegionInfo>> regions() {
        return ask(targets(null), 0, null, new RegionViews()).thenApply(RegionsResponse::getRegionsList);
    }

    /**
     * The routes for a refresh. When {@code first}, a node that said a route is stale, is given: its own regions, when
     * they cover the key space (every node holds every region when there are no more nodes than replicas), so a
     * refresh after a split or a move costs one round trip to a node that knows, as before the map answered lookups.
     * Otherwise the cluster map's answer (any node answers it, from the map's leader), merged with {@code first}'s own
     * regions (the map hears from each node once per {@code placement.intervalMs}, so it can lag a split, merge or
     * move by that much; the newer view of each region wins, as {@link RegionViews} merges) when they cover the key
     * space; else, as before the map answered lookups, the nodes' own regions, merged node by node (an error, a
     * timeout, an older server, a map leader still waiting for reports). The route table then keeps a region of a
     * higher epoch than the answer's.
     */
    private CompletableFuture<RegionsResponse> lookUp(String first) {
        List<String> targets = targets(first);
        if (first == null || first.isEmpty()) {
            return mapOrNodes(targets, null);
        }
        return calls.<RegionsResponse>call(first, RegionsRequest.getDefaultInstance())
                .handle((resp, err) -> err == null && ok(resp) ? resp : null)
                .thenCompose(own -> {
                    RegionViews views = new RegionViews();
                    if (own != null) {
                        views.add(own.getRegionsList());
                    }
                    return !views.isEmpty() && views.covers()
                            ? CompletableFuture.completedFuture(RegionsResponse.newBuilder().addAllRegions(views.regions())
                                    .build())
                            : mapOrNodes(targets, own);
                });
    }

    /** The map's regions merged with {@code own} (a node's own answer, or null) when they cover; else node by node. */
    private CompletableFuture<RegionsResponse> mapOrNodes(List<String> targets, RegionsResponse own) {
        return askMap(targets, 0, null).thenCompose(m -> {
            RegionViews nodes = new RegionViews();
            if (own != null) {
                nodes.add(own.getRegionsList());
            }
            if (m.views() == null) {
                return ask(targets, m.next(), m.last(), nodes);
            }
            RegionViews both = new RegionViews();
            both.add(m.views().regions());
            if (own != null) {
                both.add(own.getRegionsList());
            }
            if (both.covers()) {
                return CompletableFuture.completedFuture(RegionsResponse.newBuilder().addAllRegions(both.regions()).build());
            }
            // the node's newer regions leave a gap in the map's older view: merge the nodes' answers as before
            return ask(targets, 0, null, nodes);
        });
    }

    /** A route lookup from the cluster map: the map's regions when they cover the key space (else null), and
     *  where node-by-node asking goes on when they do not. */
    private record MapLookup(RegionViews views, int next, Throwable last) {
    }

    /**
     * Asks {@code targets} from the {@code i}-th on for the cluster map's regions ({@code RegionsRequest.cluster}): the
     * next node when one cannot be reached or is stopping; the first answer decides, and so does a timeout (at most
     * one wait is spent on the map). Node-by-node asking goes on from the node that answered, or past the one that
     * timed out: those before it just failed (when all did, it fails at once, as it would have).
     */
    private CompletableFuture<MapLookup> askMap(List<String> targets, int i, Throwable last) {
        if (i >= targets.size() || last != null && KvException.unwrap(last).permanent()) {
            return CompletableFuture.completedFuture(new MapLookup(null, i, last));
        }
        return calls.transport().<RegionsResponse>call(targets.get(i), MAP_LOOKUP, mapLookupTimeoutMs())
                .handle((resp, err) -> {
                    if (err != null && KvException.unwrap(err).code() == ErrorCode.TIMEOUT) {
                        return CompletableFuture.completedFuture(new MapLookup(null, i + 1, err));
                    }
                    if (err != null || resp.getError().getCode() == KvProto.ErrorCode.SHUTTING_DOWN) {
                        return askMap(targets, i + 1, err != null ? err : new KvException(ErrorCode.SHUTTING_DOWN,
                                resp.getError().getDetail()));
                    }
                    RegionViews views = new RegionViews();
                    if (ok(resp)) {
                        // a server that predates map lookups answers its own regions: they may cover, too
                        views.add(resp.getRegionsList());
                    }
                    return CompletableFuture.completedFuture(new MapLookup(views.covers() ? views : null, i, last));
                }).thenCompose(f -> f);
    }

    /**
     * How long a refresh waits for the map's answer before it asks the nodes instead: the request timeout, at most
     * 2.5 s (a node relays a lookup to the map's leader for at most 1.5 s; a map leader stalled, in a long GC say,
     * must not stall every client's refresh for longer).
     */
    private long mapLookupTimeoutMs() {
        return Math.min(calls.requestTimeoutMs(), 2_500);
    }

    private static boolean ok(RegionsResponse resp) {
        return !resp.hasError() || resp.getError().getCode() == KvProto.ErrorCode.OK;
    }

    /**
     * The cluster's regions as the cluster map's leader last heard of them from the nodes (a route lookup asked of
     * the servers in turn, relayed by the one asked to the map's leader); fails with the server's error when the map
     * cannot answer for the whole key space.
     */
    public CompletableFuture<RegionsResponse> mapRegions() {
        return mapRegions(targets(null), 0, null);
    }

    private CompletableFuture<RegionsResponse> mapRegions(List<String> targets, int i, Throwable last) {
        if (i >= targets.size() || last != null && KvException.unwrap(last).permanent()) {
            return CompletableFuture.failedFuture(last != null ? KvException.unwrap(last)
                    : new KvException(ErrorCode.UNAVAILABLE, "no servers configured"));
        }
        return calls.<RegionsResponse>call(targets.get(i), MAP_LOOKUP)
                .handle((resp, err) -> {
                    if (err != null || resp.getError().getCode() == KvProto.ErrorCode.SHUTTING_DOWN) {
                        return mapRegions(targets, i + 1, err != null ? err : new KvException(ErrorCode.SHUTTING_DOWN,
                                resp.getError().getDetail()));
                    }
                    if (!ok(resp)) {
                        return CompletableFuture.<RegionsResponse>failedFuture(KvException.fromWire(resp.getError()));
                    }
                    if (resp.getMapLeader().isEmpty() && !resp.getFromCopy()) {
                        return CompletableFuture.<RegionsResponse>failedFuture(new KvException(ErrorCode.UNAVAILABLE,
                                "server " + targets.get(i) + " answers no route lookups from the cluster map (an older"
                                        + " version)"));
                    }
                    return CompletableFuture.completedFuture(resp);
                }).thenCompose(f -> f);
    }

    /**
     * Asks {@code targets} from the {@code i}-th on, merging their answers, until the merged map covers the key space
     * (with a replica of every region on every node, the first answer does); then, or when all were asked, answers
     * with what was merged, or fails when no one answered.
     */
    private CompletableFuture<RegionsResponse> ask(List<String> targets, int i, Throwable last, RegionViews views) {
        // a node that refused this client's TLS settings: the others share its CA and would refuse them too
        boolean refused = last != null && KvException.unwrap(last).permanent();
        if (!views.isEmpty() && (views.covers() || i >= targets.size() || refused)) {
            return CompletableFuture.completedFuture(RegionsResponse.newBuilder().addAllRegions(views.regions()).build());
        }
        if (i >= targets.size() || refused) {
            String detail = last == null ? "no servers configured"
                    : "no server answered of " + targets + "; last: " + KvException.unwrap(last).getMessage();
            KvException e = last != null && KvException.unwrap(last).permanent()
                    ? KvException.permanent(ErrorCode.UNAVAILABLE, detail) : new KvException(ErrorCode.UNAVAILABLE, detail);
            return CompletableFuture.failedFuture(e);
        }
        return calls.<RegionsResponse>call(targets.get(i), RegionsRequest.getDefaultInstance())
                .handle((resp, err) -> {
                    if (err == null && ok(resp) && resp.getRegionsCount() > 0) {
                        views.add(resp.getRegionsList());
                        // nodes that joined after this client was configured: learned from the replicas' lists
                        for (RegionInfo r : resp.getRegionsList()) {
                            for (String p : r.getPeersList()) {
                                if (!targets.contains(p)) {
                                    targets.add(p);
                                }
                            }
                        }
                        return ask(targets, i + 1, last, views);
                    }
                    return ask(targets, i + 1, err != null ? err : new KvException(
                            ErrorCode.fromWire(resp.getError().getCode()), resp.getError().getDetail()), views);
                }).thenCompose(f -> f);
    }
}
