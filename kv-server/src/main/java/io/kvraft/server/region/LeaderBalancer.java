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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * Spreads region leaders evenly over the nodes without a coordinator. A node picks, among the live replicas of a
 * region it leads, the peer that leads fewest of the regions they share, asks that peer how many regions it leads in
 * all, and hands the region over when it leads more than one above that. (With a replica of every region on every
 * node the two counts are the same; with fewer, a count from shared regions alone would make two nodes hand a region
 * back and forth.) One transfer per round per node keeps it calm; after start and after a node rejoins the counts
 * converge to 8/8/8 on 3 nodes within a few rounds.
 * After a split or merge here (a region's epoch changed, or a region came or went) the balancer moves
 * nothing for a settle period: a region that has just elected its first leader, or its parent, is not
 * stalled by a transfer in the same second.
 */
public final class LeaderBalancer implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(LeaderBalancer.class);

    private final RegionHost host;
    /**
     * Asks a peer how many regions it leads, or -1 when it does not serve (is down or shutting down), before it gets a
     * leader; null: don't ask (every node holds every region, and a local count is the peer's own).
     */
    private final Function<String, CompletableFuture<Integer>> leadersOf;
    private final AtomicBoolean asking = new AtomicBoolean();
    private final Settle settle;
    /** Where the next round starts looking among the led regions; only the balancing thread touches it. */
    private int rotation;
    /**
     * Peers' own leader counts as they last answered, with when: a peer whose count from shared regions looks low but
     * who leads more in all is not picked again in the next rounds (another replica may be).
     */
    private final Map<String, long[]> answered = new java.util.concurrent.ConcurrentHashMap<>();
    private static final long ANSWER_FRESH_NANOS = TimeUnit.SECONDS.toNanos(5);

    public LeaderBalancer(RegionHost host) {
        this(host, null, 0);
    }

    /**
     * @param leadersOf answers how many regions a peer leads, -1 when it does not serve right now. Without the
     *                  question a peer that is shutting down (it has just handed its leaders away) or was stopped a
     *                  moment ago still counts as alive for jraft's lease, and a transfer to it stalls the region for
     *                  an election timeout.
     * @param settleMs how long to move nothing after a region's epoch changed here
     */
    public LeaderBalancer(RegionHost host, Function<String, CompletableFuture<Integer>> leadersOf, long settleMs) {
        this.host = host;
        this.leadersOf = leadersOf;
        this.settle = new Settle(settleMs, System::nanoTime);
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
        Map<Integer, Long> epochs = new HashMap<>();
        for (Region r : host.regions()) {
            epochs.put(r.id(), r.epoch());
        }
        if (settle.quiet(epochs)) {
            return;
        }
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
        long now = System.nanoTime();
        answered.forEach((peer, a) -> {
            if (now - a[1] < ANSWER_FRESH_NANOS) {
                counts.merge(peer, (int) a[0], Math::max); // a count from shared regions is at most the peer's own
            }
        });
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
            for (String ep : r.alivePeers()) { // empty if it no longer leads
                int c = counts.getOrDefault(ep, 0);
                if (!ep.equals(host.endpoint()) && c < least && !host.draining().contains(ep)) { // its replicas leave
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
        if (leadersOf == null) {
            transfer(r, target, mine, least);
            return;
        }
        if (!asking.compareAndSet(false, true)) {
            return; // the last round's question is still open
        }
        leadersOf.apply(target).whenComplete((leads, e) -> {
            try {
                if (leads != null && leads >= 0) {
                    answered.put(target, new long[]{leads, System.nanoTime()});
                }
                if (leads == null || leads < 0) {
                    LOG.debug("not balancing towards {}: it does not serve", target);
                } else if (mine > leads + 1) {
                    transfer(r, target, mine, leads);
                } else {
                    LOG.debug("not balancing towards {}: it leads {} regions in all, this node {}", target, leads, mine);
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

    /**
     * Remembers the region epochs of the last round and says whether the last change is younger than the
     * settle period. The first round only learns the epochs: a node that has just started balances at once.
     */
    static final class Settle {
        private final long settleNanos;
        private final LongSupplier nanoClock;
        private Map<Integer, Long> last;
        private long changedAt;

        Settle(long settleMs, LongSupplier nanoClock) {
            this.settleNanos = TimeUnit.MILLISECONDS.toNanos(settleMs);
            this.nanoClock = nanoClock;
        }

        /** @param epochs every region hosted here right now, by id */
        boolean quiet(Map<Integer, Long> epochs) {
            long now = nanoClock.getAsLong();
            if (last == null) {
                last = Map.copyOf(epochs);
                changedAt = now - settleNanos;
                return false;
            }
            if (!last.equals(epochs)) {
                last = Map.copyOf(epochs);
                changedAt = now;
            }
            return now - changedAt < settleNanos;
        }
    }
}
