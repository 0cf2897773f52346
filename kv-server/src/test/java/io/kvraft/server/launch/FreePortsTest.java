package io.kvraft.server.launch;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The ports local clusters are given: from the test JVM's own range when the build names one, each one free. */
class FreePortsTest {

    private String before;

    @BeforeEach
    void remember() {
        before = System.getProperty(LocalClusterConfigs.PORTS_PROPERTY);
    }

    @AfterEach
    void restore() {
        if (before == null) {
            System.clearProperty(LocalClusterConfigs.PORTS_PROPERTY);
        } else {
            System.setProperty(LocalClusterConfigs.PORTS_PROPERTY, before);
        }
    }

    @Test
    void when_aRangeIsNamed_then_portsComeFromItDistinct_andOneInUseIsPassedOver() throws IOException {
        int from = 40_000 + (int) (ProcessHandle.current().pid() % 1000) * 10; // inside no other JVM's range
        System.setProperty(LocalClusterConfigs.PORTS_PROPERTY, from + "-" + (from + 9));
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress("127.0.0.1", LocalClusterConfigs.freePort()));
            List<Integer> ports = LocalClusterConfigs.freePorts(5);
            assertThat(ports).doesNotHaveDuplicates().allMatch(p -> p >= from && p <= from + 9)
                    .doesNotContain(taken.getLocalPort());
        }
    }

    @Test
    void when_noRangeIsNamed_then_theSystemPicks() {
        System.clearProperty(LocalClusterConfigs.PORTS_PROPERTY);
        assertThat(LocalClusterConfigs.freePort()).isBetween(1, 65535);
    }

    @Test
    void when_theRangeIsMalformed_then_theErrorSaysWhatItMustBe() {
        for (String bad : List.of("21000", "22000-21000", "a-b", "80-90", "21000-70000")) {
            System.setProperty(LocalClusterConfigs.PORTS_PROPERTY, bad);
            assertThatThrownBy(LocalClusterConfigs::freePort).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("kv.test.ports must be FROM-TO").hasMessageContaining(bad);
        }
    }
}
