package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.config.RaftConfig;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** raft.appendEntriesThreads: followers replicate on the shared pool, or (0) on jraft's own threads. */
class AppendEntriesThreadsClusterTest {

    private static final int REGIONS = 6;

    @TempDir
    Path dir;

    @ParameterizedTest(name = "appendEntriesThreads {0}")
    @ValueSource(ints = {0, 2})
    void when_writesGoToEveryRegion_then_everyReplicaAppliesThem(int threads) throws Exception {
        try (InProcessCluster c = start(threads)) {
            KvClient client = c.client();
            List<RegionInfo> regions = client.admin().regions().join();
            long[] before = new long[REGIONS + 1];
            for (int r = 1; r <= REGIONS; r++) {
                before[r] = applied(c, r).stream().mapToLong(Long::longValue).max().orElseThrow();
            }
            for (int i = 0; i < 200; i++) {
                writeEveryRegion(client, regions, "k" + i);
            }

            awaitReplicasEqual(c);
            for (int r = 1; r <= REGIONS; r++) {
                assertThat(applied(c, r).get(0)).as("region %d applied its writes", r).isGreaterThan(before[r]);
            }
            for (int n = 0; n < 3; n++) {
                int poolThreads = c.node(n).host().appendEntriesThreads();
                if (threads == 0) {
                    assertThat(poolThreads).as("jraft's own threads").isEqualTo(-1);
                } else {
                    assertThat(poolThreads).as("the shared pool of node %d", n).isBetween(1, 64);
                }
            }
            byte[] last = ClusterTest.keyPerRegion(regions, "k199").get(REGIONS - 1);
            assertThat(client.get(last).get(10, SECONDS)).isEqualTo("k199".getBytes());
        }
    }

    /**
     * A node stopped and started again in the same JVM, on the same port: bolt leaves the connections the old
     * server accepted open (its worker event loop is shared), so its peers go on sending through the old
     * server's processor, which must still pass their AppendEntries on; every region replicates to the new node.
     */
    @ParameterizedTest(name = "appendEntriesThreads {0}")
    @ValueSource(ints = {0, 2})
    void when_aNodeRestartsInTheSameJvm_then_everyRegionReplicatesToIt(int threads) throws Exception {
        try (InProcessCluster c = start(threads)) {
            KvClient client = c.client();
            List<RegionInfo> regions = client.admin().regions().join();
            writeEveryRegion(client, regions, "before");
            awaitReplicasEqual(c);

            c.stopNode(2);
            c.startNode(2);
            writeEveryRegion(client, regions, "after");
            awaitReplicasEqual(c);
            List<byte[]> keys = ClusterTest.keyPerRegion(regions, "after");
            for (int r = 1; r <= REGIONS; r++) {
                assertThat(c.node(2).store().get(keys.get(r - 1))).as("region %d on the restarted node", r)
                        .isEqualTo("after".getBytes());
            }
        }
    }

    private InProcessCluster start(int threads) throws IOException {
        InProcessCluster c = InProcessCluster.start(3, REGIONS, dir, "memory", RaftConfig.LOG_SHARED,
                cfg -> cfg.withRaft(cfg.raft().withAppendEntriesThreads(threads)));
        c.awaitBalanced(120);
        return c;
    }

    /**
     * Puts {@code value} under one key per region (the key is the value, suffixed to the region's start key),
     * sending a put again when its outcome is unknown.
     */
    private static void writeEveryRegion(KvClient client, List<RegionInfo> regions, String value) throws Exception {
        List<CompletableFuture<Void>> puts = new ArrayList<>();
        for (byte[] k : ClusterTest.keyPerRegion(regions, value)) {
            puts.add(IdempotentWrites.put(client, k, value.getBytes()));
        }
        CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).get(120, SECONDS);
    }

    private static List<Long> applied(InProcessCluster c, int region) {
        List<Long> applied = new ArrayList<>();
        for (int n = 0; n < 3; n++) {
            applied.add(c.node(n).host().region(region).node().getLastAppliedLogIndex());
        }
        return applied;
    }

    private static void awaitReplicasEqual(InProcessCluster c) {
        await().atMost(60, SECONDS).untilAsserted(() -> {
            for (int r = 1; r <= REGIONS; r++) {
                List<Long> applied = applied(c, r);
                assertThat(applied).as("applied index of region %d on each node", r).containsOnly(applied.get(0));
            }
        });
    }
}
