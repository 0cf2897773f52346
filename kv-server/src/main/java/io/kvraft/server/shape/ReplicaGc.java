package io.kvraft.server.shape;

import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.Region;

import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.rpc.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Drops replicas that a replica move took out of their region while this node was down or cut off (the move's last
 * step, the source dropping its replica, never reached it). Such a replica hears from no leader, and the other
 * replicas refuse its votes, so it waits for ever. A replica that has had no leader for {@code leaderlessMs} asks the
 * cluster's nodes about its region; when the region's leader, in this replica's term or a later one, names voters
 * without this node, the replica is dropped. Only a committed configuration change removes a voter, and a leader
 * reports the voters it has applied, so the answer is final; a replica still among them (behind, or cut off) is kept.
 */
public final class ReplicaGc implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(ReplicaGc.class);
    private static final long ASK_TIMEOUT_MS = 2000;

    private final RegionHost host;
    private final Transport peers;
    private final Executor drops;
    private final long leaderlessNanos;
    private final LongSupplier nanoClock;
    /** Per region without a known leader here, since when (nanoClock); only the checking thread touches it. */
    private final Map<Integer, Long> leaderlessSince = new HashMap<>();

    /** @param drops where drops run (they stop a group): not the thread that runs the checks */
    public ReplicaGc(RegionHost host, Transport peers, Executor drops, long leaderlessMs, LongSupplier nanoClock) {
        this.host = host;
        this.peers = peers;
        this.drops = drops;
        this.leaderlessNanos = TimeUnit.MILLISECONDS.toNanos(leaderlessMs);
        this.nanoClock = nanoClock;
    }

    @Override
    public void run() {
        try {
            checkOnce();
        } catch (RuntimeException e) {
            LOG.warn("replica check failed: {}", e.toString());
        }
    }

    void checkOnce() {
        long now = nanoClock.getAsLong();
        Map<Integer, Region> leaderless = new HashMap<>();
        for (Region r : host.regions()) {
            if (r.leaderHint().isEmpty()) {
                leaderless.put(r.id(), r);
            }
        }
        leaderlessSince.keySet().retainAll(leaderless.keySet());
        for (Region r : leaderless.values()) {
            long since = leaderlessSince.computeIfAbsent(r.id(), id -> now);
            if (now - since >= leaderlessNanos) {
                RegionInfo leader = leaderElsewhere(r);
                if (leader != null) {
                    leaderlessSince.remove(r.id());
                    LOG.info("region {}: its leader {} (term {}) names replicas {} without this node, whose replica"
                            + " (term {}) was moved off while it was away: dropping it", r.id(), leader.getLeader(),
                            leader.getTerm(), leader.getPeersList(), r.info().getTerm());
                    drops.execute(() -> host.dropReplica(r.id(), leader.getPeersList()));
                }
            }
        }
    }

    /**
     * The region's leader's view when it names voters without this node, else null. Only a leader in this replica's
     * term or a later one counts: an old leader cut off since could name voters from before this node came back.
     */
    private RegionInfo leaderElsewhere(Region r) {
        long term = r.info().getTerm();
        for (String node : host.peers()) {
            if (node.equals(host.endpoint())) {
                continue;
            }
            try {
                RegionsResponse resp = peers.<RegionsResponse>call(node, RegionsRequest.getDefaultInstance(), ASK_TIMEOUT_MS)
                        .get(ASK_TIMEOUT_MS + 1000, TimeUnit.MILLISECONDS);
                for (RegionInfo info : resp.getRegionsList()) {
                    if (info.getId() == r.id() && info.getRole().equals("LEADER") && info.getTerm() >= term
                            && !info.getPeersList().isEmpty() && !info.getPeersList().contains(host.endpoint())) {
                        return info;
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } catch (Exception unreachable) {
                // that node is down too: ask the next
            }
        }
        return null;
    }
}
