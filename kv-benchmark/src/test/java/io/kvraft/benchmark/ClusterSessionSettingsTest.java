package io.kvraft.benchmark;

import io.kvraft.server.config.ServerConfig;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The settings lines a local cluster's report starts its server section with. */
class ClusterSessionSettingsTest {

    private static final Path SCENARIOS = Path.of("..", "conf", "scenarios");

    /** Node i's config from the i-th named scenario directory. */
    private static List<ServerConfig> configs(String... scenarioPerNode) {
        List<ServerConfig> configs = new ArrayList<>();
        for (int i = 0; i < scenarioPerNode.length; i++) {
            configs.add(ServerConfig.load(SCENARIOS.resolve(scenarioPerNode[i]).resolve("server-" + (i + 1) + ".yaml")));
        }
        return configs;
    }

    @Test
    void when_allNodesShareTheirSettings_then_oneLineNamesTheConfDirAndWhatThePipelineSwitchDoes() {
        String s4 = "s4-memory-nobatching-nopipeline";
        Path dir = SCENARIOS.resolve(s4);

        List<String> lines = ClusterSession.settingsLines(dir, configs(s4, s4, s4), List.of());

        assertThat(lines).containsExactly("settings (" + dir + "): regions=24 nodes=3 replication.factor=3 store.engine=memory raft.sync=true"
                + " raft.logStorage=shared raft.replicatorPipeline=false (at most 2 AppendEntries outstanding per"
                + " follower) raft.maxProposalsInflight=256 raft.maxRequestsPerEntry=1 raft.appendEntriesThreads=2 raft.nodeHeartbeats=true"
                + " tls=false");
    }

    @Test
    void when_nodesDiffer_then_eachSetOfSettingsNamesItsNodes() {
        String s3 = "s3-memory-nobatching-pipeline";
        String s4 = "s4-memory-nobatching-nopipeline";

        List<String> lines = ClusterSession.settingsLines(Path.of("mixed"), configs(s3, s4, s4), List.of());

        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).startsWith("settings (mixed, node [1]): ")
                .contains("raft.replicatorPipeline=true raft.maxReplicatorInflightMsgs=256");
        assertThat(lines.get(1)).startsWith("settings (mixed, node [2, 3]): ")
                .contains("raft.replicatorPipeline=false");
    }

    @Test
    void when_serverJvmArgsWereAdded_then_aLastLineListsThem() {
        String s3 = "s3-memory-nobatching-pipeline";

        List<String> lines = ClusterSession.settingsLines(Path.of("s3"), configs(s3, s3, s3),
                List.of("-Dkv.fault.appendEntriesDelayMicros=1000", "-Xmx1g"));

        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).startsWith("settings (s3): ");
        assertThat(lines.get(1)).isEqualTo("server JVM args added: -Dkv.fault.appendEntriesDelayMicros=1000 -Xmx1g");
    }
}
