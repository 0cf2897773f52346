package io.kvraft.server;

import io.kvraft.client.KvClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class ClusterSmokeTest {

    @TempDir
    Path dir;

    @Test
    void when_clusterStarts_then_putAndGetWork() throws Exception {
        try (var cluster = InProcessCluster.start(3, 24, dir, "memory")) {
            cluster.awaitBalanced(30);
            KvClient c = cluster.client();
            byte[] k = "hello".getBytes(StandardCharsets.UTF_8);
            c.put(k, "world".getBytes(StandardCharsets.UTF_8)).join();
            assertThat(new String(c.get(k).join(), StandardCharsets.UTF_8)).isEqualTo("world");
        }
    }
}
