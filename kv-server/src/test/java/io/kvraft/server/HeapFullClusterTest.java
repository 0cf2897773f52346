package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;
import io.kvraft.server.launch.LocalClusterConfigs;
import io.kvraft.server.launch.ProcessCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

/**
 * MemoryDB nodes with small heaps ({@code -Xmx160m}, {@code store.maxHeapFraction: 0.5}) written to until they are
 * full: the writes that add data are refused with STORE_FULL and not one node runs out of heap, every acknowledged
 * write reads back, deletes pass, and once they have freed the heap the nodes take writes again.
 */
@Timeout(value = 300, unit = SECONDS)
class HeapFullClusterTest {

    @TempDir
    Path dir;

    private static final int VALUE_BYTES = 4096;
    /** Puts in flight at once. */
    private static final int WINDOW = 64;
    /** Far more than the heaps hold: a run that writes this much without STORE_FULL fails. */
    private static final int MAX_KEYS = 60_000;

    @Test
    void when_theHeapsFill_then_writesAreRefusedWithStoreFullAndTheNodesLiveOnAndTakeWritesAfterDeletes()
            throws Exception {
        List<Path> files = LocalClusterConfigs.write(dir, 3, "memory", 2000, "");
        for (Path f : files) {
            String yaml = Files.readString(f);
            // 3 regions: the test is about the nodes' heaps, and fewer groups start sooner
            Files.writeString(f, yaml.replace("  engine: memory\n", "  engine: memory\n  maxHeapFraction: 0.5\n")
                    .replace("  regionCount: 24\n", "  regionCount: 3\n"));
        }
        try (ProcessCluster cluster = ProcessCluster.start(files, dir.resolve("data"), List.of("-Xms64m", "-Xmx160m"),
                Duration.ofSeconds(120));
             KvClient client = KvClients.connect(new ClientConfig(cluster.servers(), 2_000L, 10_000L, null, null))) {
            byte[] value = new byte[VALUE_BYTES];
            Arrays.fill(value, (byte) 'v');
            List<Integer> acked = new ArrayList<>();
            KvException refusal = null;
            for (int next = 0; next < MAX_KEYS && refusal == null; next += WINDOW) {
                List<CompletableFuture<Void>> puts = new ArrayList<>();
                for (int i = next; i < next + WINDOW; i++) {
                    puts.add(client.put(key(i), value));
                }
                for (int i = 0; i < puts.size(); i++) {
                    Throwable t = catchThrowable(puts.get(i)::join);
                    if (t == null) {
                        acked.add(next + i);
                    } else if (refusal == null) {
                        refusal = KvException.unwrap(t);
                    }
                }
            }
            assertThat(refusal).as("a put refused after %d acknowledged", acked.size()).isNotNull();
            System.out.printf("%d puts of %d bytes acknowledged, then: %s%n", acked.size(), VALUE_BYTES, refusal.getMessage());
            assertThat(refusal.code()).as(refusal.getMessage()).isEqualTo(ErrorCode.STORE_FULL);
            assertThat(refusal.getMessage()).contains("store.maxHeapFraction");
            for (int i = 0; i < 3; i++) {
                assertThat(cluster.isRunning(i)).as("node %d alive", i + 1).isTrue();
            }

            // every acknowledged write is there
            for (int from = 0; from < acked.size(); from += 500) {
                List<byte[]> keys = acked.subList(from, Math.min(acked.size(), from + 500)).stream()
                        .map(HeapFullClusterTest::key).toList();
                List<byte[]> values = client.multiGet(keys).join();
                for (int i = 0; i < keys.size(); i++) {
                    assertThat(values.get(i)).as(new String(keys.get(i), StandardCharsets.UTF_8)).isEqualTo(value);
                }
            }

            // deletes pass while full, and the room they make is taken again
            for (int from = 0; from < acked.size(); from += WINDOW) {
                List<CompletableFuture<?>> deletes = new ArrayList<>();
                for (int i : acked.subList(from, Math.min(acked.size(), from + WINDOW))) {
                    deletes.add(client.delete(key(i)));
                }
                deletes.forEach(CompletableFuture::join);
            }
            await().atMost(120, SECONDS).pollInterval(Duration.ofSeconds(1))
                    .ignoreExceptionsMatching(t -> KvException.unwrap(t).code() == ErrorCode.STORE_FULL)
                    .untilAsserted(() -> client.put(key(MAX_KEYS), value).join());
            assertThat(client.get(key(MAX_KEYS)).join()).isEqualTo(value);
            for (int i = 0; i < 3; i++) {
                assertThat(cluster.isRunning(i)).as("node %d alive", i + 1).isTrue();
            }
        }
    }

    private static byte[] key(int i) {
        return String.format("heap-%08d", i).getBytes(StandardCharsets.UTF_8);
    }
}
