package io.kvraft.server.coord;

import io.kvraft.common.proto.KvProto.CoordRecord;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class SequencesTest {

    private static CoordRecord at(long next) {
        return CoordRecord.newBuilder().setNextSequence(next).build();
    }

    @Test
    void when_aFreshSequenceIsTaken_then_theRangeStartsAtZeroAndTheRecordRemembersItsEnd() {
        Sequences.Outcome o = Sequences.take(null, 5);
        assertThat(o.succeeded()).isTrue();
        assertThat(o.result().getStart()).isZero();
        assertThat(o.result().getEnd()).isEqualTo(5);
        assertThat(o.record().getNextSequence()).isEqualTo(5);
    }

    @Test
    void when_takenTwice_then_theSecondRangeStartsWhereTheFirstEnded() {
        Sequences.Outcome first = Sequences.take(at(7), 3);
        Sequences.Outcome second = Sequences.take(first.record(), 4);
        assertThat(first.result().getStart()).isEqualTo(7);
        assertThat(second.result().getStart()).isEqualTo(10);
        assertThat(second.result().getEnd()).isEqualTo(14);
    }

    @Test
    void when_stepIsZero_then_theLatestValueIsAnsweredAndNothingChanges() {
        Sequences.Outcome o = Sequences.take(at(42), 0);
        assertThat(o.succeeded()).isTrue();
        assertThat(o.result().getStart()).isEqualTo(42);
        assertThat(o.result().getEnd()).isEqualTo(42);
        assertThat(o.record()).isEqualTo(at(42));
    }

    @Test
    void when_theEndWouldPassLongMax_then_theTakeIsRefusedAndTheRecordKept() {
        Sequences.Outcome o = Sequences.take(at(Long.MAX_VALUE - 2), 3);
        assertThat(o.succeeded()).isFalse();
        assertThat(o.record()).isEqualTo(at(Long.MAX_VALUE - 2));
        assertThat(Sequences.take(at(Long.MAX_VALUE - 2), 2).result().getEnd()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void when_restoredFromABackup_then_theSequenceContinuesAfterTheBackupsValueButNeverGoesBack() {
        Sequences.Outcome fresh = Sequences.restore(null, at(500));
        assertThat(fresh.succeeded()).isTrue();
        assertThat(Sequences.take(fresh.record(), 10).result().getStart()).isEqualTo(500);

        Sequences.Outcome ahead = Sequences.restore(at(900), at(500));
        assertThat(ahead.succeeded()).as("the target is past the backup: nothing moves").isFalse();
        assertThat(ahead.record()).isEqualTo(at(900));

        Sequences.Outcome again = Sequences.restore(fresh.record(), at(500));
        assertThat(again.succeeded()).as("a retried restore").isFalse();
        assertThat(again.record()).isEqualTo(fresh.record());
        assertThat(Sequences.restore(at(7), at(-1)).record()).as("2^63 or more is never taken").isEqualTo(at(7));
    }

    @Test
    void when_restoredFromABackup_then_onlyTheSequenceAndTheFencingTokenAreTaken_neverTheBackupsHolding() {
        CoordRecord backedUp = CoordRecord.newBuilder().setNextSequence(40).setLockToken(12)
                .setLockHolder(com.google.protobuf.ByteString.copyFromUtf8("old-holder")).setLockCount(2)
                .setLockLeaseMs(1000).setLockExpiresMs(99_000).setLockTerm(8).setLockRegion(3).setLockUpdatedMs(98_000)
                .build();

        Sequences.Outcome o = Sequences.restore(at(3), backedUp);

        assertThat(o.succeeded()).isTrue();
        assertThat(o.record()).isEqualTo(CoordRecord.newBuilder().setNextSequence(40).setLockToken(12).build());
        assertThat(Sequences.restore(o.record(), backedUp).record()).as("idempotent").isEqualTo(o.record());
    }

    @Test
    void when_reset_then_theSequenceStartsAtZeroAndTheRecordIsForgotten() {
        Sequences.Outcome o = Sequences.reset(at(9));
        assertThat(o.succeeded()).isTrue();
        assertThat(Sequences.orNull(o.record())).isNull();
        assertThat(Sequences.reset(null).succeeded()).as("a fresh sequence had handed out nothing").isFalse();
    }
}
