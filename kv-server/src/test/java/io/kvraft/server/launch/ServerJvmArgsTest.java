package io.kvraft.server.launch;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ServerJvmArgsTest {

    @Test
    void when_noExtraArgs_then_theDefaults() {
        assertThat(ProcessCluster.serverJvmArgs(List.of())).isEqualTo(ProcessCluster.DEFAULT_SERVER_JVM_ARGS);
    }

    @Test
    void when_anAgentIsAdded_then_theHeapLimitsAndTheCollectorStay() {
        assertThat(ProcessCluster.serverJvmArgs(List.of("-agentpath:/opt/ap.so=start")))
                .containsExactly("-Xms256m", "-Xmx768m", "-XX:+UseParallelGC", "-XX:+ExitOnOutOfMemoryError",
                        "-agentpath:/opt/ap.so=start");
    }

    @Test
    void when_aMaximumHeapIsGiven_then_itReplacesTheDefaultHeapSizes() {
        // a default -Xms256m next to -Xmx128m would stop the JVM from starting
        assertThat(ProcessCluster.serverJvmArgs(List.of("-Xmx128m")))
                .containsExactly("-XX:+UseParallelGC", "-XX:+ExitOnOutOfMemoryError", "-Xmx128m");
    }

    @Test
    void when_onlyAnInitialHeapIsGiven_then_theDefaultMaximumStays() {
        assertThat(ProcessCluster.serverJvmArgs(List.of("-Xms512m")))
                .containsExactly("-Xmx768m", "-XX:+UseParallelGC", "-XX:+ExitOnOutOfMemoryError", "-Xms512m");
    }

    @Test
    void when_anotherCollectorIsChosen_then_theDefaultCollectorIsDropped() {
        assertThat(ProcessCluster.serverJvmArgs(List.of("-XX:+UseG1GC", "-Xlog:gc")))
                .containsExactly("-Xms256m", "-Xmx768m", "-XX:+ExitOnOutOfMemoryError", "-XX:+UseG1GC", "-Xlog:gc");
    }
}
