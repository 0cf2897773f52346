package io.kvraft.client.admin;

import io.kvraft.client.route.Calls;
import io.kvraft.client.route.MapLeaderCalls;
import io.kvraft.client.route.Routes;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.ClusterResponse;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.MapReplicaRequest;
import io.kvraft.common.proto.KvProto.MapReplicaResponse;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.RecoverMapRequest;
import io.kvraft.common.proto.KvProto.RecoverMapResponse;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Forced recovery of the cluster map's own group once a majority of its voters is lost for good: {@link #plan} asks
 * every node it can reach for its replica of the group (no leader needed) and checks that recovering is the only way
 * left; {@link #recover} has each surviving voter take the survivors as the group's voters (the server's {@code
 * RecoverMapRequest}) and waits until the map answers again with the lost voters' nodes removed.
 */
final class MapRecovery {

    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final Routes routes;
    private final Calls calls;
    private final MapLeaderCalls mapLeader;

    MapRecovery(Routes routes, Calls calls, MapLeaderCalls mapLeader) {
        this.routes = routes;
        this.calls = calls;
        this.mapLeader = mapLeader;
    }

    /** See {@link KvAdmin#planMapRecovery}. */
    CompletableFuture<MapRecoveryPlan> plan() {
        List<String> first = routes.knownNodes();
        return answers(first).thenCompose(answers -> {
            // the nodes the answers name (the group's voters, the map's nodes) that the client was not told of
            Set<String> more = new LinkedHashSet<>();
            for (MapReplicaResponse r : answers.values()) {
                if (r != null) {
                    more.addAll(r.getVotersList());
                    r.getMap().getNodesList().stream().filter(n -> n.getState() != NodeState.REMOVED)
                            .forEach(n -> more.add(n.getEndpoint()));
                }
            }
            more.removeAll(answers.keySet());
            return answers(new ArrayList<>(more)).thenApply(rest -> {
                Map<String, MapReplicaResponse> all = new TreeMap<>(answers);
                all.putAll(rest);
                all.values().removeIf(java.util.Objects::isNull);
                if (all.isEmpty()) {
                    throw new KvException(ErrorCode.UNAVAILABLE, "no node answered of " + first + " and " + more);
                }
                return plan(all);
            });
        });
    }

    /** Each of {@code nodes}' replica of the map's group as it answers now, by host:port; null for no answer. */
    private CompletableFuture<Map<String, MapReplicaResponse>> answers(List<String> nodes) {
        return calls.<MapReplicaResponse>askAll(nodes, MapReplicaRequest.getDefaultInstance())
                .thenApply(answers -> {
                    answers.replaceAll((node, r) -> r == null || r.hasError() && r.getError().getCode() != KvProto.ErrorCode.OK
                            ? null : r);
                    return answers;
                });
    }

    /**
     * The plan from the answering nodes' replicas of the map's group (by host:port): refused (INVALID_ARGUMENT) when a
     * replica knows a leader, when no answering node is a voter, or when the live voters are a majority.
     */
    static MapRecoveryPlan plan(Map<String, MapReplicaResponse> replicas) {
        for (Map.Entry<String, MapReplicaResponse> e : replicas.entrySet()) {
            MapReplicaResponse r = e.getValue();
            if (r.getRole().equals("LEADER") || !r.getLeader().isEmpty()) {
                String leader = r.getRole().equals("LEADER") ? e.getKey() : r.getLeader();
                throw refused("the map's group has a leader, " + leader + " (as " + e.getKey() + " sees it): nothing"
                        + " to recover");
            }
        }
        // the voters as the voter with the longest log has them (the one that would win an election)
        MapReplicaResponse newest = replicas.entrySet().stream()
                .filter(e -> e.getValue().getVotersList().contains(e.getKey()))
                .map(Map.Entry::getValue)
                .max(Comparator.comparingLong(MapReplicaResponse::getLastLogIndex)).orElse(null);
        if (newest == null) {
            List<String> named = replicas.values().stream().flatMap(r -> r.getVotersList().stream()).distinct()
                    .sorted().toList();
            throw refused("no node that answered (" + String.join(", ", replicas.keySet()) + ") holds a voter of the"
                    + " map's group" + (named.isEmpty() ? "" : "; its voters are " + named + ": bring one of them back")
                    + " (if all are gone for good, so is the cluster map)");
        }
        List<String> voters = newest.getVotersList().stream().sorted().toList();
        List<String> survivors = voters.stream().filter(v -> replicas.containsKey(v)
                && replicas.get(v).getVotersList().contains(v)).toList();
        if (survivors.size() >= voters.size() / 2 + 1) {
            throw refused(survivors.size() + " of its " + voters.size() + " voters " + survivors + " are live, a"
                    + " majority: they elect a leader by themselves (if none comes, see their logs)");
        }
        List<String> lost = voters.stream().filter(v -> !survivors.contains(v)).toList();
        Map<String, MapReplica> kept = new TreeMap<>();
        survivors.forEach(s -> kept.put(s, AdminWire.mapReplica(replicas.get(s))));
        return new MapRecoveryPlan(voters, survivors, lost, newest.getLastLogIndex(), kept);
    }

    private static KvException refused(String why) {
        return new KvException(ErrorCode.INVALID_ARGUMENT, "cluster map not recovered: " + why);
    }

    /** See {@link KvAdmin#recoverMap}. */
    CompletableFuture<ClusterResponse> recover(MapRecoveryPlan plan) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(calls.operationTimeoutMs());
        Map<String, CompletableFuture<RecoverMapResponse>> asked = new TreeMap<>();
        for (String node : plan.survivors()) {
            asked.put(node, calls.call(node, RecoverMapRequest.newBuilder().addAllVoters(plan.survivors()).build()));
        }
        return CompletableFuture.allOf(asked.values().stream().map(f -> f.handle((r, e) -> null))
                .toArray(CompletableFuture[]::new)).thenCompose(v -> {
                    List<String> why = new ArrayList<>();
                    boolean definitive = false;
                    for (Map.Entry<String, CompletableFuture<RecoverMapResponse>> a : asked.entrySet()) {
                        Throwable err = a.getValue().handle((r, x) -> x).join();
                        RecoverMapResponse resp = err == null ? a.getValue().join() : null;
                        if (err != null) {
                            why.add(a.getKey() + ": " + KvException.unwrap(err).getMessage());
                        } else if (resp.hasError() && resp.getError().getCode() != KvProto.ErrorCode.OK) {
                            why.add(a.getKey() + ": " + resp.getError().getCode() + " " + resp.getError().getDetail());
                            definitive |= resp.getError().getCode() == KvProto.ErrorCode.INVALID_ARGUMENT;
                        }
                    }
                    if (why.size() == plan.survivors().size()) {
                        return CompletableFuture.failedFuture(new KvException(definitive ? ErrorCode.INVALID_ARGUMENT
                                : ErrorCode.UNAVAILABLE, "cluster map not recovered, nothing changed: "
                                + String.join("; ", why)));
                    }
                    if (!why.isEmpty()) {
                        return CompletableFuture.failedFuture(new KvException(ErrorCode.UNAVAILABLE, "only some"
                                + " survivors took the new voters " + plan.survivors() + "; run recover-map again: "
                                + String.join("; ", why)));
                    }
                    CompletableFuture<ClusterResponse> done = new CompletableFuture<>();
                    awaitMap(plan, deadline, done);
                    return done;
                });
    }

    /** Completes {@code done} with the map's answer once a survivor leads it and every lost voter's node is removed. */
    private void awaitMap(MapRecoveryPlan plan, long deadline, CompletableFuture<ClusterResponse> done) {
        mapLeader.cluster().whenComplete((c, e) -> {
            if (e == null && plan.survivors().contains(c.getMetaLeader()) && plan.lost().stream()
                    .allMatch(l -> removed(c, l))) {
                done.complete(c);
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                done.completeExceptionally(new KvException(ErrorCode.NO_LEADER, "the cluster map's voters were reset to "
                        + plan.survivors() + ", but after " + calls.operationTimeoutMs() + " ms "
                        + (e != null ? "the map does not answer: " + KvException.unwrap(e).getMessage()
                        : "its leader is " + c.getMetaLeader() + " and the lost voters' nodes are not all removed")
                        + ": see `cluster` and the survivors' logs"));
                return;
            }
            if (!calls.later(() -> awaitMap(plan, deadline, done), POLL_NANOS)) {
                done.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "client closed"));
            }
        });
    }

    private static boolean removed(ClusterResponse c, String endpoint) {
        for (NodeRecord n : c.getMap().getNodesList()) {
            if (n.getEndpoint().equals(endpoint)) {
                return n.getState() == NodeState.REMOVED;
            }
        }
        return true; // not a node of the map: nothing to remove
    }
}
