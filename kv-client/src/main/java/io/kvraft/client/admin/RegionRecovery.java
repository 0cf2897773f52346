package io.kvraft.client.admin;

import io.kvraft.client.route.Calls;
import io.kvraft.client.route.MapLeaderCalls;
import io.kvraft.client.route.Routes;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ClusterResponse;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.NodeStatus;
import io.kvraft.common.proto.KvProto.RecoverRegionRequest;
import io.kvraft.common.proto.KvProto.RecoverRegionResponse;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Forced recovery of a region that lost a majority of its voters for good: {@link #plan} finds its surviving replicas
 * on the live nodes and checks that recovering is the only way left; {@link #recover} then has each survivor take the
 * survivors as the region's voters (the server's {@code RecoverRegionRequest}) and waits until one of them leads.
 */
final class RegionRecovery {

    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    /** Why nothing is planned while the map's leader lists no live node: a new leader has heard from none yet. */
    private static final String NO_LIVE_NODE = "the cluster map takes no node as live (a new leader of the map takes"
            + " none until the nodes report to it, every placement.intervalMs)";

    private final Routes routes;
    private final Calls calls;
    private final MapLeaderCalls mapLeader;

    RegionRecovery(Routes routes, Calls calls, MapLeaderCalls mapLeader) {
        this.routes = routes;
        this.calls = calls;
        this.mapLeader = mapLeader;
    }

    /** See {@link KvAdmin#planRecovery}. */
    CompletableFuture<RecoveryPlan> plan(int regionId) {
        return mapLeader.cluster().thenCompose(c -> answers(liveNodes(c)).thenApply(answers -> planFromAnswers(regionId,
                c.getMap(), answers)));
    }

    /**
     * The plan from the live nodes' answers (null: the node did not answer): as {@link #plan(int, ClusterMap, Map)},
     * but UNAVAILABLE (try again) rather than REGION_NOT_FOUND when no replica was found while a live node did not
     * answer or none is live: "no live node holds a replica" only once every live node said so.
     */
    static RecoveryPlan planFromAnswers(int regionId, ClusterMap map, Map<String, RegionsResponse> answers) {
        Map<String, KvProto.RegionInfo> replicas = replicasOf(answers, regionId);
        List<String> silent = silent(answers);
        if (replicas.isEmpty() && (answers.isEmpty() || !silent.isEmpty())) {
            throw new KvException(ErrorCode.UNAVAILABLE, "region " + regionId + ": no replica found, but "
                    + (answers.isEmpty() ? NO_LIVE_NODE
                    : "live nodes " + silent + " did not list their regions") + "; try again");
        }
        return plan(regionId, map, replicas);
    }

    /**
     * See {@link KvAdmin#surveyRecovery}: every region of the cluster map, from one answer of each live node; fails
     * with UNAVAILABLE when a live node does not answer, since its replicas could be the ones that make a region whole.
     */
    CompletableFuture<RecoverySurvey> survey() {
        return mapLeader.cluster().thenCompose(c -> answers(liveNodes(c)).thenApply(answers -> {
            if (answers.isEmpty()) {
                throw new KvException(ErrorCode.UNAVAILABLE, NO_LIVE_NODE + "; try again");
            }
            List<String> silent = silent(answers);
            if (!silent.isEmpty()) {
                throw new KvException(ErrorCode.UNAVAILABLE, "live nodes " + silent + " did not list their regions:"
                        + " without their replicas no region's survivors are known; try again");
            }
            List<RecoveryPlan> plans = new ArrayList<>();
            Map<Integer, KvException> refused = new TreeMap<>();
            int whole = 0;
            for (KvProto.RegionInfo region : c.getMap().getRegionsList()) {
                Map<String, KvProto.RegionInfo> replicas = replicasOf(answers, region.getId());
                if (wholeReason(replicas) != null) {
                    whole++;
                    continue;
                }
                try {
                    plans.add(plan(region.getId(), c.getMap(), replicas));
                } catch (KvException e) {
                    refused.put(region.getId(), e);
                }
            }
            return new RecoverySurvey(plans, refused, whole);
        }));
    }

    /** The nodes that did not answer (a null answer). */
    private static List<String> silent(Map<String, RegionsResponse> answers) {
        return answers.entrySet().stream().filter(a -> a.getValue() == null).map(Map.Entry::getKey).toList();
    }

    private static List<String> liveNodes(ClusterResponse c) {
        return c.getStatusList().stream().filter(NodeStatus::getLive).map(NodeStatus::getEndpoint).toList();
    }

    /** Each of {@code nodes}' replica of the region, as it answers now (those that do not or hold none left out). */
    private CompletableFuture<Map<String, KvProto.RegionInfo>> replicas(List<String> nodes, int regionId) {
        return answers(nodes).thenApply(answers -> replicasOf(answers, regionId));
    }

    /** Each of {@code nodes}' own regions as it answers now, by host:port; null for a node that did not answer. */
    private CompletableFuture<Map<String, RegionsResponse>> answers(List<String> nodes) {
        return calls.askAll(nodes, RegionsRequest.getDefaultInstance());
    }

    private static Map<String, KvProto.RegionInfo> replicasOf(Map<String, RegionsResponse> answers, int regionId) {
        Map<String, KvProto.RegionInfo> out = new TreeMap<>();
        answers.forEach((node, answer) -> {
            if (answer != null) {
                answer.getRegionsList().stream().filter(r -> r.getId() == regionId).findFirst()
                        .ifPresent(r -> out.put(node, r));
            }
        });
        return out;
    }

    /**
     * The plan from the live nodes' replicas of the region: refused (INVALID_ARGUMENT, or REGION_NOT_FOUND when no live
     * node holds one) unless no replica knows a leader, the replicas of the newest conf version are fewer than a
     * majority of its voters, and every other voter is on a node the map lists as removed.
     */
    static RecoveryPlan plan(int regionId, ClusterMap map, Map<String, KvProto.RegionInfo> replicas) {
        if (replicas.isEmpty()) {
            List<String> notRemoved = map.getRegionsList().stream().filter(r -> r.getId() == regionId)
                    .flatMap(r -> r.getPeersList().stream()).filter(p -> stateOf(map, p) != NodeState.REMOVED).toList();
            throw new KvException(ErrorCode.REGION_NOT_FOUND, "no live node holds a replica of region " + regionId
                    + (notRemoved.isEmpty() ? ": none survives to recover it from; restore its keys from a backup"
                    : ": its voters " + notRemoved + " are not removed from the cluster map: bring back those that"
                    + " are down (if their copies are gone for good, none survives: restore its keys from a backup)"));
        }
        String whole = wholeReason(replicas);
        if (whole != null) {
            throw refused(regionId, whole);
        }
        KvProto.RegionInfo newest = newest(replicas);
        List<String> voters = newest.getPeersList().stream().sorted().toList();
        List<String> survivors = survivors(replicas, newest);
        List<String> lost = voters.stream().filter(v -> !survivors.contains(v)).toList();
        for (String v : lost) {
            NodeState s = stateOf(map, v);
            if (s != NodeState.REMOVED) {
                throw refused(regionId, "its voter " + v + " is " + (s == null ? "not a node of the cluster map"
                        : s.name().toLowerCase(Locale.ROOT) + " in the cluster map") + ", not removed: if its copy is"
                        + " gone for good, remove it first (node remove " + v + " --force), so that it cannot come back"
                        + " with that copy and elect a leader of the old voters; if it can come back, bring it back"
                        + " instead");
            }
        }
        long applied = survivors.stream().mapToLong(n -> replicas.get(n).getAppliedIndex()).max().orElse(0);
        Map<String, RegionInfo> kept = new TreeMap<>();
        survivors.forEach(n -> kept.put(n, AdminWire.region(replicas.get(n))));
        return new RecoveryPlan(regionId, newest.getConfVer(), voters, List.copyOf(survivors), lost, applied,
                kept);
    }

    /**
     * Why a region with these live replicas needs no recovery (a replica knows a leader, or the live voters of its
     * newest configuration are a majority), or null when it lost its majority (or has no live replica at all).
     */
    private static String wholeReason(Map<String, KvProto.RegionInfo> replicas) {
        if (replicas.isEmpty()) {
            return null;
        }
        for (Map.Entry<String, KvProto.RegionInfo> e : replicas.entrySet()) {
            KvProto.RegionInfo r = e.getValue();
            if (r.getRole().equals("LEADER") || !r.getLeader().isEmpty()) {
                String leader = r.getRole().equals("LEADER") ? e.getKey() : r.getLeader();
                return "it has a leader, " + leader + " (as " + e.getKey() + " sees it): nothing to recover";
            }
        }
        KvProto.RegionInfo newest = newest(replicas);
        List<String> survivors = survivors(replicas, newest);
        int voters = newest.getPeersCount();
        if (survivors.size() >= voters / 2 + 1) {
            return survivors.size() + " of its " + voters + " voters " + survivors + " are live, a majority: they"
                    + " elect a leader by themselves (if none comes, see their logs)";
        }
        return null;
    }

    /** The live replica with the newest configuration (the highest conf version). */
    private static KvProto.RegionInfo newest(Map<String, KvProto.RegionInfo> replicas) {
        return replicas.values().stream().max(java.util.Comparator.comparingLong(KvProto.RegionInfo::getConfVer))
                .orElseThrow();
    }

    /** The nodes holding a replica at {@code newest}'s conf version that are voters in it, sorted. */
    private static List<String> survivors(Map<String, KvProto.RegionInfo> replicas, KvProto.RegionInfo newest) {
        List<String> survivors = new ArrayList<>();
        replicas.forEach((node, r) -> {
            if (newest.getPeersList().contains(node) && r.getConfVer() == newest.getConfVer()) {
                survivors.add(node);
            }
        });
        return survivors; // replicas is a TreeMap: sorted by node
    }

    private static KvException refused(int regionId, String why) {
        return new KvException(ErrorCode.INVALID_ARGUMENT, "region " + regionId + " not recovered: " + why);
    }

    private static NodeState stateOf(ClusterMap map, String endpoint) {
        for (NodeRecord n : map.getNodesList()) {
            if (n.getEndpoint().equals(endpoint)) {
                return n.getState();
            }
        }
        return null;
    }

    /** See {@link KvAdmin#recoverRegion}. */
    CompletableFuture<RegionInfo> recover(RecoveryPlan plan) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(calls.operationTimeoutMs());
        CompletableFuture<KvProto.RegionInfo> led = new CompletableFuture<>();
        reset(plan, plan.survivors(), deadline, led);
        return led.thenApply(AdminWire::region);
    }

    /**
     * Asks the survivors in {@code pending} to take the new voters; those that answer UNAVAILABLE (their copy of the
     * cluster map does not list a lost voter as removed yet) or do not answer are asked again until the deadline.
     */
    private void reset(RecoveryPlan plan, List<String> pending, long deadline,
                       CompletableFuture<KvProto.RegionInfo> led) {
        Map<String, CompletableFuture<RecoverRegionResponse>> asked = new TreeMap<>();
        for (String node : pending) {
            asked.put(node, calls.call(node, RecoverRegionRequest.newBuilder().setRegionId(plan.regionId())
                    .addAllVoters(plan.survivors()).setConfVer(plan.confVer()).build()));
        }
        CompletableFuture.allOf(asked.values().stream().map(f -> f.handle((r, e) -> null))
                .toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
                    List<String> again = new ArrayList<>();
                    List<String> why = new ArrayList<>();
                    boolean definitive = false;
                    for (Map.Entry<String, CompletableFuture<RecoverRegionResponse>> a : asked.entrySet()) {
                        Throwable err = a.getValue().handle((r, x) -> x).join();
                        RecoverRegionResponse resp = err == null ? a.getValue().join() : null;
                        ErrorCode code = err != null ? KvException.unwrap(err).code()
                                : resp.hasError() ? ErrorCode.fromWire(resp.getError().getCode()) : ErrorCode.OK;
                        if (code == ErrorCode.OK) {
                            continue;
                        }
                        why.add(a.getKey() + ": " + (err != null ? KvException.unwrap(err).getMessage()
                                : code + " " + resp.getError().getDetail()));
                        if (err != null || code == ErrorCode.UNAVAILABLE) {
                            again.add(a.getKey());
                        } else {
                            definitive = true;
                        }
                    }
                    if (why.isEmpty()) {
                        awaitLeader(plan, deadline, led);
                        return;
                    }
                    boolean noneTook = why.size() == plan.survivors().size();
                    if (definitive || System.nanoTime() - deadline > 0) {
                        led.completeExceptionally(new KvException(definitive ? ErrorCode.INVALID_ARGUMENT
                                : ErrorCode.UNAVAILABLE, "region " + plan.regionId() + (noneTook
                                ? " not recovered, nothing changed: " : ": only some survivors took the new voters "
                                + plan.survivors() + "; run recover-region again: ") + String.join("; ", why)));
                        return;
                    }
                    if (!calls.later(() -> reset(plan, again, deadline, led), POLL_NANOS)) {
                        led.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "client closed"));
                    }
                });
    }

    /**
     * Completes {@code led} with the survivors' leader's view of the region once one leads a configuration without the
     * lost voters: the new voters, or more already, since placement may add a replica within moments of the election.
     */
    private void awaitLeader(RecoveryPlan plan, long deadline, CompletableFuture<KvProto.RegionInfo> led) {
        replicas(plan.survivors(), plan.regionId()).whenComplete((replicas, e) -> {
            for (KvProto.RegionInfo r : replicas == null ? List.<KvProto.RegionInfo>of() : replicas.values()) {
                boolean lostGone = r.getPeersList().stream().noneMatch(plan.lost()::contains);
                if (r.getRole().equals("LEADER") && lostGone) {
                    routes.refresh().whenComplete((x, y) -> led.complete(r));
                    return;
                }
            }
            if (System.nanoTime() - deadline > 0) {
                led.completeExceptionally(new KvException(ErrorCode.NO_LEADER, "region " + plan.regionId()
                        + ": its voters were reset to " + plan.survivors() + ", but none of them leads it yet after "
                        + calls.operationTimeoutMs() + " ms: see `regions` and their logs"));
                return;
            }
            if (!calls.later(() -> awaitLeader(plan, deadline, led), POLL_NANOS)) {
                led.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "client closed"));
            }
        });
    }
}
