package io.kvraft.server.coord;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.common.proto.KvProto.LockInfo;
import io.kvraft.common.proto.KvProto.WriteBatch;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The lock ops with the entry's time given by hand: every "now" here is an injected clock reading. */
class LocksTest {

    private static final ByteString A = ByteString.copyFromUtf8("holder-a");
    private static final ByteString B = ByteString.copyFromUtf8("holder-b");
    private static final long LEASE = 1000;

    /** An entry of term 1 proposed at {@code nowMs}; the term began at 0. */
    private static Locks.Clock at(long nowMs) {
        return new Locks.Clock(1, nowMs, 0);
    }

    private static CoordRecord heldByA() {
        return Locks.acquire(null, A, LEASE, at(100)).record(); // token 1, expires at 1100
    }

    @Test
    void when_aFreeLockIsAcquired_then_itGetsTheFirstTokenACountOfOneAndTheFullLease() {
        Sequences.Outcome o = Locks.acquire(null, A, LEASE, at(100));
        assertThat(o.succeeded()).isTrue();
        LockInfo lock = o.result().getLock();
        assertThat(lock.getHolder()).isEqualTo(A);
        assertThat(lock.getToken()).isEqualTo(1);
        assertThat(lock.getCount()).isEqualTo(1);
        assertThat(lock.getLeaseLeftMs()).isEqualTo(LEASE);
        assertThat(o.record().getLockExpiresMs()).isEqualTo(1100);
    }

    @Test
    void when_anotherHolderAsksWhileTheLeaseRuns_then_itIsRefusedAndToldWhoHoldsItAndForHowLong() {
        Sequences.Outcome o = Locks.acquire(heldByA(), B, LEASE, at(1099));
        assertThat(o.succeeded()).isFalse();
        assertThat(o.result().getLock().getHolder()).isEqualTo(A);
        assertThat(o.result().getLock().getLeaseLeftMs()).isEqualTo(1);
        assertThat(o.record()).isEqualTo(heldByA());
    }

    @Test
    void when_theLeaseRunsOut_then_anotherHolderGetsTheLockWithAGreaterToken() {
        Sequences.Outcome o = Locks.acquire(heldByA(), B, LEASE, at(1100));
        assertThat(o.succeeded()).isTrue();
        assertThat(o.result().getLock().getHolder()).isEqualTo(B);
        assertThat(o.result().getLock().getToken()).isEqualTo(2);
        assertThat(Locks.renew(o.record(), A, 1, LEASE, at(1101)).succeeded()).as("the old holder's renewal").isFalse();
    }

    @Test
    void when_theHolderAcquiresAgain_then_itIsCountedExtendedAndKeepsItsToken() {
        Sequences.Outcome again = Locks.acquire(heldByA(), A, LEASE, at(600));
        assertThat(again.succeeded()).isTrue();
        assertThat(again.result().getLock().getToken()).isEqualTo(1);
        assertThat(again.result().getLock().getCount()).isEqualTo(2);
        assertThat(again.record().getLockExpiresMs()).isEqualTo(1600);
        // a shorter lease on re-entry never shortens the holding
        assertThat(Locks.acquire(again.record(), A, 10, at(700)).record().getLockExpiresMs()).isEqualTo(1600);

        Sequences.Outcome once = Locks.release(again.record(), A, 1, at(800));
        assertThat(once.succeeded()).isTrue();
        assertThat(once.result().getLock().getCount()).isEqualTo(1);
        assertThat(Locks.acquire(once.record(), B, LEASE, at(900)).succeeded()).as("still held after one release").isFalse();

        Sequences.Outcome twice = Locks.release(once.record(), A, 1, at(900));
        assertThat(twice.succeeded()).isTrue();
        assertThat(twice.result().getLock().getHolder()).isEmpty();
        assertThat(twice.result().getLock().getToken()).as("a free lock keeps its last token").isEqualTo(1);
        assertThat(Locks.acquire(twice.record(), B, LEASE, at(901)).result().getLock().getToken()).isEqualTo(2);
    }

    @Test
    void when_aRenewalArrivesJustBeforeOrAtTheExpiry_then_beforeExtendsAndAtIsRefused() {
        Sequences.Outcome before = Locks.renew(heldByA(), A, 1, LEASE, at(1099));
        assertThat(before.succeeded()).isTrue();
        assertThat(before.record().getLockExpiresMs()).isEqualTo(2099);

        Sequences.Outcome at = Locks.renew(heldByA(), A, 1, LEASE, at(1100));
        assertThat(at.succeeded()).isFalse();
        assertThat(at.result().getLock().getHolder()).as("nobody holds it").isEmpty();
        assertThat(Locks.release(heldByA(), A, 1, at(1100)).succeeded()).as("nor may it be released").isFalse();
    }

    @Test
    void when_aNonHolderOrAStaleTokenReleasesOrRenews_then_itIsRefusedAndNothingChanges() {
        CoordRecord held = heldByA();
        assertThat(Locks.release(held, B, 1, at(200)).succeeded()).isFalse();
        assertThat(Locks.release(held, B, 1, at(200)).record()).isEqualTo(held);
        assertThat(Locks.release(held, A, 7, at(200)).succeeded()).isFalse();
        assertThat(Locks.renew(held, B, 1, LEASE, at(200)).succeeded()).isFalse();
        assertThat(Locks.release(null, A, 1, at(200)).succeeded()).as("a lock never taken").isFalse();
    }

    @Test
    void when_theTermChanges_then_aHeldLockGetsAFullLeaseFromTheNewTermsStart() {
        CoordRecord held = heldByA(); // term 1: expires at 1100 on that leader's clock
        // the new leader's clock reads far lower; its term began at 40
        Locks.Clock term2 = new Locks.Clock(2, 500, 40);
        Sequences.Outcome refused = Locks.acquire(held, B, LEASE, term2);
        assertThat(refused.succeeded()).isFalse();
        assertThat(refused.result().getLock().getLeaseLeftMs()).isEqualTo(540);
        assertThat(Locks.acquire(held, B, LEASE, new Locks.Clock(2, 1039, 40)).succeeded()).isFalse();
        Sequences.Outcome taken = Locks.acquire(held, B, LEASE, new Locks.Clock(2, 1040, 40));
        assertThat(taken.succeeded()).isTrue();
        assertThat(taken.result().getLock().getToken()).isEqualTo(2);
        // and the holder may still renew in the new term while that lease runs
        assertThat(Locks.renew(held, A, 1, LEASE, new Locks.Clock(2, 1000, 40)).succeeded()).isTrue();
    }

    @Test
    void when_aRegionSplitOffTheLocksRegionHasTheSameTermNumber_then_itsClockIsStillAnotherAndTheLeaseRunsFromItsTermStart() {
        // region 1, term 1: held until 1100 on region 1's leader's clock
        CoordRecord held = Locks.acquire(null, A, LEASE, new Locks.Clock(1, 1, 100, 0)).record();
        // region 65537 (split off region 1) in its own term 1, on another node's clock that reads 5000
        Locks.Clock child = new Locks.Clock(65_537, 1, 5000, 4900);
        Sequences.Outcome refused = Locks.acquire(held, B, LEASE, child);
        assertThat(refused.succeeded()).isFalse(); // read as the same clock, 5000 > 1100 would have freed it
        assertThat(refused.result().getLock().getLeaseLeftMs()).isEqualTo(900);
        assertThat(Locks.acquire(held, B, LEASE, new Locks.Clock(65_537, 1, 5900, 4900)).succeeded()).isTrue();
    }

    @Test
    void when_entriesOfOneTermAreStampedOutOfOrder_then_timeNeverRunsBackForALock() {
        CoordRecord renewed = Locks.renew(heldByA(), A, 1, LEASE, at(900)).record(); // expires 1900, written at 900
        Sequences.Outcome earlier = Locks.acquire(renewed, B, LEASE, at(850));
        assertThat(earlier.succeeded()).isFalse();
        assertThat(earlier.result().getLock().getLeaseLeftMs()).as("measured from 900, not 850").isEqualTo(1000);
    }

    @Test
    void when_read_then_aLockNeverTakenIsNullAndAHeldOneTellsItsTimeLeft() {
        ByteString key = ByteString.copyFromUtf8("k");
        assertThat(Locks.info(key, CoordRecord.newBuilder().setNextSequence(5).build(), at(0))).isNull();
        LockInfo info = Locks.info(key, heldByA(), at(400));
        assertThat(info.getKey()).isEqualTo(key);
        assertThat(info.getHolder()).isEqualTo(A);
        assertThat(info.getLeaseLeftMs()).isEqualTo(700);
        assertThat(Locks.info(key, heldByA(), at(1200)).getHolder()).as("expired").isEmpty();
    }

    @Test
    void when_theLeaderHadNotRecordedItsTermStart_then_theEntrysOwnTimeStandsIn() {
        WriteBatch stale = WriteBatch.newBuilder().setLeaseClockMs(700).setTermStartMs(5).setLeaderTerm(1).build();
        assertThat(io.kvraft.server.region.TestAccess.clockOf(stale, 2)).isEqualTo(new Locks.Clock(2, 700, 700));
        WriteBatch fresh = WriteBatch.newBuilder().setLeaseClockMs(700).setTermStartMs(650).setLeaderTerm(2).build();
        assertThat(io.kvraft.server.region.TestAccess.clockOf(fresh, 2)).isEqualTo(new Locks.Clock(2, 700, 650));
    }

    // ---- RESTORE_COORD ----------------------------------------------------------------------------

    private static CoordRecord backupWithToken(long token) {
        return CoordRecord.newBuilder().setLockToken(token).build();
    }

    @Test
    void when_aFreeLocksTokenIsRestored_then_theNextHolderGetsATokenAboveTheBackupsAndNoTokenMovesBack() {
        Sequences.Outcome freed = Locks.release(heldByA(), A, 1, at(200)); // free, last token 1

        CoordRecord restored = Sequences.restore(freed.record(), backupWithToken(30)).record();
        Sequences.Outcome next = Locks.acquire(restored, B, LEASE, at(300));

        assertThat(restored.getLockToken()).isEqualTo(30);
        assertThat(restored.getLockHolder()).as("restoring takes no holder").isEmpty();
        assertThat(next.result().getLock().getToken()).isEqualTo(31);
        CoordRecord lower = Sequences.restore(next.record(), backupWithToken(5)).record();
        assertThat(lower).as("an older backup moves nothing back").isEqualTo(next.record());
        assertThat(Locks.acquire(Sequences.restore(null, backupWithToken(7)).record(), A, LEASE, at(100))
                .result().getLock().getToken()).as("a key never locked here").isEqualTo(8);
    }

    @Test
    void when_aHeldLocksTokenIsRestored_then_theHoldingIsLeftAlone_andTheNextHoldingIsAboveTheBackupsToken() {
        CoordRecord held = heldByA(); // token 1, expires at 1100

        Sequences.Outcome o = Sequences.restore(held, backupWithToken(50));

        assertThat(o.succeeded()).isTrue();
        CoordRecord r = o.record();
        assertThat(r.getLockHolder()).isEqualTo(A);
        assertThat(r.getLockToken()).as("the holding keeps its token").isEqualTo(1);
        assertThat(r.getLockExpiresMs()).isEqualTo(held.getLockExpiresMs());
        assertThat(r.getLockCount()).isEqualTo(1);
        assertThat(Locks.acquire(r, B, LEASE, at(500)).succeeded()).as("still held").isFalse();
        Sequences.Outcome renewed = Locks.renew(r, A, 1, LEASE, at(500));
        assertThat(renewed.succeeded()).as("the holder renews under its own token").isTrue();
        assertThat(Sequences.restore(renewed.record(), backupWithToken(50)).record()).as("idempotent")
                .isEqualTo(renewed.record());

        Sequences.Outcome released = Locks.release(renewed.record(), A, 1, at(600));
        assertThat(released.succeeded()).isTrue();
        assertThat(released.result().getLock().getToken()).as("a free lock shows the restored token").isEqualTo(50);
        assertThat(Locks.acquire(released.record(), B, LEASE, at(700)).result().getLock().getToken()).isEqualTo(51);
        // a holding that ran out without a release: the next holder is above the restored token too
        assertThat(Locks.acquire(r, B, LEASE, at(1100)).result().getLock().getToken()).isEqualTo(51);
    }
}
