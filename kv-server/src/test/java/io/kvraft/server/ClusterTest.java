package io.kvraft.server;

import io.kvraft.client.KeyValue;
import io.kvraft.client.KvClient;
import io.kvraft.client.admin.RegionInfo;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** Three servers with 24 regions in this JVM: election, balance, every operation, leader loss, catch-up. */
class ClusterTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @BeforeEach
    void start() throws Exception {
        cluster = InProcessCluster.start(3, 24, dir, "memory");
    }

    @AfterEach
    void stop(TestInfo info) {
        if (cluster != null) {
            System.out.println(info.getDisplayName() + " final state:\n" + cluster.describe());
            cluster.close();
        }
    }

    /**
     * One key inside each region: its start key plus the suffix. The first region's start key is empty, and the
     * bare suffix would land in a later region (an ASCII letter sorts far above the first split), so its key
     * starts with a zero byte instead.
     */
    static List<byte[]> keyPerRegion(List<RegionInfo> regions, String suffix) {
        List<byte[]> keys = new ArrayList<>();
        for (RegionInfo r : regions) {
            byte[] start = r.startKey().length == 0 ? new byte[] {0} : r.startKey();
            byte[] s = suffix.getBytes();
            byte[] k = Arrays.copyOf(start, start.length + s.length);
            System.arraycopy(s, 0, k, start.length, s.length);
            byte[] end = r.endKey();
            if (end.length > 0 && Arrays.compareUnsigned(k, end) >= 0) {
                throw new IllegalStateException("key for region " + r.id() + " falls past its end key");
            }
            keys.add(k);
        }
        return keys;
    }

    @Test
    void when_clusterStarts_then_everyRegionIsLedAndLeadersAreBalanced() {
        // the counts are read once per poll: a transfer under way may show 9, 8, 7 between two reads
        await().atMost(120, SECONDS).pollInterval(Duration.ofMillis(100)).untilAsserted(() ->
                assertThat(cluster.leaderCounts().values()).containsExactly(8L, 8L, 8L));
    }

    @Test
    void when_operationsTouchEveryRegion_then_allSucceed() {
        cluster.awaitBalanced(120);
        KvClient c = cluster.client();
        List<RegionInfo> regions = c.admin().regions().join();
        assertThat(regions).hasSize(24);
        List<byte[]> keys = keyPerRegion(regions, "k");

        List<CompletableFuture<Void>> puts = new ArrayList<>();
        for (byte[] k : keys) {
            puts.add(IdempotentWrites.put(c, k, ("v" + Arrays.toString(k)).getBytes()));
        }
        CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).join();
        for (byte[] k : keys) {
            assertThat(c.get(k).join()).isEqualTo(("v" + Arrays.toString(k)).getBytes());
        }

        List<KeyValue> batch = new ArrayList<>();
        for (byte[] k : keyPerRegion(regions, "b")) {
            batch.add(new KeyValue(k, k));
        }
        c.batchPut(batch).join();
        List<byte[]> got = c.multiGet(batch.stream().map(KeyValue::key).toList()).join();
        for (int i = 0; i < batch.size(); i++) {
            assertThat(got.get(i)).isEqualTo(batch.get(i).value());
        }

        byte[] first = keys.get(0);
        assertThat(c.delete(first).join()).isTrue();
        assertThat(c.delete(first).join()).isFalse();
        assertThat(c.get(first).join()).isNull();

        byte[] last = keys.get(keys.size() - 1);
        assertThat(c.compareAndPut(last, "wrong".getBytes(), "x".getBytes()).join()).isFalse();
        assertThat(c.compareAndPut(last, ("v" + Arrays.toString(last)).getBytes(), "x".getBytes()).join()).isTrue();
        assertThat(c.get(last).join()).isEqualTo("x".getBytes());
        assertThat(c.compareAndPut(first, null, "fresh".getBytes()).join()).isTrue();
        assertThat(c.compareAndPut(first, null, "again".getBytes()).join()).isFalse();
        assertThat(c.get(first).join()).isEqualTo("fresh".getBytes());
    }

    @Test
    void when_aLeaderStops_then_writesAndReadsGoOnThroughTheOthers() {
        cluster.awaitBalanced(120);
        KvClient c = cluster.client();
        List<byte[]> keys = keyPerRegion(c.admin().regions().join(), "x");
        for (byte[] k : keys) {
            IdempotentWrites.put(c, k, "before".getBytes()).join();
        }

        cluster.stopNode(0); // leads 8 regions

        await().atMost(30, SECONDS).until(cluster::allRegionsLed);
        for (byte[] k : keys) {
            IdempotentWrites.put(c, k, "after".getBytes()).join();
        }
        for (byte[] k : keys) {
            assertThat(c.get(k).join()).isEqualTo("after".getBytes());
        }
    }

    @Test
    void when_aStoppedNodeRestarts_then_itCatchesUpAndServesTheLatestValues() throws Exception {
        cluster.awaitBalanced(120);
        KvClient c = cluster.client();
        List<byte[]> keys = keyPerRegion(c.admin().regions().join(), "r");
        cluster.stopNode(2);
        await().atMost(30, SECONDS).until(cluster::allRegionsLed);
        for (int round = 0; round < 3; round++) {
            for (byte[] k : keys) {
                IdempotentWrites.put(c, k, ByteBuffer.allocate(4).putInt(round).array()).join();
            }
        }

        cluster.startNode(2);

        KvServer restarted = cluster.node(2);
        byte[] latest = ByteBuffer.allocate(4).putInt(2).array();
        await().atMost(30, SECONDS).until(() -> keys.stream().allMatch(k -> Arrays.equals(restarted.store().get(k), latest)));
        // and once leaders are rebalanced onto it, it answers clients with those values
        cluster.awaitBalanced(120);
        assertThat(restarted.leaderCount()).isEqualTo(8);
        for (byte[] k : keys) {
            assertThat(c.get(k).join()).isEqualTo(latest);
        }
    }

    @Test
    void when_manyClientsWriteConcurrently_then_everyAcknowledgedWriteIsReadBack() {
        cluster.awaitBalanced(120);
        KvClient c = cluster.client();
        List<CompletableFuture<Void>> acks = new ArrayList<>();
        List<byte[]> keys = new ArrayList<>();
        java.util.Random rnd = new java.util.Random(42);
        for (int i = 0; i < 20_000; i++) {
            byte[] k = new byte[16];
            rnd.nextBytes(k);
            keys.add(k);
            acks.add(IdempotentWrites.put(c, k, k));
        }
        CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new)).join();
        List<byte[]> values = c.multiGet(keys).join();
        for (int i = 0; i < keys.size(); i++) {
            assertThat(values.get(i)).isEqualTo(keys.get(i));
        }
        // and every node's own store gets every write (a leader's count of them would be off by a retried put, or by
        // a write applied after its leader stepped down)
        for (int i = 0; i < cluster.size(); i++) {
            io.kvraft.server.store.KvStore store = cluster.node(i).store();
            await().atMost(60, SECONDS).until(() -> keys.stream().allMatch(k -> java.util.Arrays.equals(store.get(k), k)));
        }
    }
}
