package io.kvraft.server.region;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.PeerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
        Region anyLed = null;
        for (Region r : host.regions()) {
            String leader = r.leaderHint();
            if (leader.isEmpty()) {
                return; // an election is under way; balance once every region has settled
            }
            counts.merge(leader, 1, Integer::sum);
            if (r.isLeader() && anyLed == null) {
                anyLed = r;
            }
        }
        int mine = counts.getOrDefault(host.endpoint(), 0);
        if (anyLed == null) {
            return;
        }
        List<PeerId> alive = anyLed.node().listAlivePeers();
        String target = null;
        int least = Integer.MAX_VALUE;
        for (PeerId p : alive) {
            String ep = p.getEndpoint().toString();
            int c = counts.getOrDefault(ep, 0);
            if (!ep.equals(host.endpoint()) && c < least) {
                least = c;
                target = ep;
            }
        }
        if (target == null || mine <= least + 1) {
            return;
        }
        if (serving == null) {
            transferOne(target, mine, least);
            return;
        }
        if (!asking.compareAndSet(false, true)) {
            return; // the last round's question is still open
        }
        String to = target;
        int fewest = least;
        serving.apply(to).whenComplete((ok, e) -> {
            try {
                if (Boolean.TRUE.equals(ok)) {
                    transferOne(to, mine, fewest);
                } else {
                    LOG.debug("not balancing towards {}: it does not serve", to);
                }
            } finally {
                asking.set(false);
            }
        });
    }

    private void transferOne(String target, int mine, int least) {
        for (Region r : host.regions()) {
            String to = target;
            if (r.isLeader() && r.node().listAlivePeers().stream().anyMatch(p -> p.getEndpoint().toString().equals(to))) {
                Status st = r.node().transferLeadershipTo(PeerId.parsePeer(target));
                LOG.info("region {}: leader {} -> {} to balance ({} vs {} leaders): {}", r.id(), host.endpoint(), target,
                        mine, least, st.isOk() ? "started" : st.getErrorMsg());
                return;
            }
        }
    }
}
