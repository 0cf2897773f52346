package io.kvraft.benchmark;

import io.kvraft.server.config.ServerConfig;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The settings lines a local cluster's report starts its server section with. */
class ClusterSessionSettingsTest {

    private static final Path SCENARIOS = Path.of("..", "conf", "scenarios");

    private static ServerConfig load(String scenario, int node) {
        return ServerConfig.load(SCENARIOS.resolve(scenario).resolve("server-" + node + ".yaml"));
    }

    @Test
    void when_allNodesShareTheirSettings_then_oneLineNamesTheConfDirAndWhatThePipelineSwitchDoes() {
        Path dir = SCENARIOS.resolve("s4-memory-nobatching-nopipeline");
        List<ServerConfig> configs = List.of(load("s4-memory-nobatching-nopipeline", 1),
                load("s4-memory-nobatching-nopipeline", 2), load("s4-memory-nobatching-nopipeline", 3));

        List<String> lines = ClusterSession.settingsLines(dir, configs);

        assertThat(lines).containsExactly("settings (" + dir + "): regions=24 store.engine=memory raft.sync=true"
                + " raft.logStorage=shared raft.replicatorPipeline=false (at most 2 AppendEntries outstanding per"
                + " follower) raft.maxProposalsInflight=256 raft.maxRequestsPerEntry=1 raft.appendEntriesThreads=2"
                + " tls=false");
    }

    @Test
    void when_nodesDiffer_then_eachSetOfSettingsNamesItsNodes() {
        Path dir = Path.of("mixed");
        List<ServerConfig> configs = List.of(load("s3-memory-nobatching-pipeline", 1),
                load("s4-memory-nobatching-nopipeline", 2), load("s4-memory-nobatching-nopipeline", 3));

        List<String> lines = ClusterSession.settingsLines(dir, configs);

        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).startsWith("settings (mixed, node [1]): ")
                .contains("raft.replicatorPipeline=true raft.maxReplicatorInflightMsgs=256");
        assertThat(lines.get(1)).startsWith("settings (mixed, node [2, 3]): ")
                .contains("raft.replicatorPipeline=false");
    }
}
