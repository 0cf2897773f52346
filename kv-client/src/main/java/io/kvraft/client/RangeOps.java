package io.kvraft.client;

import io.kvraft.common.KvException;
import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto.Pair;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.LockInfo;
import io.kvraft.common.proto.KvProto.ScanRequest;
import io.kvraft.common.proto.KvProto.ScanResponse;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.client.route.Calls;
import io.kvraft.client.route.RegionCall;
import io.kvraft.client.route.Routes;
import io.kvraft.client.route.RouteTable.Route;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * Operations on key ranges, composed region by region: a scan page, a whole scan, a range delete, the locks of a
 * range. Each
 * step asks the route table afresh for the region holding its cursor and clips the range to that
 * region, so a region that splits or moves mid-way costs a retry, never a missed or repeated key. Across
 * regions nothing is atomic or one snapshot.
 */
final class RangeOps {

    /** A page of pairs, and where the range goes on: null when it is exhausted. */
    record Page(List<KeyValue> pairs, byte[] resumeKey) {
    }

    private final Routes routes;
    private final Calls calls;

    RangeOps(Routes routes, Calls calls) {
        this.routes = routes;
        this.calls = calls;
    }

    private <R extends Message> RegionCall<R> call(byte[] cursor, boolean before, boolean idempotent, ReadMode mode,
                                                   long deadlineNanos, Function<Route, Message> request,
                                                   Function<R, Error> errorOf) {
        return new RegionCall<>(routes, calls, cursor, before, idempotent, mode, deadlineNanos, request, errorOf);
    }

    /**
     * Up to {@code limit} pairs of [start, end) from one region's part of it, forward from {@code start} or
     * backward from {@code end}; {@code resumeKey} is where the next page starts (forward: its start; reverse:
     * its exclusive end). Empty bounds are unbounded.
     */
    CompletableFuture<Page> page(byte[] start, byte[] end, int limit, boolean reverse, boolean keysOnly, ReadMode mode,
                                 long deadlineNanos) {
        RegionCall<ScanResponse> attempt = call(reverse ? end : start, reverse, true, mode, deadlineNanos, route -> {
            KeyRangeBytes part = clip(start, end, route);
            return ScanRequest.newBuilder().setRegionId(route.regionId()).setRegionEpoch(route.epoch()).setRegionConfVer(route.confVer())
                    .setStartKey(ByteString.copyFrom(part.start)).setEndKey(ByteString.copyFrom(part.end))
                    .setLimit(limit).setReverse(reverse).setKeysOnly(keysOnly).setMode(mode).build();
        }, ScanResponse::getError);
        return attempt.run().thenApply(answer -> {
            ScanResponse resp = answer.response();
            List<KeyValue> pairs = new ArrayList<>(resp.getPairsCount());
            for (Pair p : resp.getPairsList()) {
                pairs.add(new KeyValue(p.getKey().toByteArray(), keysOnly ? null : p.getValue().toByteArray()));
            }
            return new Page(pairs, resume(start, end, reverse, answer.route(), resp.getMore(), pairs));
        });
    }

    /** Where the scan goes on after a page from {@code route}'s part of the range; null when done. */
    private static byte[] resume(byte[] start, byte[] end, boolean reverse, Route route, boolean more, List<KeyValue> pairs) {
        if (more && !pairs.isEmpty()) {
            byte[] last = pairs.get(pairs.size() - 1).key();
            return reverse ? last : Keys.successor(last);
        }
        if (reverse) {
            byte[] regionStart = route.startKey();
            return regionStart.length == 0 || Arrays.compareUnsigned(regionStart, start) <= 0 ? null : regionStart;
        }
        byte[] regionEnd = route.endKey();
        return regionEnd.length == 0 || (end.length > 0 && Arrays.compareUnsigned(regionEnd, end) >= 0) ? null : regionEnd;
    }

    /** Every pair of [start, end) up to {@code limit}, page by page. */
    CompletableFuture<List<KeyValue>> scan(byte[] start, byte[] end, int limit, boolean reverse, boolean keysOnly,
                                           ReadMode mode, long deadlineNanos) {
        List<KeyValue> out = new ArrayList<>();
        return scanFrom(start, end, limit, reverse, keysOnly, mode, deadlineNanos, out).thenApply(v -> out);
    }

    private CompletableFuture<Void> scanFrom(byte[] start, byte[] end, int limit, boolean reverse, boolean keysOnly,
                                             ReadMode mode, long deadlineNanos, List<KeyValue> out) {
        return page(start, end, limit - out.size(), reverse, keysOnly, mode, deadlineNanos).thenCompose(page -> {
            out.addAll(page.pairs());
            if (page.resumeKey() == null || out.size() >= limit) {
                return CompletableFuture.completedFuture(null);
            }
            return reverse ? scanFrom(start, page.resumeKey(), limit, true, keysOnly, mode, deadlineNanos, out)
                    : scanFrom(page.resumeKey(), end, limit, false, keysOnly, mode, deadlineNanos, out);
        });
    }

    /** The locks of [start, end) as the regions' leaders see them, in key order, region by region. */
    CompletableFuture<List<LockInfo>> locks(byte[] start, byte[] end, long deadlineNanos) {
        List<LockInfo> out = new ArrayList<>();
        return locksFrom(start, end, deadlineNanos, out).thenApply(v -> out);
    }

    private CompletableFuture<Void> locksFrom(byte[] start, byte[] end, long deadlineNanos, List<LockInfo> out) {
        RegionCall<ScanResponse> attempt = call(start, false, true, ReadMode.READ_INDEX, deadlineNanos, route -> {
            KeyRangeBytes part = clip(start, end, route);
            return ScanRequest.newBuilder().setRegionId(route.regionId()).setRegionEpoch(route.epoch()).setRegionConfVer(route.confVer())
                    .setStartKey(ByteString.copyFrom(part.start)).setEndKey(ByteString.copyFrom(part.end))
                    .setLimit(LOCK_PAGE).setLocks(true).setMode(ReadMode.READ_INDEX).build();
        }, ScanResponse::getError);
        return attempt.run().thenCompose(answer -> {
            List<KeyValue> keys = new ArrayList<>(answer.response().getPairsCount());
            for (Pair p : answer.response().getPairsList()) {
                keys.add(new KeyValue(p.getKey().toByteArray(), null));
                if (p.getValue().isEmpty()) {
                    continue; // a key never locked
                }
                try {
                    out.add(LockInfo.parseFrom(p.getValue()));
                } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                    throw new KvException(ErrorCode.INTERNAL, "undecodable lock of " + Keys.printable(p.getKey().toByteArray()));
                }
            }
            byte[] next = resume(start, end, false, answer.route(), answer.response().getMore(), keys);
            return next == null ? CompletableFuture.completedFuture(null) : locksFrom(next, end, deadlineNanos, out);
        });
    }

    private static final int LOCK_PAGE = 1000;

    /** One DELETE_RANGE per region [start, end) touches, one region after the other. */
    CompletableFuture<Void> deleteRange(byte[] start, byte[] end, long deadlineNanos) {
        RegionCall<WriteResponse> attempt = call(start, false, false, null, deadlineNanos, route -> {
            KeyRangeBytes part = clip(start, end, route);
            return WriteRequest.newBuilder().setRegionId(route.regionId()).setRegionEpoch(route.epoch()).setRegionConfVer(route.confVer())
                    .addOps(WriteOp.newBuilder().setType(WriteOpType.DELETE_RANGE)
                            .setKey(ByteString.copyFrom(part.start)).setEndKey(ByteString.copyFrom(part.end)))
                    .build();
        }, WriteResponse::getError);
        return attempt.run().thenCompose(answer -> {
            byte[] next = resume(start, end, false, answer.route(), false, List.of());
            return next == null ? CompletableFuture.completedFuture(null) : deleteRange(next, end, deadlineNanos);
        });
    }

    /** [start, end) cut to the region's range. */
    private static KeyRangeBytes clip(byte[] start, byte[] end, Route route) {
        byte[] rs = route.startKey();
        byte[] re = route.endKey();
        byte[] s = Arrays.compareUnsigned(start, rs) >= 0 ? start : rs;
        byte[] e;
        if (end.length == 0) {
            e = re;
        } else if (re.length == 0) {
            e = end;
        } else {
            e = Arrays.compareUnsigned(end, re) <= 0 ? end : re;
        }
        return new KeyRangeBytes(s, e);
    }

    private record KeyRangeBytes(byte[] start, byte[] end) {
    }
}
