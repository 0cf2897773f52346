package io.kvraft.server.balance;

import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.Region;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.common.proto.KvProto.RegionInfo;
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
 * With a replica of each region on some nodes only, a node can lead two more than another while no region it leads
 * has a replica there (3, 2, 2, 2, 1 on five nodes): it then hands a region to a peer leading one fewer that leads a
 * region with a replica on the node two below, and that peer's own round hands one on ({@link #chainEnd}).
 * After a split or merge here (a region's epoch changed, or a region came or went) the balancer moves
 * nothing for a settle period: a region that has just elected its first leader, or its parent, is not
 * stalled by a transfer in the same second. A peer that did not take a leadership it was handed is no target for a
 * while ({@link TransferBackoff}).
 */
public final class LeaderBalancer implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(LeaderBalancer.class);

    private final RegionHost host;
    /**
     * Asks a peer how many regions it leads, or -1 when it does not serve (is down or shutting down), before it gets a
     * leader; null: don't ask (every node holds every region, and a local count is the peer's own).
     */
    private final Function<String, CompletableFuture<Integer>> leadersOf;
    /** A peer's regions as it lists them, or null when it does not serve; null: no hand-over by way of a peer. */
    private final Function<String, CompletableFuture<List<RegionInfo>>> regionsOf;
    private final AtomicBoolean asking = new AtomicBoolean();
    private final Settle settle;
    private final TransferBackoff backoff = new TransferBackoff(System::nanoTime);
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
        this(host, leadersOf, null, settleMs);
    }

    /**
     * @param regionsOf a peer's regions as it lists them now, null when it does not serve: for a hand-over by way of a
     *                  peer when no peer of a region led here leads two fewer
     */
    public LeaderBalancer(RegionHost host, Function<String, CompletableFuture<Integer>> leadersOf,
                          Function<String, CompletableFuture<List<RegionInfo>>> regionsOf, long settleMs) {
        this.host = host;
        this.leadersOf = leadersOf;
        this.regionsOf = leadersOf == null ? null : regionsOf;
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
            String failed = backoff.check(r.id(), r.isLeader(), r.transferring(), r.term(), r.leaderHint());
            if (failed != null) {
                LOG.warn("region {}: {} did not take the leadership within an election timeout; not balancing towards"
                        + " it for {} s", r.id(), failed, backoff.backoffMs(failed) / 1000);
            }
        }
        backoff.retain(epochs.keySet());
        if (settle.quiet(epochs)) {
            return;
        }
        // no targets: draining nodes (their replicas leave), peers that did not take a leadership lately, and those a
        // transfer is under way to
        java.util.Set<String> avoid = new java.util.HashSet<>(host.draining());
        avoid.addAll(backoff.avoided());
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
                if (!ep.equals(host.endpoint()) && c < least && !avoid.contains(ep)) {
                    least = c;
                    target = ep;
                }
            }
            if (target != null && mine > least + 1) {
                handOver(r, target, mine, least);
                return;
            }
        }
        if (regionsOf == null || counts.values().stream().noneMatch(c -> c <= mine - 2)) {
            return; // (with every region on every node the counts are exact, and this never asks)
        }
        // no peer of a region led here leads two fewer: one leading one fewer may lead a region whose replicas include a
        // node that does
        for (int i = 0; i < led.size(); i++) {
            Region r = led.get((first + i) % led.size());
            if (r.leaderPinned()) {
                continue;
            }
            for (String ep : r.alivePeers()) {
                if (!ep.equals(host.endpoint()) && counts.getOrDefault(ep, 0) == mine - 1 && !avoid.contains(ep)) {
                    handOverByWayOf(r, ep, mine, counts, avoid);
                    return;
                }
            }
        }
    }

    /**
     * Hands {@code r} to {@code via} (thought to lead one fewer than this node's {@code mine}) once {@code via}'s own
     * list shows it leads exactly one fewer and leads a region with a replica on a node that, asked itself, leads at
     * most {@code mine - 2}: that node's count then rises by one in {@code via}'s next round, and this node's falls.
     */
    private void handOverByWayOf(Region r, String via, int mine, Map<String, Integer> counts, java.util.Set<String> avoid) {
        if (!asking.compareAndSet(false, true)) {
            return;
        }
        Map<String, Integer> known = Map.copyOf(counts);
        regionsOf.apply(via).thenCompose(regions -> {
            if (regions == null) {
                return CompletableFuture.<ChainEnd>completedFuture(null);
            }
            int viaLeads = (int) regions.stream().filter(x -> x.getRole().equals("LEADER")).count();
            answered.put(via, new long[]{viaLeads, System.nanoTime()});
            String end = viaLeads == mine - 1 ? chainEnd(host.endpoint(), via, mine, regions, known, avoid)
                    : null;
            if (end == null) {
                return CompletableFuture.<ChainEnd>completedFuture(null);
            }
            return leadersOf.apply(end).thenApply(endLeads -> {
                if (endLeads >= 0) {
                    answered.put(end, new long[]{endLeads, System.nanoTime()});
                }
                return endLeads >= 0 && endLeads <= mine - 2 ? new ChainEnd(end, endLeads) : null;
            });
        }).whenComplete((end, e) -> {
            try {
                if (end != null && r.isLeader()) {
                    LOG.info("region {}: handed on by way of {}: {} leads {} and holds no region {} leads", r.id(), via,
                            end.node(), end.leads(), host.endpoint());
                    transfer(r, via, mine, mine - 1);
                }
            } finally {
                asking.set(false);
            }
        });
    }

    /** The node a hand-over by way of a peer serves, and how many regions it said it leads. */
    private record ChainEnd(String node, int leads) {
    }

    /**
     * The node, other than {@code self} and {@code via}, with the fewest leaders among the replicas of the regions
     * {@code via} leads, when it leads at most {@code mine - 2} as far as {@code via}'s list and {@code counts} show
     * (each a lower bound: a node may lead regions neither holds); null when there is none. Nodes in {@code avoid} are
     * left out: draining ones (their replicas leave) and those that lately did not take a leadership.
     */
    static String chainEnd(String self, String via, int mine, List<RegionInfo> viaRegions, Map<String, Integer> counts,
                           java.util.Set<String> avoid) {
        Map<String, Integer> seen = new HashMap<>();
        for (RegionInfo x : viaRegions) {
            if (!x.getLeader().isEmpty()) {
                seen.merge(x.getLeader(), 1, Integer::sum);
            }
        }
        String best = null;
        int least = mine - 1;
        for (RegionInfo x : viaRegions) {
            if (!x.getRole().equals("LEADER")) {
                continue;
            }
            for (String p : x.getPeersList()) {
                if (p.equals(self) || p.equals(via) || avoid.contains(p)) {
                    continue;
                }
                int c = Math.max(seen.getOrDefault(p, 0), counts.getOrDefault(p, 0));
                if (c < least || c == least && best != null && p.compareTo(best) < 0) {
                    least = c;
                    best = p;
                }
            }
        }
        return best;
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
        long term = r.term();
        Status st = r.node().transferLeadershipTo(PeerId.parsePeer(target));
        if (st.isOk()) {
            backoff.started(r.id(), target, term);
        }
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
