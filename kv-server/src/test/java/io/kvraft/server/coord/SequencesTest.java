package io.kvraft.server.coord;

import io.kvraft.client.proto.KvProto.CoordRecord;
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
    void when_reset_then_theSequenceStartsAtZeroAndTheRecordIsForgotten() {
        Sequences.Outcome o = Sequences.reset(at(9));
        assertThat(o.succeeded()).isTrue();
        assertThat(Sequences.orNull(o.record())).isNull();
        assertThat(Sequences.reset(null).succeeded()).as("a fresh sequence had handed out nothing").isFalse();
    }
}
