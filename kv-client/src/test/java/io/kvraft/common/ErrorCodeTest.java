package io.kvraft.common;

import io.kvraft.common.proto.KvProto;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

class ErrorCodeTest {

    @Test
    void each_wire_code_has_the_java_code_of_its_name_and_back() {
        KvProto.ErrorCode[] wire = Arrays.stream(KvProto.ErrorCode.values())
                .filter(c -> c != KvProto.ErrorCode.UNRECOGNIZED).toArray(KvProto.ErrorCode[]::new);
        assertThat(ErrorCode.values()).hasSameSizeAs(wire);
        for (KvProto.ErrorCode w : wire) {
            ErrorCode c = ErrorCode.fromWire(w);
            assertThat(c.name()).isEqualTo(w.name());
            assertThat(c.toWire()).isEqualTo(w);
        }
    }

    @Test
    void when_a_wire_code_is_unknown_then_it_is_internal() {
        assertThat(ErrorCode.fromWire(KvProto.ErrorCode.UNRECOGNIZED)).isEqualTo(ErrorCode.INTERNAL);
    }

    @Test
    void a_wire_error_becomes_an_exception_with_its_code_detail_and_hint() {
        KvException e = KvException.fromWire(Errors.of(KvProto.ErrorCode.NOT_LEADER, "10.0.0.2:8182", "ask elsewhere"));
        assertThat(e.code()).isEqualTo(ErrorCode.NOT_LEADER);
        assertThat(e.leaderHint()).isEqualTo("10.0.0.2:8182");
        assertThat(e.getMessage()).isEqualTo("NOT_LEADER: ask elsewhere");
    }
}
