package io.kvraft.server;

import com.alipay.sofa.jraft.util.Utils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class JraftDefaultsTest {

    private String saved;

    @BeforeEach
    void save() {
        saved = System.getProperty(JraftDefaults.CLOSURE_POOL_MAX);
    }

    @AfterEach
    void restore() {
        if (saved == null) {
            System.clearProperty(JraftDefaults.CLOSURE_POOL_MAX);
        } else {
            System.setProperty(JraftDefaults.CLOSURE_POOL_MAX, saved);
        }
    }

    @Test
    void when_theClosurePoolCapIsUnset_then_itIsRaised() {
        System.clearProperty(JraftDefaults.CLOSURE_POOL_MAX);
        JraftDefaults.apply();
        assertThat(System.getProperty(JraftDefaults.CLOSURE_POOL_MAX)).isEqualTo("1024");
    }

    @Test
    void when_theUserSetTheClosurePoolCap_then_itIsKept() {
        System.setProperty(JraftDefaults.CLOSURE_POOL_MAX, "300");
        JraftDefaults.apply();
        assertThat(System.getProperty(JraftDefaults.CLOSURE_POOL_MAX)).isEqualTo("300");
    }

    /** The in-process clusters of the tests run three nodes in one JVM: the surefire argLine sets the cap. */
    @Test
    void when_jraftLoadsInTheTestJvm_then_itsClosurePoolTakesTheRaisedCap() {
        assertThat(Utils.MAX_CLOSURE_EXECUTOR_POOL_SIZE).isEqualTo(JraftDefaults.CLOSURE_POOL_MAX_VALUE);
    }
}
