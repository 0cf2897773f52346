package io.kvraft.server.region;

import io.kvraft.common.WriteKind;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class WriteOpsTest {

    @Test
    void every_op_a_client_may_send_has_its_checks_and_its_effect() {
        for (WriteKind kind : WriteKind.values()) {
            if (kind.fromClients()) {
                assertThat(WriteOps.of(kind.type())).as("WriteOps row of %s", kind).isNotNull()
                        .extracting(WriteOps::kind).isEqualTo(kind);
            }
        }
    }

    @Test
    void ops_that_change_a_regions_shape_are_not_data_ops() {
        for (WriteKind kind : WriteKind.values()) {
            boolean shape = ShapeChanges.changesShape(kind.type());
            assertThat(shape && WriteOps.of(kind.type()) != null).as("%s is both", kind).isFalse();
            assertThat(shape || WriteOps.of(kind.type()) != null).as("%s is neither", kind).isTrue();
        }
    }
}
