package io.kvraft.server.shape;

import io.kvraft.server.region.Region;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.common.proto.KvProto.AdminResponse;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.ReplicaRequest;
import io.kvraft.common.rpc.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * What a replica move ({@link ReplicaMover}) and the sweep of stray learners ({@link StrayLearners}) ask of jraft and of
 * other nodes: a jraft call awaited through its closure, and a replica request (ADD, DROP) sent to a node.
 */
final class ReplicaCalls {

    private static final Logger LOG = LoggerFactory.getLogger(ReplicaCalls.class);
    static final long RPC_TIMEOUT_MS = 10_000;
    private static final long NUDGE_MS = 200;

    private final Transport peers;

    ReplicaCalls(Transport peers) {
        this.peers = peers;
    }

    /** Sends a replica request; null when done, else why not. */
    String ask(String node, ReplicaRequest req) {
        try {
            AdminResponse resp = peers.<AdminResponse>call(node, req, RPC_TIMEOUT_MS)
                    .get(RPC_TIMEOUT_MS + 1000, TimeUnit.MILLISECONDS);
            return resp.hasError() && resp.getError().getCode() != ErrorCode.OK
                    ? resp.getError().getCode() + ": " + resp.getError().getDetail() : null;
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    /** Has {@code node} drop its replica of {@code region}, whose voters are {@code voters}; logged when it does not. */
    void dropOn(String node, Region region, List<String> voters) {
        RegionInfo info = region.info().toBuilder().clearPeers().addAllPeers(voters).build();
        String failed = ask(node, ReplicaRequest.newBuilder().setOp(ReplicaRequest.Op.DROP).setRegion(info).build());
        if (failed != null) {
            LOG.warn("region {}: the replica started on {} for a move that did not happen was not dropped: {}",
                    region.id(), node, failed);
        }
    }

    /** The learners of the region's configuration, as jraft names them (see {@link Region#learners}). */
    static List<PeerId> learners(Region region) {
        return region.learners().stream().map(PeerId::parsePeer).toList();
    }

    static ErrorCode codeOf(Status st) {
        return switch (st.getRaftError()) {
            case EPERM -> ErrorCode.NOT_LEADER;
            case EBUSY -> ErrorCode.BUSY;
            default -> ErrorCode.UNAVAILABLE;
        };
    }

    /**
     * Runs a jraft call that reports through a closure and waits for it, up to {@code timeoutMs}. With a region (a
     * configuration change that adds a voter) it proposes an entry that changes nothing every {@code NUDGE_MS}
     * meanwhile ({@link Region#nudge}), since jraft sees the new voter caught up only from an answer to entries sent
     * after the change began.
     */
    static Status awaitNudging(Region region, long timeoutMs,
                               java.util.function.Consumer<CompletableFuture<Status>> call) {
        CompletableFuture<Status> done = new CompletableFuture<>();
        try {
            call.accept(done);
        } catch (IllegalArgumentException | IllegalStateException e) {
            return new Status(com.alipay.sofa.jraft.error.RaftError.EINVAL, "%s", e.getMessage());
        }
        // jraft ends a change on its own (done, or the new voter not alive); this bound is for a node that hangs
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true) {
            try {
                return done.get(NUDGE_MS, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                if (System.nanoTime() - deadline > 0) {
                    return new Status(com.alipay.sofa.jraft.error.RaftError.ETIMEDOUT, "no answer from jraft");
                }
                if (region != null && region.isLeader()) {
                    region.nudge();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new Status(com.alipay.sofa.jraft.error.RaftError.EINTR, "interrupted");
            } catch (java.util.concurrent.ExecutionException e) {
                return new Status(com.alipay.sofa.jraft.error.RaftError.EINTERNAL, "%s", e.getCause().toString());
            }
        }
    }

    /** Runs a jraft call that reports through a closure and waits for it (bounded: jraft answers every closure). */
    static Status await(java.util.function.Consumer<CompletableFuture<Status>> call) {
        return awaitNudging(null, 2 * RPC_TIMEOUT_MS, call);
    }

    /** How long a configuration change that jraft refuses as busy with another is asked again. */
    static final long CONF_BUSY_MS = 3_000;
    private static final long CONF_BUSY_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    /**
     * {@link #await} for a configuration change, asked again every 100 ms for up to {@link #CONF_BUSY_MS} while jraft
     * refuses it as "Doing another configuration change" (EBUSY): a leader's own first entry, or a change that is
     * committing, is done in moments (a move right after an election failed on it). A leadership transfer under way
     * is not waited for: jraft's node does not lead then.
     */
    static Status awaitConfChange(com.alipay.sofa.jraft.Node node,
                                  java.util.function.Consumer<CompletableFuture<Status>> call) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CONF_BUSY_MS);
        while (true) {
            Status st = await(call);
            if (st.isOk() || st.getRaftError() != com.alipay.sofa.jraft.error.RaftError.EBUSY || !node.isLeader()
                    || System.nanoTime() - deadline > 0) {
                return st;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(CONF_BUSY_RETRY_NANOS);
        }
    }
}
