package io.kvraft.server.coord;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.common.proto.KvProto.CoordResult;
import io.kvraft.common.proto.KvProto.LockInfo;

/**
 * The lock ops on a key's system record, as pure functions of the record, the op and the entry's time,
 * so every replica decides alike.
 *
 * <p>Time. An entry carries its leader's lease clock (a monotonic clock, in ms) read when it was proposed,
 * and when that leader's term began on the same clock. Two readings of one leader's clock differ by the
 * real time between them (up to the clock's rate error), but readings of different leaders are not
 * comparable. So a lock records the term whose clock its expiry is on; the first op on it in a later term
 * gives it a full lease from that term's start, as etcd renews every lease on a leader change. A holding
 * can therefore only last longer than its lease, never shorter: a committed entry of an earlier term was
 * proposed before the later term began.
 */
public final class Locks {

    /** The longest lease a lock may have: one day. */
    public static final long MAX_LEASE_MS = 86_400_000L;
    /** The longest holder id, in bytes. */
    public static final int MAX_HOLDER_BYTES = 128;

    /**
     * An entry's time: its region and Raft term, its leader's lease clock, and when that term began on that clock.
     * A region split off another has terms of its own that may repeat its parent's numbers on other nodes' clocks,
     * so a clock is one region's term, never a term number alone.
     */
    public record Clock(int region, long term, long nowMs, long termStartMs) {
        public Clock {
            termStartMs = Math.min(termStartMs, nowMs);
        }

        /** A clock of region 0 (tests). */
        public Clock(long term, long nowMs, long termStartMs) {
            this(0, term, nowMs, termStartMs);
        }
    }

    /** Whether the lock's expiry is on {@code clock}'s clock: the same region's same term. */
    private static boolean sameClock(CoordRecord r, Clock clock) {
        return r.getLockTerm() == clock.term() && r.getLockRegion() == clock.region();
    }

    private Locks() {
    }

    /**
     * Takes the lock for {@code holder}: when it is free or its lease ran out, with the key's next fencing token
     * and a count of 1; when {@code holder} holds it already, once more (count + 1, the lease extended to at least
     * leaseMs from now, the token kept). Refused while another holder's lease runs; the answer then describes
     * that holding.
     */
    public static Sequences.Outcome acquire(CoordRecord record, ByteString holder, long leaseMs, Clock clock) {
        CoordRecord current = inTerm(record, clock);
        long now = now(current, clock);
        if (held(current, now) && !current.getLockHolder().equals(holder)) {
            return new Sequences.Outcome(current, false, result(current, now));
        }
        CoordRecord.Builder next = current.toBuilder().setLockTerm(clock.term()).setLockRegion(clock.region()).setLockUpdatedMs(now);
        if (held(current, now)) {
            next.setLockCount(current.getLockCount() + 1)
                    .setLockLeaseMs(leaseMs)
                    .setLockExpiresMs(Math.max(current.getLockExpiresMs(), now + leaseMs));
        } else {
            // above a restored token too (set while the last holding ran)
            next.setLockHolder(holder).setLockToken(Math.max(current.getLockToken(), current.getLockTokenFloor()) + 1)
                    .clearLockTokenFloor().setLockCount(1).setLockLeaseMs(leaseMs).setLockExpiresMs(now + leaseMs);
        }
        CoordRecord written = next.build();
        return new Sequences.Outcome(written, true, result(written, now));
    }

    /** The lease runs {@code leaseMs} from now again, when {@code holder} still holds the lock under {@code token}. */
    public static Sequences.Outcome renew(CoordRecord record, ByteString holder, long token, long leaseMs, Clock clock) {
        CoordRecord current = inTerm(record, clock);
        long now = now(current, clock);
        if (!heldBy(current, holder, token, now)) {
            return new Sequences.Outcome(current, false, result(current, now));
        }
        CoordRecord written = current.toBuilder().setLockLeaseMs(leaseMs).setLockExpiresMs(now + leaseMs)
                .setLockTerm(clock.term()).setLockRegion(clock.region()).setLockUpdatedMs(now).build();
        return new Sequences.Outcome(written, true, result(written, now));
    }

    /** One acquisition fewer, when {@code holder} holds the lock under {@code token}; the lock is free at 0. */
    public static Sequences.Outcome release(CoordRecord record, ByteString holder, long token, Clock clock) {
        CoordRecord current = inTerm(record, clock);
        long now = now(current, clock);
        if (!heldBy(current, holder, token, now)) {
            return new Sequences.Outcome(current, false, result(current, now));
        }
        CoordRecord.Builder next = current.toBuilder().setLockTerm(clock.term()).setLockRegion(clock.region()).setLockUpdatedMs(now);
        if (current.getLockCount() > 1) {
            next.setLockCount(current.getLockCount() - 1);
        } else {
            // the token stays (raised to a token restored meanwhile): the next holder's is one more
            next.clearLockHolder().clearLockCount().clearLockLeaseMs().clearLockExpiresMs()
                    .setLockToken(Math.max(current.getLockToken(), current.getLockTokenFloor())).clearLockTokenFloor();
        }
        CoordRecord written = next.build();
        return new Sequences.Outcome(written, true, result(written, now));
    }

    /**
     * The key's fencing tokens carry on above {@code token} (a backup's, by RESTORE_COORD): a free lock's last
     * token becomes it when that is larger. A held lock is left alone (its holder renews and releases it under its
     * own token), and the next holding's token is above {@code token} too. Never moves a token back.
     */
    public static CoordRecord raiseToken(CoordRecord record, long token) {
        CoordRecord current = record == null ? CoordRecord.getDefaultInstance() : record;
        if (token <= Math.max(current.getLockToken(), current.getLockTokenFloor())) {
            return current;
        }
        return current.getLockHolder().isEmpty()
                ? current.toBuilder().setLockToken(token).clearLockTokenFloor().build()
                : current.toBuilder().setLockTokenFloor(token).build();
    }

    /** The lock of {@code key} as a read on the leader of {@code clock}'s term sees it; null when never locked. */
    public static LockInfo info(ByteString key, CoordRecord record, Clock clock) {
        if (record.getLockToken() == 0) {
            return null;
        }
        CoordRecord current = inTerm(record, clock);
        return result(current, now(current, clock)).getLock().toBuilder().setKey(key).build();
    }

    /** A held lock from an earlier term gets a full lease from the start of this one; its expiry moves onto this term's clock. */
    private static CoordRecord inTerm(CoordRecord record, Clock clock) {
        CoordRecord current = record == null ? CoordRecord.getDefaultInstance() : record;
        if (current.getLockHolder().isEmpty() || sameClock(current, clock)) {
            return current;
        }
        return current.toBuilder().setLockTerm(clock.term()).setLockRegion(clock.region()).setLockUpdatedMs(clock.termStartMs())
                .setLockExpiresMs(clock.termStartMs() + current.getLockLeaseMs()).build();
    }

    /** Now on the lock's clock: never before its last write (proposals may be stamped a little out of order). */
    private static long now(CoordRecord current, Clock clock) {
        return sameClock(current, clock) ? Math.max(clock.nowMs(), current.getLockUpdatedMs()) : clock.nowMs();
    }

    private static boolean held(CoordRecord r, long now) {
        return !r.getLockHolder().isEmpty() && now < r.getLockExpiresMs();
    }

    private static boolean heldBy(CoordRecord r, ByteString holder, long token, long now) {
        return held(r, now) && r.getLockHolder().equals(holder) && r.getLockToken() == token;
    }

    private static CoordResult result(CoordRecord r, long now) {
        LockInfo.Builder lock = LockInfo.newBuilder().setToken(r.getLockToken());
        if (held(r, now)) {
            lock.setHolder(r.getLockHolder()).setCount(r.getLockCount()).setLeaseMs(r.getLockLeaseMs())
                    .setLeaseLeftMs(r.getLockExpiresMs() - now);
        }
        return CoordResult.newBuilder().setLock(lock).build();
    }
}
