package io.kvraft.server.rpc;

import com.alipay.sofa.jraft.rpc.RpcContext;
import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.Region;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;

/**
 * What every request handler of a node asks first: is the node still taking requests (a graceful shutdown answers
 * SHUTTING_DOWN with the leader hint), is the region here, at the request's epoch, led here; and the count of
 * requests accepted and not answered yet, which a graceful shutdown waits for.
 */
public final class RequestGate {

    private final RegionHost host;
    private volatile boolean shuttingDown;
    private volatile boolean stopped;
    /** Requests received and not yet answered: a graceful shutdown waits for them. */
    private final LongAdder inFlight = new LongAdder();

    public RequestGate(RegionHost host) {
        this.host = host;
    }

    /** Counts a request in flight until the returned action runs (a graceful shutdown waits for it). */
    Runnable track() {
        inFlight.increment();
        return inFlight::decrement;
    }

    /** Requests accepted and not answered yet. */
    public long inFlight() {
        return inFlight.sum();
    }

    boolean shuttingDown() {
        return shuttingDown;
    }

    /** From now on every request is answered SHUTTING_DOWN; those already accepted still finish. */
    public void beginShutdown() {
        shuttingDown = true;
    }

    /**
     * The node has stopped, but its JVM runs on (a node stopped and started again in one process, as tests do): bolt
     * leaves open the connections this node's server accepted, on the JVM's shared event loop, so a client that had
     * one went on asking this stopped node (answered SHUTTING_DOWN or NOT_LEADER for its whole deadline) instead of
     * the node started again on the same port. From now on each answer closes its connection, a moment after it was
     * sent, so the client connects again.
     */
    public void stopped() {
        beginShutdown();
        stopped = true;
    }

    /** The answer of a node that is shutting down, or has no part to do an admin operation ("move replicas"). */
    Error notNow(String doing) {
        return Errors.of(shuttingDown ? ErrorCode.SHUTTING_DOWN : ErrorCode.UNAVAILABLE,
                "node " + host.endpoint() + " does not " + doing + " now");
    }

    /** The error for a request to {@code region} that needs its leader, or null when this node may serve it. */
    Error checkRegionLeader(Region region, int regionId, long epoch) {
        Error error = checkRegion(region, regionId, epoch);
        return error != null ? error : checkLeader(region);
    }


    void closeIfStopped(RpcContext ctx) {
        if (stopped) {
            CompletableFuture.delayedExecutor(100, java.util.concurrent.TimeUnit.MILLISECONDS).execute(() -> {
                try {
                    ctx.getConnection().close();
                } catch (RuntimeException alreadyClosed) {
                    // nothing to close
                }
            });
        }
    }

    Error checkRegion(Region region, int regionId, long epoch) {
        return checkRegion(region, regionId, epoch, 0);
    }

    /**
     * @param confVer the region's conf version the client's route has (0: not checked); an older one than this
     *                replica's is answered STALE_EPOCH, so the client asks for the region's replicas again. A newer
     *                one is no error: this replica has not applied the change yet.
     */
    Error checkRegion(Region region, int regionId, long epoch, long confVer) {
        if (shuttingDown) {
            // the leader hint sends the client straight to the new leader once this node has handed it over
            String hint = region == null ? "" : region.leaderHint();
            return Errors.of(ErrorCode.SHUTTING_DOWN, hint.equals(host.endpoint()) ? "" : hint,
                    "node " + host.endpoint() + " is shutting down");
        }
        if (region == null) {
            return Errors.of(ErrorCode.REGION_NOT_FOUND, "no region " + regionId + " on " + host.endpoint());
        }
        long current = region.epoch();
        if (epoch != current) {
            return Errors.of(ErrorCode.STALE_EPOCH, "region " + regionId + " is at epoch " + current + " "
                    + region.range() + ", request has " + epoch);
        }
        if (confVer != 0 && confVer < region.confVer()) {
            return Errors.of(ErrorCode.STALE_EPOCH, "region " + regionId + "'s replicas changed: conf version "
                    + region.confVer() + " " + region.peers() + ", request has " + confVer);
        }
        if (region.mergingInto() != 0) {
            return region.merging();
        }
        return null;
    }

    static Error checkLeader(Region region) {
        if (region.isLeader()) {
            return null;
        }
        if (region.transferring()) {
            // jraft refuses writes while it hands the leadership over (0.1-0.3 s) and names itself the leader: the
            // client went straight back, three times, then paused 10, 20, 40 ... 320 ms, and its writes waited well
            // after the new leader was there. No leader is the truth for that moment: the request waits here for it.
            return Errors.of(ErrorCode.NO_LEADER, "", "region " + region.id() + ": its leadership is moving to "
                    + "another node");
        }
        String hint = region.leaderHint();
        return Errors.of(hint.isEmpty() ? ErrorCode.NO_LEADER : ErrorCode.NOT_LEADER, hint,
                "this node does not lead region " + region.id() + " (" + region.raftState() + ")");
    }
}
