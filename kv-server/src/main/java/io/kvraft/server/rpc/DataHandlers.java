package io.kvraft.server.rpc;

import com.alipay.sofa.jraft.rpc.RpcContext;
import com.alipay.sofa.jraft.rpc.RpcServer;
import io.kvraft.common.Errors;
import io.kvraft.common.WriteKind;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.ReadRequest;
import io.kvraft.common.proto.KvProto.ReadResponse;
import io.kvraft.common.proto.KvProto.ScanRequest;
import io.kvraft.common.proto.KvProto.ScanResponse;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.server.config.ServerConfig.LimitsConfig;
import io.kvraft.server.store.WriteRoom;
import io.kvraft.server.host.RegionHost;
import io.kvraft.server.metrics.KvMetrics;
import io.kvraft.server.raft.Processors;
import io.kvraft.server.region.Region;
import io.kvraft.server.region.RequestChecks;
import io.kvraft.server.region.WriteOps;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.ScanPage;

import java.util.function.Consumer;

/**
 * The data requests on the node's shared RPC server: writes, reads and scans. Every request is checked here, on the
 * leader, before it reaches the log: region, epoch, leadership, keys and values (each op as its {@link WriteOps} row
 * says). Handlers never block, so they run on bolt's I/O threads.
 */
public final class DataHandlers {

    private final RegionHost host;
    private final RequestGate gate;
    private final RequestChecks checks;
    private final LimitsConfig limits;
    private final KvMetrics metrics;
    private final WriteRoom room;

    /** @param room whether a region may take writes that add data (the heap, the disks of its replicas' nodes) */
    public DataHandlers(RegionHost host, RequestGate gate, LimitsConfig limits, KvMetrics metrics, WriteRoom room) {
        this.host = host;
        this.gate = gate;
        this.checks = new RequestChecks(limits);
        this.limits = limits;
        this.metrics = metrics;
        this.room = room;
    }

    public void register(RpcServer server) {
        server.registerProcessor(Processors.direct(WriteRequest.class, this::write));
        server.registerProcessor(Processors.direct(ReadRequest.class, this::read));
        server.registerProcessor(Processors.direct(ScanRequest.class, this::scan));
    }


    /**
     * The answer to a write request: counted in flight until sent, then timed and counted by op type
     * (one lambda per request, as the plain {@code ctx::sendResponse} was).
     */
    /** @param reads gets that ride on the request's entry */
    private Consumer<WriteResponse> writeReply(RpcContext ctx, int puts, int deletes, int cas, int reads) {
        Runnable done = gate.track(); // before the shuttingDown check, so a drain that saw zero cannot miss this request
        long start = System.nanoTime();
        return resp -> {
            try {
                ctx.sendResponse(resp);
            } finally {
                done.run();
                gate.closeIfStopped(ctx);
                ErrorCode error = resp.hasError() ? resp.getError().getCode() : null;
                metrics.written(start, puts, deletes, cas, error);
                if (reads > 0 && error == null) { // a failed request's error is counted once, above
                    metrics.read(start, reads, resp.hasReadError() ? resp.getReadError().getCode() : null);
                }
            }
        };
    }

    private Consumer<ScanResponse> scanReply(RpcContext ctx) {
        Runnable done = gate.track();
        long start = System.nanoTime();
        return resp -> {
            try {
                ctx.sendResponse(resp);
            } finally {
                done.run();
                gate.closeIfStopped(ctx);
                metrics.scanned(start, resp.getPairsCount(), resp.hasError() ? resp.getError().getCode() : null);
            }
        };
    }

    private Consumer<ReadResponse> readReply(RpcContext ctx, int keys) {
        Runnable done = gate.track();
        long start = System.nanoTime();
        return resp -> {
            try {
                ctx.sendResponse(resp);
            } finally {
                done.run();
                gate.closeIfStopped(ctx);
                metrics.read(start, keys, resp.hasError() ? resp.getError().getCode() : null);
            }
        };
    }

    private void write(RpcContext ctx, WriteRequest req) {
        int puts = 0;
        int deletes = 0;
        int cas = 0;
        boolean returnsValues = false;
        for (int i = 0; i < req.getOpsCount(); i++) {
            WriteKind kind = WriteKind.of(req.getOps(i).getType());
            if (kind == null) {
                continue; // refused below, by its number
            }
            switch (kind.counted()) {
                case PUT -> puts++;
                case DELETE -> deletes++;
                case CAS -> cas++;
                default -> { }
            }
            returnsValues |= kind.answer() == WriteKind.Answer.PREVIOUS;
        }
        write(req, returnsValues, writeReply(ctx, puts, deletes, cas, req.getReadKeysCount()), LEADER_WAITS);
    }

    /** @param waits how often more a request that finds no leader here may wait for one */
    private void write(WriteRequest req, boolean returnsValues, Consumer<WriteResponse> reply, int waits) {
        Region region = host.region(req.getRegionId());
        Error error = gate.checkRegion(region, req.getRegionId(), req.getRegionEpoch(), req.getRegionConfVer());
        int bytes = 0;
        if (error == null) {
            if (req.getOpsCount() == 0) {
                error = Errors.of(ErrorCode.INVALID_ARGUMENT, "empty write batch");
            } else if (req.getOpsCount() + req.getReadKeysCount() > limits.maxBatchOps()) {
                error = Errors.of(ErrorCode.INVALID_ARGUMENT, "batch of " + req.getOpsCount() + " ops"
                        + (req.getReadKeysCount() > 0 ? " and " + req.getReadKeysCount() + " reads" : "")
                        + " exceeds limits.maxBatchOps " + limits.maxBatchOps());
            }
        }
        for (int i = 0; error == null && i < req.getReadKeysCount(); i++) {
            error = checks.key(region, req.getReadKeys(i));
        }
        for (int i = 0; error == null && i < req.getOpsCount(); i++) {
            WriteOp op = req.getOps(i);
            error = WriteOps.checkFromClient(region, req, i, checks);
            bytes += op.getKey().size() + op.getValue().size() + op.getExpect().size() + op.getEndKey().size();
        }
        if (error == null) {
            error = RequestGate.checkLeader(region);
        }
        if (error == null) {
            String full = room.refusal(region.peers()); // cheap while no node is full, as grows() is not
            if (full != null && grows(req)) {
                error = Errors.of(ErrorCode.STORE_FULL, full);
            }
        }
        if (error != null) {
            if (waits > 0 && waitsForLeader(region, error, () -> write(req, returnsValues, reply, waits - 1))) {
                return;
            }
            reply.accept(WriteResponse.newBuilder().setError(error).build());
            return;
        }
        region.writes().write(req.getOpsList(), req.getReadKeysList(), bytes, returnsValues, reply);
    }

    private static boolean grows(WriteRequest req) {
        for (int i = 0; i < req.getOpsCount(); i++) {
            WriteKind kind = WriteKind.of(req.getOps(i).getType());
            if (kind != null && kind.grows()) {
                return true;
            }
        }
        return false;
    }

    private void read(RpcContext ctx, ReadRequest req) {
        read(req, readReply(ctx, req.getKeysCount()), LEADER_WAITS);
    }

    private void read(ReadRequest req, Consumer<ReadResponse> reply, int waits) {
        Region region = host.region(req.getRegionId());
        Error error = gate.checkRegion(region, req.getRegionId(), req.getRegionEpoch(), req.getRegionConfVer());
        if (error == null && req.getKeysCount() == 0) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "empty read batch");
        }
        if (error == null && req.getKeysCount() > limits.maxBatchOps()) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "batch exceeds limits.maxBatchOps " + limits.maxBatchOps());
        }
        for (int i = 0; error == null && i < req.getKeysCount(); i++) {
            error = checks.key(region, req.getKeys(i));
        }
        if (error == null) {
            error = checkReadMode(region, req.getMode());
        }
        if (error != null) {
            if (waits > 0 && waitsForLeader(region, error, () -> read(req, reply, waits - 1))) {
                return;
            }
            reply.accept(ReadResponse.newBuilder().setError(error).build());
            return;
        }
        region.reads().read(region.reads().gets(req.getKeysList(), reply), req.getMode());
    }

    private void scan(RpcContext ctx, ScanRequest req) {
        scan(req, scanReply(ctx), LEADER_WAITS);
    }

    private void scan(ScanRequest req, Consumer<ScanResponse> reply, int waits) {
        Region region = host.region(req.getRegionId());
        Error error = gate.checkRegion(region, req.getRegionId(), req.getRegionEpoch(), req.getRegionConfVer());
        KeyRange range = new KeyRange(req.getStartKey().toByteArray(), req.getEndKey().toByteArray());
        if (error == null) {
            error = checks.range(region, range, req.getStartKey(), req.getEndKey());
        }
        if (error == null && req.getLimit() < 1) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "scan limit must be at least 1, got " + req.getLimit());
        }
        if (error == null) {
            // a lock's time left is told by the leader's lease clock, so lock listings are the leader's
            error = req.getLocks() ? RequestGate.checkLeader(region) : checkReadMode(region, req.getMode());
        }
        if (error != null) {
            if (waits > 0 && waitsForLeader(region, error, () -> scan(req, reply, waits - 1))) {
                return;
            }
            reply.accept(ScanResponse.newBuilder().setError(error).build());
            return;
        }
        if (req.getLocks()) {
            int limit = req.getLimit() < 0 ? limits.maxBatchOps() : Math.min(req.getLimit(), limits.maxBatchOps());
            ScanPage.Builder page = new ScanPage.Builder(limit, limits.maxScanBytes(), false);
            region.reads().read(region.reads().locks(range, page, reply), ReadMode.READ_INDEX);
            return;
        }
        // an unsigned limit above maxBatchOps (or above Integer.MAX_VALUE, negative here) is capped: the page ends early
        int limit = req.getLimit() < 0 ? limits.maxBatchOps() : Math.min(req.getLimit(), limits.maxBatchOps());
        ScanPage.Builder page = new ScanPage.Builder(limit, limits.maxScanBytes(), req.getKeysOnly());
        region.reads().read(region.reads().scan(range, req.getReverse(), page, reply), req.getMode());
    }

    /** Leader-only modes need this node to lead; FOLLOWER and STALE are served by any replica. */
    private static Error checkReadMode(Region region, ReadMode mode) {
        return switch (mode) {
            case READ_INDEX, LEADER_LEASE -> RequestGate.checkLeader(region);
            case FOLLOWER, STALE -> null;
            default -> Errors.of(ErrorCode.INVALID_ARGUMENT, "unknown read mode " + mode);
        };
    }

    /**
     * Holds a request that found its region here with no known leader (NO_LEADER: an election, such as a new region's
     * first after a split) until this replica knows one; {@code retry} answers it then. False: answer now.
     */
    private static boolean waitsForLeader(Region region, Error error, Runnable retry) {
        return error.getCode() == ErrorCode.NO_LEADER && region != null && region.awaitLeader(retry);
    }

    /**
     * How often a request that finds its region here without a known leader is held for one: twice, since a leader
     * that hands its leadership over first steps down (the request is released, and the new leader is not known yet)
     * and learns the new leader a moment later.
     */
    private static final int LEADER_WAITS = 2;
}
