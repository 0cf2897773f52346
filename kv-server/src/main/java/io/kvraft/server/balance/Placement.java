package io.kvraft.server.balance;

import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.RegionInfo;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Where replicas should go, decided from the cluster map and the nodes' latest reports; a pure function, so that it
 * can be tested without a cluster. The next move (the caller runs a few at once, of different regions), the first
 * of: a region short of a copy gets it back (a replica on a down node goes to the live UP node without one that holds
 * fewest; a voter whose node holds no replica of its region any more, a wiped disk, is rebuilt in place, or moved
 * when its node is draining or removed; a region with fewer replicas than the factor gets one more); a replica on a
 * node that is removed or draining goes to the live UP node without one that holds fewest; a replica goes from the UP
 * node that holds most to the one that holds fewest, until they differ by at most one. A region whose voters on live
 * nodes are not a majority is left alone: it has no leader to move a replica (see {@code recover-region}).
 */
public final class Placement {

    /** A replica to move. */
    public record Move(int regionId, String from, String to, String reason) {
    }

    /**
     * What the nodes reported: every region's latest view, which nodes are live or down, the voters whose node reports
     * no replica of their region for a while ({@code regionId + "@" + node}: a wiped disk at a member's address), and
     * the voters whose node reports no replica of their region now ({@code unheld}, a superset of {@code missing}: a
     * replica that has not applied its region's split yet is among them for a moment).
     */
    public record View(List<RegionInfo> regions, Set<String> live, Set<String> down, Set<String> missing,
                       Set<String> unheld) {
        public View(List<RegionInfo> regions, Set<String> live, Set<String> down) {
            this(regions, live, down, Set.of());
        }

        public View(List<RegionInfo> regions, Set<String> live, Set<String> down, Set<String> missing) {
            this(regions, live, down, missing, missing);
        }

        /** How many regions list {@code node} as a voter while its reports do not hold them. */
        public int unheldOn(String node) {
            String suffix = "@" + node;
            return (int) unheld.stream().filter(k -> k.endsWith(suffix)).count();
        }
    }

    /** The key of a voter whose replica is missing, in {@link View#missing}. */
    public static String missingKey(int regionId, String node) {
        return regionId + "@" + node;
    }

    private Placement() {
    }

    /** Replicas per node, over the given regions (nodes holding none are left out). */
    public static Map<String, Integer> replicaCounts(List<RegionInfo> regions) {
        Map<String, Integer> counts = new TreeMap<>();
        for (RegionInfo r : regions) {
            for (String p : r.getPeersList()) {
                counts.merge(p, 1, Integer::sum);
            }
        }
        return counts;
    }

    static NodeState stateOf(ClusterMap map, String endpoint) {
        for (NodeRecord n : map.getNodesList()) {
            if (n.getEndpoint().equals(endpoint)) {
                return n.getState();
            }
        }
        return null;
    }

    /**
     * The next move, or empty when every replica is where it should be (or no move can be made now).
     *
     * @param covered whether the view lists every region of the key space (balancing waits for it)
     * @param skip    regions not to move now (a move of theirs failed a moment ago)
     */
    public static Optional<Move> next(ClusterMap map, View view, boolean covered, Set<Integer> skip) {
        return next(map, view, covered, skip, List.of());
    }

    /**
     * As above, with moves under way: their regions are left alone, the counts of replicas per node take them as done
     * (so moves at once spread over the nodes), and no balancing move starts while any runs.
     */
    public static Optional<Move> next(ClusterMap map, View view, boolean covered, Set<Integer> skip,
                                      List<Move> running) {
        List<String> up = new ArrayList<>();
        for (NodeRecord n : map.getNodesList()) {
            if (n.getState() == NodeState.UP && view.live().contains(n.getEndpoint())) {
                up.add(n.getEndpoint());
            }
        }
        Map<String, Integer> counts = new HashMap<>(replicaCounts(view.regions()));
        up.forEach(n -> counts.putIfAbsent(n, 0));
        if (!running.isEmpty()) {
            Set<Integer> busy = new HashSet<>(skip);
            for (Move m : running) {
                busy.add(m.regionId());
                if (!m.to().equals(m.from())) {
                    counts.merge(m.to(), 1, Integer::sum);
                    if (!m.from().isEmpty()) {
                        counts.merge(m.from(), -1, Integer::sum);
                    }
                }
            }
            skip = busy;
            covered = false; // balancing moves one at a time, on counts no move is changing
        }
        // 1. a region short of a copy first, whatever else waits: a replica on a down node goes to a live UP node; a
        // voter whose node lost its replica (a wiped disk) is rebuilt in place, or goes to a live UP node when its node
        // is draining or removed; a region with fewer voters than the factor gets one more. A drain or a balance that
        // went first would leave such a region one failure from losing its majority for as long as it runs
        for (RegionInfo r : view.regions()) {
            if (skip.contains(r.getId()) || r.getMergingInto() != 0 || !quorate(r, view)) {
                continue;
            }
            Optional<String> to = fewest(up, counts, r);
            boolean downPeer = false;
            for (String v : r.getPeersList()) {
                if (view.down().contains(v)) {
                    downPeer = true;
                    if (to.isPresent()) {
                        return Optional.of(new Move(r.getId(), v, to.get(), "down"));
                    }
                }
            }
            if (downPeer) {
                continue; // no live node to take it; a rebuild would take out a voter while another is down
            }
            if (r.getPeersCount() < map.getFactor() && to.isPresent()) {
                return Optional.of(new Move(r.getId(), "", to.get(), "add")); // before a rebuild takes a voter out
            }
            for (String v : r.getPeersList()) {
                if (!view.missing().contains(missingKey(r.getId(), v)) || !view.live().contains(v)) {
                    continue;
                }
                NodeState s = stateOf(map, v);
                if (s == NodeState.UP) {
                    return Optional.of(new Move(r.getId(), v, v, "rebuild"));
                }
                if (to.isPresent()) {
                    return Optional.of(new Move(r.getId(), v, to.get(), s == NodeState.REMOVED ? "removed" : "drain"));
                }
            }
        }
        // 2. off nodes that are removed or draining
        for (RegionInfo r : view.regions()) {
            if (skip.contains(r.getId()) || r.getMergingInto() != 0 || !quorate(r, view)) {
                continue;
            }
            for (String v : r.getPeersList()) {
                NodeState s = stateOf(map, v);
                String reason = s == NodeState.REMOVED ? "removed" : s == NodeState.DRAINING ? "drain" : null;
                if (reason == null) {
                    continue;
                }
                Optional<String> to = fewest(up, counts, r);
                if (to.isPresent()) {
                    return Optional.of(new Move(r.getId(), v, to.get(), reason));
                }
            }
        }
        // 3. even out the UP nodes that are live, once no replica is on a node that is not (moving a replica while
        // another of its region is on a node that does not answer leaves the region fewer live replicas)
        if (!covered || up.size() < 2) {
            return Optional.empty();
        }
        for (String n : counts.keySet()) {
            if (!view.live().contains(n) && counts.get(n) > 0) {
                return Optional.empty();
            }
        }
        List<String> byCount = new ArrayList<>(up);
        byCount.sort(Comparator.comparing((String n) -> counts.get(n)).thenComparing(n -> n));
        String least = byCount.get(0);
        for (int i = byCount.size() - 1; i > 0; i--) {
            String most = byCount.get(i);
            if (counts.get(most) - counts.get(least) <= 1) {
                break;
            }
            for (RegionInfo r : view.regions()) {
                if (!skip.contains(r.getId()) && r.getMergingInto() == 0 && r.getPeersList().contains(most)
                        && !r.getPeersList().contains(least)) {
                    return Optional.of(new Move(r.getId(), most, least, "balance"));
                }
            }
        }
        return Optional.empty();
    }

    /**
     * Whether a majority of the region's voters is on live nodes. Else it has no leader to make a move (two of three
     * replicas lost: `recover-region`), and a move asked would only hold a slot until its leader search times out.
     */
    private static boolean quorate(RegionInfo r, View view) {
        long live = r.getPeersList().stream().filter(view.live()::contains).count();
        return live >= r.getPeersCount() / 2 + 1;
    }

    /** The live UP node without a replica of {@code r} that holds fewest (by name among equals), if any. */
    private static Optional<String> fewest(List<String> up, Map<String, Integer> counts, RegionInfo r) {
        return up.stream().filter(n -> !r.getPeersList().contains(n))
                .min(Comparator.comparing((String n) -> counts.get(n)).thenComparing(n -> n));
    }

    /** A change to the map's own group: {@code add} becomes a voter, {@code remove} (may be null) stops being one. */
    public record MetaChange(String add, String remove) {
    }

    /**
     * How the map's own voters should change, or empty: a voter on a node that is removed, draining or down gives its
     * place to a live UP node; with fewer than three voters, a live UP node joins them.
     */
    public static Optional<MetaChange> metaVoters(ClusterMap map, List<String> voters, Set<String> live,
                                                  Set<String> down) {
        Set<String> candidates = new LinkedHashSet<>();
        for (NodeRecord n : map.getNodesList()) {
            if (n.getState() == NodeState.UP && live.contains(n.getEndpoint()) && !voters.contains(n.getEndpoint())) {
                candidates.add(n.getEndpoint());
            }
        }
        if (candidates.isEmpty()) {
            return Optional.empty();
        }
        String add = candidates.iterator().next();
        for (String v : voters) {
            NodeState s = stateOf(map, v);
            if (s == NodeState.REMOVED || s == NodeState.DRAINING || down.contains(v)) {
                return Optional.of(new MetaChange(add, v));
            }
        }
        if (voters.size() < 3) {
            return Optional.of(new MetaChange(add, null));
        }
        return Optional.empty();
    }
}
