package io.kvraft.server.raft;

import io.kvraft.server.NodeBeats;

import com.alipay.sofa.jraft.entity.NodeId;
import com.alipay.sofa.jraft.entity.PeerId;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * What node heartbeats ({@code raft.nodeHeartbeats}, sent by {@link NodeBeats}) have shown about each region replica
 * in this JVM, and the three decisions jraft's own machinery takes from it while a region is quiet:
 * <ul>
 *   <li>a follower's election timer is put off while its leader's node vouched for it, in its term, within an
 *       election timeout ({@link Replica#electionPutOffNanos});</li>
 *   <li>a leader's step-down check is put off while a quorum answered its node heartbeats within the lease
 *       ({@link Replica#stepDownPutOff});</li>
 *   <li>a pre-vote is refused while either holds ({@link Replica#leaderAlive}), as jraft refuses one while it hears
 *       its leader.</li>
 * </ul>
 * With those, jraft's own heartbeats of a region whose voters all answer and that has committed nothing for two
 * intervals can go {@link #QUIET_STRETCH} times less often ({@link Replica#heartbeatStretch}): one message per node pair
 * and interval then keeps every region the two share alive. Raft's safety does not depend on any of it (terms, votes and logs are
 * jraft's, unchanged); only when an election may start does. A replica is found by jraft's node id, the one string
 * jraft's timer names carry. Written by hand: jraft has no coalesced heartbeats (CockroachDB and TiKV have their own).
 */
public final class QuietRegions {

    /** A quiet region's jraft heartbeats go this many heartbeat intervals apart (a safety net: 30 s by default). */
    static final int QUIET_STRETCH = 30;

    private static final Map<String, Replica> REPLICAS = new ConcurrentHashMap<>();
    private static final ThreadLocal<String> STARTING = new ThreadLocal<>();

    private QuietRegions() {
    }

    /** jraft's node id string of a replica: the key of its timers' names and of this registry. */
    public static String key(String groupId, PeerId peer) {
        return new NodeId(groupId, peer).toString();
    }

    public static void register(Replica r) {
        REPLICAS.put(r.key, r);
    }

    public static void unregister(Replica r) {
        REPLICAS.remove(r.key, r);
    }

    public static Replica get(String key) {
        return key == null ? null : REPLICAS.get(key);
    }

    /** Runs {@code start} (a group's start) with the replica's key known to the timer factory jraft calls from it. */
    public static <T> T starting(String key, Supplier<T> start) {
        STARTING.set(key);
        try {
            return start.get();
        } finally {
            STARTING.remove();
        }
    }

    /** The key of the replica whose group this thread is starting, or null. */
    static String starting() {
        return STARTING.get();
    }

    /**
     * {@code nanos} from {@code now}, rounded up so that the deadline falls on a multiple of {@code grid} of
     * System.nanoTime(): the put-off timers of every region in the JVM then fall due together, one wake-up for all,
     * as the heartbeat bursts do for heartbeats (on an idle virtual CPU the wake-up is most of what a timer costs).
     */
    public static long onGrid(long now, long nanos, long grid) {
        if (grid <= 0) {
            return nanos;
        }
        long due = now + nanos;
        long rounded = Math.floorDiv(due, grid) * grid;
        return (rounded < due ? rounded + grid : rounded) - now;
    }

    /** What a replica's own state says: the region implements it from jraft's node and its state machine. */
    public interface View {
        boolean isLeader();

        /** The term the replica last led or followed in. */
        long term();

        /** The leader it follows, host:port, or "" when none. */
        String leaderHint();

        /**
         * Whether a replica move or a merge is under way here: a learner, or a replica the merge waits for, needs jraft's
         * heartbeats to learn the commit index (a ReadIndex's heartbeats reach the voters only).
         */
        boolean changing();
    }

    /** What is known of one replica. Fields are written by the node-heartbeat thread and read by jraft's timers. */
    public static final class Replica {

        /** Who vouched for this follower's leader, in which term, and when (System.nanoTime()). */
        record Proof(String leader, long term, long atNanos) {
        }

        public final String key;
        private final View region;
        private final LongSupplier clock;
        private final long electionNanos;
        private final long leaseNanos;
        private final long heartbeatNanos;
        private volatile Proof proof;
        /** Leader: per follower endpoint, when the latest node heartbeat it answered as our follower was sent. */
        private final Map<String, Long> acks = new ConcurrentHashMap<>();
        /** Leader: the voters (other than this node) of the last round. */
        private volatile List<String> others = List.of();
        /** Leader: the send time of the oldest ack a quorum needs; Long.MIN_VALUE when none. */
        private volatile long quorumSince = Long.MIN_VALUE;
        private volatile long committed = -1;
        private volatile long committedChangedAt;
        /** Sends the replica's waiting jraft heartbeats now (its group's scheduler, once the group started). */
        private volatile Runnable heartbeatsNow = () -> { };
        /** Leader: whether the last round found a jraft replicator for every voter and learner. */
        private volatile boolean replicated;
        /** Leader: the send time of the oldest ack among all voters; Long.MIN_VALUE when one has none. */
        private volatile long allSince = Long.MIN_VALUE;
        /** When a jraft heartbeat was last put {@link #QUIET_STRETCH} intervals off; Long.MIN_VALUE if never. */
        private volatile long stretchedAt = Long.MIN_VALUE;

        public Replica(String key, View region, long electionMs, long heartbeatMs, LongSupplier clock) {
            this.key = key;
            this.region = region;
            this.clock = clock;
            this.electionNanos = electionMs * 1_000_000L;
            this.leaseNanos = electionNanos * 9 / 10; // jraft's leaderLeaseTimeRatio default
            this.heartbeatNanos = heartbeatMs * 1_000_000L;
            this.committedChangedAt = clock.getAsLong();
        }

        /** A follower heard, from {@code leader}'s node, that it leads {@code term}. */
        public void vouched(String leader, long term, long now) {
            proof = new Proof(leader, term, now);
        }

        /**
         * How long a follower's election timer that fell due should wait more: until an election timeout after the
         * last node heartbeat from the leader it follows, in the term it follows it in, rounded up to this JVM's
         * heartbeat grid ({@link #onGrid}); 0 to let jraft decide now. The rounding is the random part here: every
         * node's grid has its own phase, so followers on different nodes do not campaign at once.
         */
        long electionPutOffNanos(long now) {
            Proof p = proof;
            if (p == null) {
                return 0;
            }
            long left = p.atNanos + electionNanos - now;
            if (left <= 0 || region.isLeader() || p.term != region.term() || !p.leader.equals(region.leaderHint())) {
                return 0;
            }
            return onGrid(now, left, heartbeatNanos);
        }

        /** Whether a quorum of the voters answered this leader's node heartbeats within the lease. */
        boolean quorumAlive(long now) {
            long since = quorumSince;
            return since != Long.MIN_VALUE && now - since <= leaseNanos && region.isLeader();
        }

        /**
         * Whether the step-down check that fell due should be put off: a quorum answered within the lease, and the
         * leader has a replicator for every peer (jraft starts one that failed to start only from that check).
         */
        boolean stepDownPutOff(long now) {
            return replicated && quorumAlive(now);
        }

        /** How long a step-down check scheduled {@code delay} ahead waits when put off: that, on the grid. */
        long stepDownPutOffNanos(long now, long delay) {
            return stepDownPutOff(now) ? onGrid(now, delay, heartbeatNanos) : 0;
        }

        /** Whether this replica knows, by node heartbeats, of a live leader: itself or the one it follows. */
        boolean leaderAlive(long now) {
            return quorumAlive(now) || electionPutOffNanos(now) > 0;
        }

        /** Leader: the followers that answered a node heartbeat sent within the lease. */
        public List<String> answeredWithin(long now) {
            List<String> out = new java.util.ArrayList<>();
            acks.forEach((peer, sent) -> {
                if (now - sent <= leaseNanos) {
                    out.add(peer);
                }
            });
            return out;
        }

        /**
         * By how much jraft's heartbeat interval is stretched now: {@link #QUIET_STRETCH} while every voter answers
         * node heartbeats, the region committed nothing for two intervals and no move or merge is under way, otherwise
         * 1 (a follower that is down keeps jraft's heartbeats coming, and jraft probes it with them once it is back).
         * Reads volatiles only: jraft asks with its replicator's lock held.
         */
        int heartbeatStretch() {
            long now = clock.getAsLong();
            if (quiet(now)) {
                stretchedAt = now;
                return QUIET_STRETCH;
            }
            return 1;
        }

        /**
         * Whether this replica leads a quiet region now: every voter answers node heartbeats within the lease, it has a
         * replicator for every peer, it committed nothing for two intervals, and no move or merge is under way. Its
         * jraft heartbeats then go {@link #QUIET_STRETCH} intervals apart. Reads volatiles only.
         */
        public boolean quiet(long now) {
            long all = allSince;
            return replicated && all != Long.MIN_VALUE && now - all <= leaseNanos && region.isLeader()
                    && now - committedChangedAt >= 2 * heartbeatNanos && !region.changing();
        }

        /**
         * A leader's round: its voters other than itself, whether it has a replicator for every peer, and its committed
         * index. Returns whether the index moved
         * since the last round while a stretched jraft heartbeat may still be pending: then nothing carries the new
         * index to the followers for a while unless the leader sends a heartbeat now.
         */
        public boolean leading(List<String> voters, boolean replicatorsForAll, long committedIndex, long now) {
            others = voters;
            replicated = replicatorsForAll;
            acks.keySet().retainAll(voters);
            recompute();
            if (committedIndex != committed) {
                boolean first = committed < 0;
                committed = committedIndex;
                committedChangedAt = now;
                long stretched = stretchedAt;
                return !first && stretched != Long.MIN_VALUE
                        && now - stretched < (QUIET_STRETCH + 1) * heartbeatNanos;
            }
            return false;
        }

        /** Set by the timer factory as jraft starts the group. */
        void heartbeatsNow(Runnable sender) {
            this.heartbeatsNow = sender;
        }

        /** Sends this replica's jraft heartbeats now (see {@link HeartbeatBursts#sendNow}). */
        public void sendHeartbeatsNow() {
            heartbeatsNow.run();
        }

        /** No longer leading: nothing vouches for a quorum. */
        public void notLeading() {
            acks.clear();
            replicated = false;
            allSince = Long.MIN_VALUE;
            quorumSince = Long.MIN_VALUE;
            committed = -1;
        }

        /** {@code follower} answered, as this leader's follower, the node heartbeat sent at {@code sentNanos}. */
        public void acked(String follower, long sentNanos) {
            acks.merge(follower, sentNanos, Math::max);
            recompute();
        }

        private void recompute() {
            List<String> voters = others;
            int needed = (voters.size() + 1) / 2 + 1 - 1; // a quorum of voters + this node, less this node
            if (needed == 0) {
                quorumSince = Long.MAX_VALUE / 2; // a single-replica region is its own quorum
                allSince = Long.MAX_VALUE / 2;
                return;
            }
            long[] times = new long[voters.size()];
            int n = 0;
            for (String v : voters) {
                Long t = acks.get(v);
                if (t != null) {
                    times[n++] = t;
                }
            }
            if (n < needed) {
                quorumSince = Long.MIN_VALUE;
                allSince = Long.MIN_VALUE;
                return;
            }
            Arrays.sort(times, 0, n);
            quorumSince = times[n - needed]; // the needed-th freshest
            allSince = n == voters.size() ? times[0] : Long.MIN_VALUE;
        }
    }
}
