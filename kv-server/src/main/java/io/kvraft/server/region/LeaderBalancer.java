package io.kvraft.server.region;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.PeerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * Spreads region leaders evenly over the nodes without a coordinator. Every node hosts a replica
 * of every region and so sees every region's leader; a node that leads more than one region above
 * the least-loaded live peer hands one region to that peer. One transfer per round per node keeps
 * it calm; after start and after a node rejoins the counts converge to 8/8/8 within a few rounds.
 */
public final class LeaderBalancer implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(LeaderBalancer.class);

    private final RegionHost host;
    /** Asks a peer whether it serves (is up and not shutting down) before it gets a leader; null: don't ask. */
    private final Function<String, CompletableFuture<Boolean>> serving;
    private final AtomicBoolean asking = new AtomicBoolean();
    /** Where the next round starts looking among the led regions; only the balancing thread touches it. */
    private int rotation;

    public LeaderBalancer(RegionHost host) {
        this(host, null);
    }

    /**
     * @param serving answers whether a peer serves right now. Without it a peer that is shutting down (it
     *                has just handed its leaders away) or was stopped a moment ago still counts as alive for
     *                jraft's lease, and a transfer to it stalls the region for an election timeout.
     */
    public LeaderBalancer(RegionHost host, Function<String, CompletableFuture<Boolean>> serving) {
        this.host = host;
        this.serving = serving;
    }

    @Override
    public void run() {
        try {
            balanceOnce();
        } catch (RuntimeException e) {
            LOG.warn("leader balancing round failed: {}", e.toString());
        }
    }

    void balanceOnce() {
        Map<String, Integer> counts = new HashMap<>();
        for (String p : host.peers()) {
            counts.put(p, 0);
        }
        List<Region> led = new ArrayList<>();
        for (Region r : host.regions()) {
            String leader = r.leaderHint();
            if (leader.isEmpty()) {
                return; // an election is under way; balance once every region has settled
            }
            counts.merge(leader, 1, Integer::sum);
            if (r.isLeader()) {
                led.add(r);
            }
        }
        int mine = counts.getOrDefault(host.endpoint(), 0);
        if (led.isEmpty()) {
            return;
        }
        // Each region answers for its own replicas: a peer whose replicator in one group is stuck (installing
        // a snapshot, reconnecting) may be alive in the others. Start at a different region every round so one
        // region that cannot hand over does not hold back the rest.
        int first = Math.floorMod(rotation++, led.size());
        for (int i = 0; i < led.size(); i++) {
            Region r = led.get((first + i) % led.size());
            if (r.leaderPinned()) {
                continue; // in a merge, which needs its leader where it is
            }
            String target = null;
            int least = Integer.MAX_VALUE;
            List<PeerId> alive;
            try {
                alive = r.node().listAlivePeers();
            } catch (IllegalStateException notLeaderAnyMore) {
                continue;
            }
            for (PeerId p : alive) {
                String ep = p.getEndpoint().toString();
                int c = counts.getOrDefault(ep, 0);
                if (!ep.equals(host.endpoint()) && c < least) {
                    least = c;
                    target = ep;
                }
            }
            if (target != null && mine > least + 1) {
                handOver(r, target, mine, least);
                return;
            }
        }
    }

    private void handOver(Region r, String target, int mine, int least) {
        if (serving == null) {
            transfer(r, target, mine, least);
            return;
        }
        if (!asking.compareAndSet(false, true)) {
            return; // the last round's question is still open
        }
        serving.apply(target).whenComplete((ok, e) -> {
            try {
                if (Boolean.TRUE.equals(ok)) {
                    transfer(r, target, mine, least);
                } else {
                    LOG.debug("not balancing towards {}: it does not serve", target);
                }
            } finally {
                asking.set(false);
            }
        });
    }

    private void transfer(Region r, String target, int mine, int least) {
        if (!r.isLeader() || r.leaderPinned()) {
            return; // lost the leadership (or a merge began) while the peer was asked; the next round looks again
        }
        Status st = r.node().transferLeadershipTo(PeerId.parsePeer(target));
        LOG.info("region {}: leader {} -> {} to balance ({} vs {} leaders): {}", r.id(), host.endpoint(), target,
                mine, least, st.isOk() ? "started" : st.getErrorMsg());
    }
}
