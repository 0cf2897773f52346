package io.kvraft.server;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.core.State;
import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.server.region.Region;
import io.kvraft.server.host.RegionHost;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.locks.LockSupport;

/**
 * Hands every region this node leads to a live peer (jraft's leadership transfer), spreading them over the peers that
 * lead least, and waits until this node leads none and has heard from the new leader of each region it handed over.
 * Used by a graceful shutdown, so clients see a quick leader change instead of an election timeout.
 */
final class LeaderHandoff {

    private static final Logger LOG = LoggerFactory.getLogger(LeaderHandoff.class);
    private static final long POLL_NANOS = 20_000_000L;

    private LeaderHandoff() {
    }

    /** The outcome: regions handed over (to whom), and those still led here at the deadline. */
    record Result(Map<String, Integer> handedTo, int stillLed) {
    }

    /**
     * @param servingPeers asks which peers may take leaders (up and not shutting down themselves); asked
     *                     again every half second, and when none is left (the whole cluster is being
     *                     stopped) the hand-off gives up at once
     */
    static Result run(RegionHost host, java.util.function.Supplier<java.util.Set<String>> servingPeers,
                      long deadlineNanos) {
        java.util.Set<String> serving = servingPeers.get();
        long askedAt = System.nanoTime();
        String self = host.endpoint();
        Map<String, Integer> load = new HashMap<>(); // leaders per peer, as this node sees them
        for (Region r : host.regions()) {
            String leader = r.leaderHint();
            if (!leader.isEmpty() && !leader.equals(self)) {
                load.merge(leader, 1, Integer::sum);
            }
        }
        Map<String, Integer> handedTo = new TreeMap<>();
        Map<Integer, Long> asked = new HashMap<>(); // region -> when its transfer was last started
        while (true) {
            List<Region> mine = new ArrayList<>();
            for (Region r : host.regions()) {
                if (ledHere(r.node()) || asked.containsKey(r.id()) && !ledElsewhere(r, self)) {
                    mine.add(r);
                }
            }
            long now = System.nanoTime();
            if (now - askedAt > 25 * POLL_NANOS) {
                serving = servingPeers.get();
                askedAt = now;
            }
            if (mine.isEmpty() || serving.isEmpty() || now - deadlineNanos >= 0) {
                return new Result(handedTo, mine.size());
            }
            for (Region r : mine) {
                Node node = r.node();
                if (node.getNodeState() != State.STATE_LEADER) {
                    continue; // a transfer is under way
                }
                Long last = asked.get(r.id());
                if (last != null && now - last < 10 * POLL_NANOS) {
                    continue; // it fell back to leader a moment ago; give the target a little time
                }
                String target = leastLoaded(r, serving, load);
                if (target == null) {
                    continue; // no live peer to take it: it is stopped with the node, and the others elect
                }
                Status st = node.transferLeadershipTo(PeerId.parsePeer(target));
                asked.put(r.id(), now);
                if (st.isOk()) {
                    load.merge(target, 1, Integer::sum);
                    handedTo.merge(target, 1, Integer::sum);
                    LOG.debug("region {}: handing leadership to {}", r.id(), target);
                } else {
                    LOG.debug("region {}: transfer to {} refused: {}", r.id(), target, st.getErrorMsg());
                }
            }
            LockSupport.parkNanos(POLL_NANOS); // jraft has no callback for a finished transfer: poll
        }
    }

    /**
     * Whether this node has heard from another leader of the region. A region handed over is done only then: this node
     * steps down as soon as the target answers its TimeoutNow, before the target has won its election, and were it to
     * stop right away its vote could be lost with it, leaving the region to wait an election timeout.
     */
    private static boolean ledElsewhere(Region r, String self) {
        String leader = r.leaderHint();
        return !leader.isEmpty() && !leader.equals(self);
    }

    private static boolean ledHere(Node node) {
        return node != null && mayLeadHere(node.getNodeState());
    }

    /**
     * Whether a region in state {@code s} on the stopping node leads it or may soon: a leader, a leader handing
     * over, or a candidate. A peer's leader balancer may have sent this node a leadership transfer just before
     * the shutdown began (jraft's TimeoutNow makes it a candidate at once, and then leader); were the hand-off
     * to stop waiting while it is a candidate, the node would stop as that region's new leader and the region
     * would wait an election timeout for another.
     */
    static boolean mayLeadHere(State s) {
        return s == State.STATE_LEADER || s == State.STATE_TRANSFERRING || s == State.STATE_CANDIDATE;
    }

    private static String leastLoaded(Region r, java.util.Set<String> serving, Map<String, Integer> load) {
        String best = null;
        int least = Integer.MAX_VALUE;
        for (String ep : r.alivePeers()) {
            int n = load.getOrDefault(ep, 0);
            if (serving.contains(ep) && n < least) {
                least = n;
                best = ep;
            }
        }
        return best;
    }
}
