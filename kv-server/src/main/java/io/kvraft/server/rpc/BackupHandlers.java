package io.kvraft.server.rpc;

import io.kvraft.server.raft.Processors;

import io.kvraft.common.Errors;

import com.alipay.sofa.jraft.rpc.RpcContext;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.AdminResponse;
import io.kvraft.common.proto.KvProto.BackupCloseRequest;
import io.kvraft.common.proto.KvProto.BackupOpenRequest;
import io.kvraft.common.proto.KvProto.BackupOpenResponse;
import io.kvraft.common.proto.KvProto.BackupPageRequest;
import io.kvraft.common.proto.KvProto.BackupPageResponse;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.Pair;
import io.kvraft.server.backup.BackupSessions;
import io.kvraft.server.config.ServerConfig.LimitsConfig;
import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.BackupPoint;
import io.kvraft.server.region.Region;
import io.kvraft.server.store.RangeCapture;
import io.kvraft.server.store.ScanPage;

import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;

/**
 * The backup RPCs: open a session (a region's capture at a BACKUP_POINT entry, on its leader), read it page
 * by page (its pairs, then its system records), close it. Pages are read on {@code pageExecutor} (one thread), not on bolt's I/O threads: a page is
 * up to limits.maxScanBytes read from the store, and backups should queue behind each other, not beside
 * client traffic.
 */
public final class BackupHandlers {

    private final RegionHost host;
    private final RequestGate gate;
    private final LimitsConfig limits;
    private final String storeId;
    private final BackupSessions sessions;
    private final Executor pageExecutor;

    /** @param storeId the data directory's id, in each capture's answer */
    public BackupHandlers(RegionHost host, RequestGate gate, LimitsConfig limits, String storeId, BackupSessions sessions,
                          Executor pageExecutor) {
        this.host = host;
        this.gate = gate;
        this.limits = limits;
        this.storeId = storeId;
        this.sessions = sessions;
        this.pageExecutor = pageExecutor;
    }

    public void register(RpcServer server) {
        server.registerProcessor(Processors.direct(BackupOpenRequest.class, this::open));
        server.registerProcessor(Processors.direct(BackupPageRequest.class, this::page));
        server.registerProcessor(Processors.direct(BackupCloseRequest.class, this::close));
    }

    private <T> Consumer<T> reply(RpcContext ctx) {
        Runnable done = gate.track();
        return resp -> {
            try {
                ctx.sendResponse(resp);
            } finally {
                done.run();
            }
        };
    }

    private void open(RpcContext ctx, BackupOpenRequest req) {
        Consumer<BackupOpenResponse> reply = reply(ctx);
        Region region = host.region(req.getRegionId());
        Error error = gate.checkRegionLeader(region, req.getRegionId(), req.getRegionEpoch());
        if (error == null && !sessions.hasRoom()) {
            error = Errors.of(ErrorCode.BUSY, "node " + host.endpoint() + " holds too many backup sessions");
        }
        if (error != null) {
            reply.accept(BackupOpenResponse.newBuilder().setError(error).build());
            return;
        }
        region.writes().captureForBackup(new BackupPoint.Callback() {
            @Override
            public void captured(RangeCapture capture, long index, long term) {
                BackupSessions.Session s = sessions.open(region.id(), capture);
                if (s == null) {
                    failed(Errors.of(ErrorCode.SHUTTING_DOWN, "node " + host.endpoint() + " is shutting down"));
                    return;
                }
                reply.accept(BackupOpenResponse.newBuilder().setSessionId(s.id()).setAppliedIndex(index).setTerm(term)
                        .setStartKey(ByteString.copyFrom(region.range().start()))
                        .setEndKey(ByteString.copyFrom(region.range().end())).setEpoch(region.epoch())
                        .setKeyCount(Math.max(0, capture.keyCount())).setStoreId(storeId).build());
            }

            @Override
            public void failed(Error e) {
                reply.accept(BackupOpenResponse.newBuilder().setError(e).build());
            }
        });
    }

    private void page(RpcContext ctx, BackupPageRequest req) {
        Consumer<BackupPageResponse> reply = reply(ctx);
        BackupSessions.Session s = sessions.get(req.getSessionId());
        if (s == null) {
            reply.accept(error(ErrorCode.SESSION_NOT_FOUND, "node " + host.endpoint() + " holds no backup session "
                    + Long.toUnsignedString(req.getSessionId()) + " (ended, expired, or the node restarted)"));
            return;
        }
        if (req.getLimit() < 1) {
            reply.accept(error(ErrorCode.INVALID_ARGUMENT, "backup page limit must be at least 1, got " + req.getLimit()));
            return;
        }
        int limit = req.getLimit() < 0 ? limits.maxBatchOps() : Math.min(req.getLimit(), limits.maxBatchOps());
        try {
            pageExecutor.execute(() -> {
                try {
                    byte[] from = req.getStartKey().toByteArray();
                    ScanPage.Builder builder = new ScanPage.Builder(limit, limits.maxScanBytes(), false);
                    ScanPage page = req.getSystem() ? s.capture().systemPage(from, builder) : s.capture().page(from, builder);
                    BackupPageResponse.Builder b = BackupPageResponse.newBuilder().setMore(page.more())
                            .setSystem(req.getSystem());
                    for (int i = 0; i < page.keys().size(); i++) {
                        b.addPairs(Pair.newBuilder().setKey(ByteString.copyFrom(page.keys().get(i)))
                                .setValue(ByteString.copyFrom(page.values().get(i))));
                    }
                    reply.accept(b.build());
                } catch (RuntimeException e) { // the session was closed or expired under the read, or the store failed
                    reply.accept(error(ErrorCode.SESSION_NOT_FOUND, "backup session " + Long.toUnsignedString(s.id())
                            + " of region " + s.regionId() + " cannot be read: " + e.getMessage()));
                }
            });
        } catch (RejectedExecutionException stopping) {
            reply.accept(error(ErrorCode.SHUTTING_DOWN, "node " + host.endpoint() + " is shutting down"));
        }
    }

    private void close(RpcContext ctx, BackupCloseRequest req) {
        sessions.close(req.getSessionId());
        ctx.sendResponse(AdminResponse.getDefaultInstance());
    }

    private static BackupPageResponse error(ErrorCode code, String detail) {
        return BackupPageResponse.newBuilder().setError(Errors.of(code, detail)).build();
    }
}
