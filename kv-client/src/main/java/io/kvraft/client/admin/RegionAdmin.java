package io.kvraft.client.admin;

import io.kvraft.common.KvException;
import com.google.protobuf.ByteString;
import io.kvraft.common.ErrorCode;
import com.google.protobuf.Message;
import io.kvraft.common.proto.KvProto.MergeRequest;
import io.kvraft.common.proto.KvProto.MergeResponse;
import io.kvraft.common.proto.KvProto.SplitRequest;
import io.kvraft.common.proto.KvProto.SplitResponse;
import io.kvraft.client.route.Calls;
import io.kvraft.client.route.RouteTable.Route;
import io.kvraft.client.route.Routes;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;

/** Region admin operations of the client: a split or a merge, sent to the region's leader and followed there. */
final class RegionAdmin {

    private static final long RETRY_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /**
     * A replica move's whole time, beyond operationTimeoutMs: the new replica may take up to its catch-up bound on the
     * leader (5 minutes) to receive a snapshot of a large region.
     */
    static final long MOVE_TIMEOUT_MS = 600_000;

    private final Routes routes;
    private final Calls calls;

    RegionAdmin(Routes routes, Calls calls) {
        this.routes = routes;
        this.calls = calls;
    }

    /** See {@link KvAdmin#split}. */
    CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey) {
        SplitRequest request = SplitRequest.newBuilder().setRegionId(regionId)
                .setSplitKey(atKey == null ? ByteString.EMPTY : ByteString.copyFrom(atKey)).build();
        return this.<SplitResponse>call(regionId, request, SplitResponse::hasError, SplitResponse::getError)
                .thenApply(resp -> List.of(AdminWire.region(resp.getLeft()), AdminWire.region(resp.getRight())));
    }

    /** See {@link KvAdmin#merge}. */
    CompletableFuture<RegionInfo> merge(int leftId, int rightId) {
        if (leftId == rightId) {
            return CompletableFuture.failedFuture(new KvException(ErrorCode.INVALID_ARGUMENT,
                    "a region cannot merge with itself (" + leftId + ")"));
        }
        MergeRequest request = MergeRequest.newBuilder().setLeftId(leftId).setRightId(rightId).build();
        // the right region is looked up on the left one's leader: an unknown one is told at once, not retried there
        return routes.refresh().thenCompose(v -> routes.table().byId(rightId) == null
                ? CompletableFuture.<MergeResponse>failedFuture(new KvException(ErrorCode.REGION_NOT_FOUND,
                        "no region " + rightId + " in the cluster"))
                : this.<MergeResponse>call(leftId, request, MergeResponse::hasError, MergeResponse::getError))
                .thenApply(resp -> AdminWire.region(resp.getMerged()));
    }

    /** See {@link KvAdmin#moveReplica}. */
    CompletableFuture<RegionInfo> moveReplica(int regionId, String from, String to) {
        for (String node : new String[]{from, to}) {
            try {
                io.kvraft.common.config.HostPort.parse(node);
            } catch (IllegalArgumentException e) {
                return CompletableFuture.failedFuture(new KvException(ErrorCode.INVALID_ARGUMENT, e.getMessage()));
            }
        }
        if (from.equals(to)) {
            return CompletableFuture.failedFuture(new KvException(ErrorCode.INVALID_ARGUMENT,
                    "a replica cannot move to the node it is on (" + from + ")"));
        }
        io.kvraft.common.proto.KvProto.MoveReplicaRequest request = io.kvraft.common.proto.KvProto.MoveReplicaRequest
                .newBuilder().setRegionId(regionId).setFrom(from).setTo(to).build();
        return this.<io.kvraft.common.proto.KvProto.MoveReplicaResponse>call(regionId, request,
                io.kvraft.common.proto.KvProto.MoveReplicaResponse::hasError,
                io.kvraft.common.proto.KvProto.MoveReplicaResponse::getError, MOVE_TIMEOUT_MS)
                .thenApply(resp -> AdminWire.region(resp.getRegion()));
    }

    /** See {@link KvAdmin#rebuildReplica}. */
    CompletableFuture<RegionInfo> rebuildReplica(int regionId, String node) {
        return replicaChange(regionId, node, io.kvraft.common.proto.KvProto.MoveReplicaRequest.newBuilder()
                .setRegionId(regionId).setFrom(node).setTo(node).setRebuild(true).build());
    }

    /** See {@link KvAdmin#addReplica}. */
    CompletableFuture<RegionInfo> addReplica(int regionId, String to) {
        return replicaChange(regionId, to, io.kvraft.common.proto.KvProto.MoveReplicaRequest.newBuilder()
                .setRegionId(regionId).setTo(to).build());
    }

    private CompletableFuture<RegionInfo> replicaChange(int regionId, String node,
                                                        io.kvraft.common.proto.KvProto.MoveReplicaRequest request) {
        try {
            io.kvraft.common.config.HostPort.parse(node);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(new KvException(ErrorCode.INVALID_ARGUMENT, e.getMessage()));
        }
        return this.<io.kvraft.common.proto.KvProto.MoveReplicaResponse>call(regionId, request,
                io.kvraft.common.proto.KvProto.MoveReplicaResponse::hasError,
                io.kvraft.common.proto.KvProto.MoveReplicaResponse::getError, MOVE_TIMEOUT_MS)
                .thenApply(resp -> AdminWire.region(resp.getRegion()));
    }

    /** Sends {@code request} to the leader of region {@code regionId}, following leader hints until the deadline. */
    private <R extends Message> CompletableFuture<R> call(int regionId, Message request, Predicate<R> hasError,
                                                          Function<R, io.kvraft.common.proto.KvProto.Error> error) {
        return call(regionId, request, hasError, error, calls.operationTimeoutMs());
    }

    /** As above, with {@code timeoutMs} for the whole call. */
    private <R extends Message> CompletableFuture<R> call(int regionId, Message request, Predicate<R> hasError,
                                                          Function<R, io.kvraft.common.proto.KvProto.Error> error,
                                                          long timeoutMs) {
        CompletableFuture<R> result = new CompletableFuture<>();
        long now = System.nanoTime();
        long deadline = now + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        // looking for the leader takes at most an operation's time, however long the change itself may take: a region
        // with no leader (a majority of its replicas lost) would otherwise hold a move's caller for its 10 minutes
        long searchEnd = now + TimeUnit.MILLISECONDS.toNanos(Math.min(timeoutMs, calls.operationTimeoutMs()));
        routes.refresh().whenComplete((v, e) -> attempt(new Call<>(regionId, request, hasError, error, deadline,
                searchEnd, result, new Tries()), null));
        return result;
    }

    /**
     * @param deadline  when the whole call ends (System.nanoTime)
     * @param searchEnd after it, an answer that the change was not taken (not the leader, no leader) is not retried
     */
    private record Call<R extends Message>(int regionId, Message request, Predicate<R> hasError,
                                           Function<R, io.kvraft.common.proto.KvProto.Error> error, long deadline,
                                           long searchEnd, CompletableFuture<R> result, Tries tries) {
    }

    /** The answers of a call's tries, which run one after another: the last few, for the failure's message. */
    private static final class Tries {

        /** How many tries a failure's message names: the last ones say where the call went in the end. */
        private static final int SHOWN = 6;

        private final ArrayDeque<String> last = new ArrayDeque<>(SHOWN);
        private int count;

        void add(String target, ErrorCode code, String hint) {
            if (last.size() == SHOWN) {
                last.removeFirst();
            }
            last.addLast(target + ": " + code + (hint.isEmpty() ? "" : " -> " + hint));
            count++;
        }

        /** What a failure's message adds: nothing after one try, else the path, "(after 7 tries; the last 6: ...)". */
        String path() {
            return count < 2 ? "" : " (after " + count + " tries; " + (count > SHOWN ? "the last " + SHOWN + ": " : "")
                    + String.join(", ", last) + ")";
        }
    }

    private <R extends Message> void attempt(Call<R> call, String hint) {
        attempt(call, hint, null);
    }

    /**
     * The node not to ask again after its REGION_NOT_FOUND: for a replica change, {@code target}, which holds no replica
     * of the region; null for a merge or split, whose REGION_NOT_FOUND may be about the other region, from the leader.
     */
    private static String notThere(Call<?> call, String target) {
        return call.request() instanceof io.kvraft.common.proto.KvProto.MoveReplicaRequest ? target : null;
    }

    /** The hint when given, else the route's leader or its next peer in turn, other than {@code notThere}. */
    static String target(Route route, String hint, String notThere) {
        String target = hint != null && !hint.isEmpty() ? hint : route.target();
        for (int i = 0; target.equals(notThere) && i < route.info().getPeersCount(); i++) {
            target = route.anyReplica();
        }
        return target;
    }

    /**
     * @param notThere a node that just answered a replica change that it holds no replica of the region (it lost its
     *                 data, or the replica moved off): when the refreshed route still names it (a leader it had, or its
     *                 turn among the peers), another peer is asked instead, which answers or names the leader
     */
    private <R extends Message> void attempt(Call<R> call, String hint, String notThere) {
        CompletableFuture<R> result = call.result();
        long deadline = call.deadline();
        Route route = routes.table().byId(call.regionId());
        if (route == null) {
            result.completeExceptionally(new KvException(ErrorCode.REGION_NOT_FOUND,
                    "no region " + call.regionId() + " in the cluster"));
            return;
        }
        String target = target(route, hint, notThere);
        // the whole operation's time for one try: the leader answers once the change is applied, which includes making
        // or stopping groups on that node (a snapshot of a range), far more than a read or write takes
        long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
        calls.transport().<R>call(target, call.request(), left).whenComplete((resp, err) -> {
            ErrorCode code = err != null ? KvException.unwrap(err).code()
                    : call.hasError().test(resp) ? ErrorCode.fromWire(call.error().apply(resp).getCode()) : ErrorCode.OK;
            if (code == ErrorCode.OK) {
                routes.refresh(target).whenComplete((v, e) -> result.complete(resp));
                return;
            }
            String detail = err != null ? KvException.unwrap(err).getMessage() : call.error().apply(resp).getDetail();
            String next = err == null ? call.error().apply(resp).getLeaderHint() : "";
            call.tries().add(target, code, next);
            // only answers that prove the change was not taken are retried (a timeout may have made it: then the
            // caller sees the regions as they are now in `regions`, and a retry would change them again)
            boolean retry = switch (code) {
                case NOT_LEADER, NO_LEADER, SHUTTING_DOWN, REGION_NOT_FOUND -> true;
                case UNAVAILABLE -> err != null && KvException.unwrap(err).unsent();
                default -> false;
            };
            long now = System.nanoTime();
            if (!retry || now - deadline > 0 || now - call.searchEnd() > 0) {
                // the path of a call that followed hints shows in its message: where it went, and who said what
                String path = call.tries().path();
                result.completeExceptionally(err != null && path.isEmpty() ? KvException.unwrap(err)
                        : new KvException(code, detail + path, next));
                return;
            }
            if (next.isEmpty()) {
                route.leaderUnknown(target);
            } else {
                route.leader(next);
            }
            String nextTarget = next;
            Runnable again = code == ErrorCode.REGION_NOT_FOUND
                    ? () -> routes.refresh().whenComplete((v, e) -> attempt(call, null, notThere(call, target)))
                    : () -> attempt(call, nextTarget);
            if (!calls.later(again, next.isEmpty() ? RETRY_PAUSE_NANOS : 0)) {
                result.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "client closed"));
            }
        });
    }
}
