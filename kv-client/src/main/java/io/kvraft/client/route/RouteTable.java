package io.kvraft.client.route;

import io.kvraft.common.proto.KvProto.RegionInfo;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which region holds a key and which node leads it, as far as the client knows.
 * <pre>
 *   start keys:  ""        0x0aaa      0x1555     ...
 *   regions:     |   1     |     2     |    3     | ...
 *   lookup(k) = floorEntry(k) under unsigned byte order
 * </pre>
 * The table is replaced whole when refreshed; leaders are updated per region as hints arrive.
 */
public final class RouteTable {

    /** One region as routed: its range and epoch are fixed per table; its leader is a moving guess. */
    public static final class Route {
        private final RegionInfo info;
        private volatile String leader;
        private int nextPeer;

        Route(RegionInfo info) {
            this.info = info;
            this.leader = info.getLeader();
        }

        public int regionId() {
            return info.getId();
        }

        public long epoch() {
            return info.getEpoch();
        }

        /** The region's conf version as routed (0: unknown): a server whose is newer answers STALE_EPOCH. */
        public long confVer() {
            return info.getConfVer();
        }

        public RegionInfo info() {
            return info;
        }

        /** The believed leader, or a peer to ask when none is known. */
        public String target() {
            String l = leader;
            if (l != null && !l.isEmpty()) {
                return l;
            }
            return nextPeerGuess();
        }

        /** A replica in turn (leader included), for reads any replica may serve: spreads them over all peers. */
        public String anyReplica() {
            return nextPeerGuess();
        }

        /** The region's start key: inclusive, empty = -inf. */
        public byte[] startKey() {
            return info.getStartKey().toByteArray();
        }

        /** The region's end key: exclusive, empty = +inf. */
        public byte[] endKey() {
            return info.getEndKey().toByteArray();
        }

        public void leader(String hint) {
            this.leader = hint;
        }

        /** Forgets the leader; the next target is another peer in turn. */
        public void leaderUnknown(String failedTarget) {
            if (failedTarget == null || failedTarget.equals(leader)) {
                this.leader = "";
            }
        }

        /** Takes over where {@code old}'s rotation through the peers stands (its peers may differ; it wraps). */
        private void continueGuessesOf(Route old) {
            int at;
            synchronized (old) {
                at = old.nextPeer;
            }
            synchronized (this) {
                nextPeer = at;
            }
        }

        private synchronized String nextPeerGuess() {
            List<String> peers = info.getPeersList();
            if (peers.isEmpty()) {
                return "";
            }
            nextPeer = (nextPeer + 1) % peers.size();
            return peers.get(nextPeer);
        }
    }

    private volatile TreeMap<byte[], Route> byStart = new TreeMap<>(Arrays::compareUnsigned);
    private final Map<Integer, Route> byId = new ConcurrentHashMap<>();

    /**
     * Merges {@code regions} (one server's view) into the table by epoch: a region replaces the routes its range
     * overlaps unless one of them has a higher epoch (then the answer is older than what the table knows, from a
     * node that has not applied a split yet, and that region is ignored). A region's epoch grows with every split,
     * so of two overlapping regions the one with the higher epoch is the newer. Known leaders are kept where a
     * region did not change.
     */
    public synchronized void update(List<RegionInfo> regions) {
        TreeMap<byte[], Route> next = new TreeMap<>(byStart);
        for (RegionInfo r : regions) {
            List<byte[]> overlapped = overlapping(next, r);
            boolean older = false;
            for (byte[] start : overlapped) {
                older |= next.get(start).epoch() > r.getEpoch();
            }
            if (older) {
                continue;
            }
            Route old = byId.get(r.getId());
            Route route = new Route(r);
            if (old != null) {
                // a refresh goes on with the peer rotation: a new route starting it over would guess the same replica
                // after every refresh, and a caller that refreshes on each REGION_NOT_FOUND would ask only that one
                route.continueGuessesOf(old);
                if (r.getLeader().isEmpty() && old.epoch() == r.getEpoch()) {
                    route.leader(old.leader);
                }
            }
            for (byte[] start : overlapped) {
                next.remove(start);
            }
            next.put(r.getStartKey().toByteArray(), route);
        }
        Map<Integer, Route> ids = new java.util.HashMap<>();
        for (Route route : next.values()) {
            ids.put(route.regionId(), route);
        }
        byId.putAll(ids);
        byId.keySet().retainAll(ids.keySet());
        byStart = next;
    }

    /** The start keys of the routes in {@code table} whose ranges share a key with {@code r}'s. */
    private static List<byte[]> overlapping(TreeMap<byte[], Route> table, RegionInfo r) {
        byte[] start = r.getStartKey().toByteArray();
        byte[] end = r.getEndKey().toByteArray();
        byte[] from = table.floorKey(start);
        java.util.ArrayList<byte[]> found = new java.util.ArrayList<>();
        for (Route route : (from == null ? table : table.tailMap(from, true)).values()) {
            byte[] rs = route.startKey();
            if (end.length > 0 && Arrays.compareUnsigned(rs, end) >= 0) {
                break;
            }
            byte[] re = route.endKey();
            if (re.length == 0 || Arrays.compareUnsigned(re, start) > 0) {
                found.add(rs);
            }
        }
        return found;
    }

    public boolean isEmpty() {
        return byStart.isEmpty();
    }

    /** The region holding {@code key}, or null when the table has none (empty table or a gap). */
    public Route lookup(byte[] key) {
        Map.Entry<byte[], Route> e = byStart.floorEntry(key);
        if (e == null) {
            return null;
        }
        byte[] end = e.getValue().info.getEndKey().toByteArray();
        if (end.length > 0 && Arrays.compareUnsigned(key, end) >= 0) {
            return null;
        }
        return e.getValue();
    }

    /**
     * The region holding the keys just below {@code key} (an empty key is +inf here: the last region), for
     * walking the key space downwards; null when the table has none.
     */
    public Route lookupBefore(byte[] key) {
        Map.Entry<byte[], Route> e = key.length == 0 ? byStart.lastEntry() : byStart.lowerEntry(key);
        if (e == null) {
            return null;
        }
        byte[] end = e.getValue().info.getEndKey().toByteArray();
        if (end.length > 0 && (key.length == 0 || Arrays.compareUnsigned(key, end) > 0)) {
            return null; // a gap below key
        }
        return e.getValue();
    }

    public Route byId(int regionId) {
        return byId.get(regionId);
    }

    public List<Route> routes() {
        return List.copyOf(byStart.values());
    }
}
