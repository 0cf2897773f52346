package io.kvraft.server;

import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.MoveReplicaRequest;
import io.kvraft.common.proto.KvProto.MoveReplicaResponse;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.host.RegionHost;
import io.kvraft.server.meta.MetaService;
import io.kvraft.server.region.Region;
import io.kvraft.server.store.KeyRange;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Requests this node makes of the leader of a region anywhere in the cluster: a replica move the map's placement
 * asks for, and the next region id a split takes. The region's replicas come from this node's own replica of it, or
 * else from the cluster map's record; the leader hint of each answer is followed, and answers that prove nothing
 * was done (not the leader, no leader yet, shutting down) are asked again after a pause until the search time ends.
 */
final class RegionLeaderCalls implements MetaService.Mover {

    private static final long RETRY_PAUSE_MS = 100;
    /** A replica move's whole time: the new replica may need a snapshot of a large region (the leader bounds it). */
    static final long MOVE_TIMEOUT_MS = 600_000;

    private final RegionHost host;
    private final Supplier<MetaService> meta;
    private final Transport transport;
    private final ScheduledExecutorService timer;
    private final long searchMs;

    /** @param searchMs how long a call looks for the region's leader (30 s, as a client's operation timeout) */
    RegionLeaderCalls(RegionHost host, Supplier<MetaService> meta, Transport transport, ScheduledExecutorService timer,
                      long searchMs) {
        this.host = host;
        this.meta = meta;
        this.transport = transport;
        this.timer = timer;
        this.searchMs = searchMs;
    }

    @Override
    public CompletableFuture<RegionInfo> move(int regionId, String from, String to) {
        return change(MoveReplicaRequest.newBuilder().setRegionId(regionId).setFrom(from).setTo(to).build());
    }

    @Override
    public CompletableFuture<RegionInfo> rebuild(int regionId, String node) {
        return change(MoveReplicaRequest.newBuilder().setRegionId(regionId).setFrom(node).setTo(node).setRebuild(true)
                .build());
    }

    @Override
    public CompletableFuture<RegionInfo> add(int regionId, String to) {
        return change(MoveReplicaRequest.newBuilder().setRegionId(regionId).setTo(to).build());
    }

    private CompletableFuture<RegionInfo> change(MoveReplicaRequest request) {
        // a timeout may have made the change: it is not asked again (placement looks at the region afresh)
        return this.<MoveReplicaResponse>call(request.getRegionId(), r -> request, MoveReplicaResponse::getError,
                code -> false, MOVE_TIMEOUT_MS).thenApply(MoveReplicaResponse::getRegion);
    }

    /**
     * Takes one number of the sequence {@code key} (a GET_SEQUENCE of step 1) from the leader of the region holding
     * it. Asked again after a timeout too: a number whose answer was lost is skipped, never handed out twice.
     */
    CompletableFuture<Long> takeNumber(ByteString key) {
        WriteOp op = WriteOp.newBuilder().setType(WriteOpType.GET_SEQUENCE).setKey(key).setStep(1).build();
        return regionOf(key).thenCompose(first -> this.<WriteResponse>call(first.getId(),
                region -> WriteRequest.newBuilder().setRegionId(region.getId()).setRegionEpoch(region.getEpoch())
                        .addOps(op).build(),
                WriteResponse::getError,
                code -> code == ErrorCode.TIMEOUT || code == ErrorCode.UNAVAILABLE || code == ErrorCode.BUSY
                        || code == ErrorCode.STALE_EPOCH,
                searchMs)).thenApply(resp -> {
                    if (resp.getSucceededCount() == 0 || !resp.getSucceeded(0) || resp.getCoordCount() == 0) {
                        throw new KvException(io.kvraft.common.ErrorCode.INTERNAL, "sequence " + key.toStringUtf8() + " is used up");
                    }
                    return resp.getCoord(0).getStart();
                });
    }

    /** The region holding {@code key}: this node's replica of it, or the cluster map's record. */
    private CompletableFuture<RegionInfo> regionOf(ByteString key) {
        byte[] k = key.toByteArray();
        for (Region r : host.regions()) {
            if (r.range().contains(k)) {
                return CompletableFuture.completedFuture(r.info());
            }
        }
        for (RegionInfo r : mapRecords()) {
            if (new KeyRange(r.getStartKey().toByteArray(), r.getEndKey().toByteArray()).contains(k)) {
                return CompletableFuture.completedFuture(r);
            }
        }
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.REGION_NOT_FOUND,
                "node " + host.endpoint() + " knows no region holding " + key.toStringUtf8()));
    }

    private List<RegionInfo> mapRecords() {
        MetaService m = meta.get();
        return m == null ? List.of() : m.group().map().getRegionsList();
    }

    /** The region as this node knows it now (its replica's view with its leader, else the map's record), or null. */
    private RegionInfo known(int regionId) {
        Region r = host.region(regionId);
        if (r != null) {
            return r.info();
        }
        for (RegionInfo info : mapRecords()) {
            if (info.getId() == regionId) {
                return info;
            }
        }
        return null;
    }

    /**
     * Sends the request {@code build} makes of the region as known at each try to the region's leader.
     *
     * @param retryAlso codes that are asked again besides those proving nothing was done
     */
    private <R extends Message> CompletableFuture<R> call(int regionId, Function<RegionInfo, Message> build,
                                                          Function<R, Error> errorOf, Predicate<ErrorCode> retryAlso,
                                                          long timeoutMs) {
        CompletableFuture<R> result = new CompletableFuture<>();
        long now = System.nanoTime();
        Try<R> t = new Try<>(regionId, build, errorOf, retryAlso, now + TimeUnit.MILLISECONDS.toNanos(timeoutMs),
                now + TimeUnit.MILLISECONDS.toNanos(Math.min(timeoutMs, searchMs)), result, new ArrayList<>());
        attempt(t, "");
        return result;
    }

    private record Try<R>(int regionId, Function<RegionInfo, Message> build, Function<R, Error> errorOf,
                          Predicate<ErrorCode> retryAlso, long deadline, long searchEnd, CompletableFuture<R> result,
                          List<String> asked) {
    }

    private <R extends Message> void attempt(Try<R> t, String hint) {
        RegionInfo region = known(t.regionId());
        if (region == null) {
            t.result().completeExceptionally(new KvException(io.kvraft.common.ErrorCode.REGION_NOT_FOUND, "no region " + t.regionId()
                    + " known to node " + host.endpoint()));
            return;
        }
        String target = target(region, hint, t.asked());
        long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(t.deadline() - System.nanoTime()));
        transport.<R>call(target, t.build().apply(region), left).whenComplete((resp, err) -> {
            Error error = err == null ? t.errorOf().apply(resp) : null;
            ErrorCode code = err != null ? KvException.unwrap(err).code().toWire() : error.getCode();
            if (code == ErrorCode.OK) {
                t.result().complete(resp);
                return;
            }
            String next = error == null ? "" : error.getLeaderHint();
            t.asked().add(target + ": " + code + (next.isEmpty() ? "" : " -> " + next));
            boolean retry = switch (code) {
                case NOT_LEADER, NO_LEADER, SHUTTING_DOWN, REGION_NOT_FOUND -> true;
                case UNAVAILABLE -> err != null && KvException.unwrap(err).unsent() || t.retryAlso().test(code);
                default -> t.retryAlso().test(code);
            };
            if (!retry || System.nanoTime() - t.searchEnd() > 0) {
                String detail = err != null ? KvException.unwrap(err).getMessage() : error.getDetail();
                t.result().completeExceptionally(new KvException(io.kvraft.common.ErrorCode.fromWire(code), detail + (t.asked().size() < 2 ? ""
                        : " (asked " + String.join(", ", t.asked().subList(Math.max(0, t.asked().size() - 6),
                        t.asked().size())) + ")"), next));
                return;
            }
            try {
                timer.schedule(() -> attempt(t, next), next.isEmpty() ? RETRY_PAUSE_MS : 0, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException closed) {
                t.result().completeExceptionally(new KvException(io.kvraft.common.ErrorCode.SHUTTING_DOWN, "node " + host.endpoint()
                        + " is closing"));
            }
        });
    }

    /** The hint when given, else the leader the region names, else its replicas in turn by how often each was asked. */
    private static String target(RegionInfo region, String hint, List<String> asked) {
        if (!hint.isEmpty()) {
            return hint;
        }
        Set<String> candidates = new LinkedHashSet<>();
        if (!region.getLeader().isEmpty() && asked.isEmpty()) {
            candidates.add(region.getLeader());
        }
        candidates.addAll(region.getPeersList());
        List<String> order = new ArrayList<>(candidates);
        return order.isEmpty() ? region.getLeader() : order.get(asked.size() % order.size());
    }
}
