package io.kvraft.common;

import io.kvraft.common.proto.KvProto.WriteOpType;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

class WriteKindTest {

    @Test
    void every_op_type_of_the_wire_has_a_kind() {
        for (WriteOpType type : WriteOpType.values()) {
            if (type != WriteOpType.UNRECOGNIZED) {
                assertThat(WriteKind.of(type)).as("WriteKind of %s", type).isNotNull()
                        .extracting(WriteKind::type).isEqualTo(type);
            }
        }
    }

    @Test
    void a_number_this_side_does_not_know_has_no_kind() {
        assertThat(WriteKind.of(WriteOpType.UNRECOGNIZED)).isNull();
    }

    @Test
    void only_ops_whose_repetition_changes_nothing_are_retried_when_their_answer_was_lost() {
        assertThat(Arrays.stream(WriteKind.values()).filter(WriteKind::retriedWhenUnknown))
                .containsExactlyInAnyOrder(WriteKind.GET_SEQUENCE, WriteKind.LOCK_RENEW, WriteKind.RESTORE_COORD);
    }
}
