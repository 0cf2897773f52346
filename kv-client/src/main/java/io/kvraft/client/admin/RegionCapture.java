package io.kvraft.client.admin;

import com.google.protobuf.ByteString;
import io.kvraft.client.route.Calls;
import io.kvraft.client.route.RegionCall;
import io.kvraft.client.route.Routes;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.BackupCloseRequest;
import io.kvraft.common.proto.KvProto.BackupOpenRequest;
import io.kvraft.common.proto.KvProto.BackupOpenResponse;
import io.kvraft.common.proto.KvProto.BackupPageRequest;
import io.kvraft.common.proto.KvProto.BackupPageResponse;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One region's data (its pairs and its system records) as of one applied index, held by the node that captured
 * it (the region's leader then) as a backup session, and read page by page with {@link #page} and
 * {@link #systemPage}; {@link #close} ends the session. The capture
 * stays valid when the leadership moves: it is a committed state of the region. It is gone when the node
 * restarts or nobody reads it for the node's idle timeout (then pages fail with SESSION_NOT_FOUND, and a
 * backup starts the region again).
 */
public final class RegionCapture implements AutoCloseable {

    /** A page of pairs in ascending key order; {@code more} when the capture holds keys after them. */
    public record Page(List<Pair> pairs, boolean more) {
    }

    /** A key and its value (a system page's: the key's system record); the arrays are not copied. */
    public record Pair(byte[] key, byte[] value) {
    }

    private final Calls calls;
    private final String node;
    private final long sessionId;
    private final int regionId;
    private final byte[] startKey;
    private final byte[] endKey;
    private final long epoch;
    private final long appliedIndex;
    private final long term;
    private final String storeId;

    private RegionCapture(Calls calls, String node, long sessionId, int regionId, byte[] startKey, byte[] endKey,
                          long epoch, long appliedIndex, long term, String storeId) {
        this.calls = calls;
        this.node = node;
        this.sessionId = sessionId;
        this.regionId = regionId;
        this.startKey = startKey;
        this.endKey = endKey;
        this.epoch = epoch;
        this.appliedIndex = appliedIndex;
        this.term = term;
        this.storeId = storeId;
    }

    /** Opens a backup session on the leader of the region holding {@code key}, retried as a read is, until the deadline. */
    static CompletableFuture<RegionCapture> open(Routes routes, Calls calls, byte[] key) {
        RegionCall<BackupOpenResponse> attempt = new RegionCall<>(routes, calls, key, false, true, null, calls.deadline(),
                route -> BackupOpenRequest.newBuilder().setRegionId(route.regionId()).setRegionEpoch(route.epoch())
                        .build(), BackupOpenResponse::getError);
        return attempt.run().thenApply(answer -> {
            BackupOpenResponse r = answer.response();
            return new RegionCapture(calls, answer.target(), r.getSessionId(), answer.route().regionId(),
                    r.getStartKey().toByteArray(), r.getEndKey().toByteArray(), r.getEpoch(), r.getAppliedIndex(),
                    r.getTerm(), r.getStoreId());
        });
    }

    /** Up to {@code limit} pairs from {@code from} (inclusive; empty = the region's start); a lost answer is asked again. */
    public CompletableFuture<Page> page(byte[] from, int limit) {
        return page(from, limit, false);
    }

    /**
     * As {@link #page}, for the capture's system records (sequences and locks) of the region: each pair's value is
     * the key's {@code CoordRecord}, as of the same applied index as the pairs. Fails with INTERNAL when the node
     * predates system pages (it would answer pairs).
     */
    public CompletableFuture<Page> systemPage(byte[] from, int limit) {
        return page(from, limit, true);
    }

    private CompletableFuture<Page> page(byte[] from, int limit, boolean system) {
        BackupPageRequest req = BackupPageRequest.newBuilder().setSessionId(sessionId)
                .setStartKey(ByteString.copyFrom(from)).setLimit(limit).setSystem(system).build();
        CompletableFuture<Page> result = new CompletableFuture<>();
        ask(req, calls.deadline(), result);
        return result;
    }

    private void ask(BackupPageRequest req, long deadlineNanos, CompletableFuture<Page> result) {
        long timeoutMs = Math.max(1, Math.min(calls.requestTimeoutMs(), (deadlineNanos - System.nanoTime()) / 1_000_000L));
        calls.transport().<BackupPageResponse>call(node, req, timeoutMs).whenComplete((resp, err) -> {
            if (err != null) {
                KvException e = KvException.unwrap(err);
                // reading a page changes nothing: a timeout or a lost connection is simply asked again
                boolean again = (e.code() == ErrorCode.TIMEOUT || e.code() == ErrorCode.UNAVAILABLE)
                        && System.nanoTime() < deadlineNanos;
                if (again) {
                    ask(req, deadlineNanos, result);
                } else {
                    result.completeExceptionally(e);
                }
                return;
            }
            if (resp.hasError() && resp.getError().getCode() != KvProto.ErrorCode.OK) {
                result.completeExceptionally(new KvException(ErrorCode.fromWire(resp.getError().getCode()),
                        resp.getError().getDetail()));
                return;
            }
            if (resp.getSystem() != req.getSystem()) {
                result.completeExceptionally(new KvException(ErrorCode.INTERNAL, "node " + node + " does not back up"
                        + " sequences and locks (an older version?); upgrade it and back up again"));
                return;
            }
            List<Pair> pairs = new ArrayList<>(resp.getPairsCount());
            for (io.kvraft.common.proto.KvProto.Pair p : resp.getPairsList()) {
                pairs.add(new Pair(p.getKey().toByteArray(), p.getValue().toByteArray()));
            }
            result.complete(new Page(pairs, resp.getMore()));
        });
    }

    /**
     * Ends the session on its node, waiting at most one request timeout for the answer; an error is ignored,
     * since a node that does not answer drops the session on its own after its idle timeout.
     */
    @Override
    public void close() {
        calls.call(node, BackupCloseRequest.newBuilder().setSessionId(sessionId).build()).handle((r, e) -> null).join();
    }

    public int regionId() {
        return regionId;
    }

    /** The region's range start (inclusive, empty = -inf). */
    public byte[] startKey() {
        return startKey.clone();
    }

    /** The region's range end (exclusive, empty = +inf). */
    public byte[] endKey() {
        return endKey.clone();
    }

    public long epoch() {
        return epoch;
    }

    /** The region's log index whose state the capture is. */
    public long appliedIndex() {
        return appliedIndex;
    }

    public long term() {
        return term;
    }

    /** host:port of the node holding the session. */
    public String node() {
        return node;
    }

    /** The store id of that node's data directory. */
    public String storeId() {
        return storeId;
    }
}
