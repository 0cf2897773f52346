package io.kvraft.common.rpc;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The deep bolt executor queue is the default, and a value the user set is kept. */
class BoltDefaultsTest {

    private String saved;

    @BeforeEach
    void save() {
        saved = System.getProperty(BoltDefaults.QUEUE_PROPERTY);
    }

    @AfterEach
    void restore() {
        if (saved == null) {
            System.clearProperty(BoltDefaults.QUEUE_PROPERTY);
        } else {
            System.setProperty(BoltDefaults.QUEUE_PROPERTY, saved);
        }
    }

    @Test
    void when_theUserSetNothing_then_theQueueIsDeep() {
        System.clearProperty(BoltDefaults.QUEUE_PROPERTY);

        BoltDefaults.apply();

        assertThat(Integer.parseInt(System.getProperty(BoltDefaults.QUEUE_PROPERTY))).isGreaterThanOrEqualTo(32768);
    }

    @Test
    void when_theUserSetTheQueue_then_theirValueIsKept() {
        System.setProperty(BoltDefaults.QUEUE_PROPERTY, "1234");

        BoltDefaults.apply();

        assertThat(System.getProperty(BoltDefaults.QUEUE_PROPERTY)).isEqualTo("1234");
    }
}
