package io.kvraft.client;

import com.google.protobuf.ByteString;
import io.kvraft.client.proto.KvProto.ErrorCode;
import io.kvraft.client.proto.KvProto.RegionInfo;
import io.kvraft.client.proto.KvProto.SplitRequest;
import io.kvraft.client.proto.KvProto.SplitResponse;
import io.kvraft.client.route.RouteTable.Route;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Region admin operations of the client: a split, sent to the region's leader and followed there. */
final class RegionAdmin {

    private static final long RETRY_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final RoutingKvClient client;

    RegionAdmin(RoutingKvClient client) {
        this.client = client;
    }

    /** See {@link KvClient#split}. */
    CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey) {
        CompletableFuture<List<RegionInfo>> result = new CompletableFuture<>();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(client.operationTimeoutMs());
        SplitRequest request = SplitRequest.newBuilder().setRegionId(regionId)
                .setSplitKey(atKey == null ? ByteString.EMPTY : ByteString.copyFrom(atKey)).build();
        client.refreshRoutes().whenComplete((v, e) -> attempt(request, deadline, result, null));
        return result;
    }

    private void attempt(SplitRequest request, long deadline, CompletableFuture<List<RegionInfo>> result, String hint) {
        Route route = client.routes().byId(request.getRegionId());
        if (route == null) {
            result.completeExceptionally(new KvException(ErrorCode.REGION_NOT_FOUND,
                    "no region " + request.getRegionId() + " in the cluster"));
            return;
        }
        String target = hint != null && !hint.isEmpty() ? hint : route.target();
        // the whole operation's time for one try: the leader answers once the split is applied, which includes making
        // the new region's group on that node (a snapshot of its range), far more than a read or write takes
        long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
        client.transport().<SplitResponse>call(target, request, left).whenComplete((resp, err) -> {
            ErrorCode code = err != null ? KvException.unwrap(err).code() : resp.hasError() ? resp.getError().getCode() : ErrorCode.OK;
            if (code == ErrorCode.OK) {
                client.refreshRoutes(target).whenComplete((v, e) -> result.complete(List.of(resp.getLeft(), resp.getRight())));
                return;
            }
            String detail = err != null ? KvException.unwrap(err).getMessage() : resp.getError().getDetail();
            String next = err == null ? resp.getError().getLeaderHint() : "";
            // only answers that prove the split was not taken are retried (a timeout may have split it: then the
            // caller sees the region's new range in `regions`, and a retry would split it again)
            boolean retry = switch (code) {
                case NOT_LEADER, NO_LEADER, SHUTTING_DOWN, REGION_NOT_FOUND -> true;
                case UNAVAILABLE -> err != null && KvException.unwrap(err).unsent();
                default -> false;
            };
            if (!retry || System.nanoTime() - deadline > 0) {
                result.completeExceptionally(err != null ? KvException.unwrap(err) : new KvException(code, detail, next));
                return;
            }
            if (next.isEmpty()) {
                route.leaderUnknown(target);
            } else {
                route.leader(next);
            }
            String nextTarget = next;
            Runnable again = code == ErrorCode.REGION_NOT_FOUND
                    ? () -> client.refreshRoutes().whenComplete((v, e) -> attempt(request, deadline, result, null))
                    : () -> attempt(request, deadline, result, nextTarget);
            if (!client.later(again, next.isEmpty() ? RETRY_PAUSE_NANOS : 0)) {
                result.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "client closed"));
            }
        });
    }
}
