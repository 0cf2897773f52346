package io.kvraft.server.balance;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The leadership transfers the balancer started, and the peers that did not take one: a peer that answers RPCs but
 * cannot lead (out of memory, its group in error, its disk stuck) would otherwise be picked again every round, and
 * each try holds the region's writes for an election timeout (jraft refuses proposals while it transfers), so the
 * region barely serves. A transfer failed when the leader is back in the same term and no longer transferring; the
 * peer is then left out of balancing for 10 s, twice as long after each further failure up to a minute, and forgotten
 * once it takes a leadership. (A peer that is only catching up, e.g. installing a snapshot after a restart, fails
 * transfers too, for a while: a longer period kept leaders unbalanced for minutes after it had caught up.) Failures of
 * transfers to one peer that end within its period are one failure; no second transfer goes to a peer while one is
 * under way to it. Thread-safe: transfers start on the balancing thread or where a peer's answer arrives.
 */
final class TransferBackoff {

    static final long FIRST_MS = 10_000;
    static final long MAX_MS = 60_000;

    private final LongSupplier nanoClock;
    /** Transfers started and not yet seen to end, by region id. */
    private final Map<Integer, Started> started = new HashMap<>();
    /** Peers that failed to take a leadership: until when they are left out, and for how long they were last. */
    private final Map<String, long[]> avoided = new HashMap<>();

    private record Started(String target, long term) {
    }

    TransferBackoff(LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
    }

    /** This node asked {@code region}'s group, which it leads in {@code term}, to hand its leadership to {@code target}. */
    synchronized void started(int region, String target, long term) {
        started.put(region, new Started(target, term));
    }

    /**
     * What the region's state says of a transfer started here: the peer that did not take the leadership when it
     * failed (the peer is left out from now on), or null (none started, still under way, or it ended otherwise).
     *
     * @param leader whether this node leads the region (false while it transfers)
     * @param leaderHint the region's leader as this node knows it, "" when unknown
     */
    synchronized String check(int region, boolean leader, boolean transferring, long term, String leaderHint) {
        Started s = started.get(region);
        if (s == null || transferring) {
            return null;
        }
        if (!leader && leaderHint.isEmpty()) {
            return null; // an election under way: who wins is not known yet
        }
        started.remove(region);
        if (leader && term == s.term()) {
            long now = nanoClock.getAsLong();
            long[] last = avoided.get(s.target());
            if (last != null && last[0] - now > 0) {
                return s.target(); // one more of the same spell (transfers of several regions at once): no longer
            }
            long ms = last == null ? FIRST_MS : Math.min(last[1] * 2, MAX_MS);
            avoided.put(s.target(), new long[]{now + TimeUnit.MILLISECONDS.toNanos(ms), ms});
            return s.target();
        }
        if (leaderHint.equals(s.target())) {
            avoided.remove(s.target()); // it leads now: a later failure starts from the first period again
        }
        return null;
    }

    /** How long {@code peer} is left out after its last failure, in ms; 0 if it is not. */
    synchronized long backoffMs(String peer) {
        long[] a = avoided.get(peer);
        return a == null || a[0] - nanoClock.getAsLong() <= 0 ? 0 : a[1];
    }

    /** The peers left out of balancing right now: those that failed lately, and those a transfer is under way to. */
    synchronized Set<String> avoided() {
        long now = nanoClock.getAsLong();
        Set<String> out = new HashSet<>();
        started.values().forEach(s -> out.add(s.target()));
        avoided.forEach((peer, a) -> {
            if (a[0] - now > 0) {
                out.add(peer);
            }
        });
        return out;
    }

    /** Forgets transfers of regions no longer hosted here. */
    synchronized void retain(Set<Integer> regions) {
        started.keySet().retainAll(regions);
    }
}
