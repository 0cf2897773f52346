package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.client.proto.KvProto.RegionInfo;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Reads under a steady write load, where they ride on the leader's next log entry instead of a
 * ReadIndex round: a get invoked after a put was acknowledged must return that put's value or a
 * later one, never an older one.
 */
class ReadFreshnessTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static byte[] counter(long n) {
        return ByteBuffer.allocate(Long.BYTES).putLong(n).array();
    }

    @Test
    void when_readsRunBesideWrites_then_noReadReturnsAValueOlderThanAnAcknowledgedWrite() throws Exception {
        cluster = InProcessCluster.start(3, 24, dir, "memory");
        cluster.awaitBalanced(60);
        KvClient writer = cluster.client();
        KvClient reader = cluster.client();
        List<RegionInfo> regions = writer.regions().join();
        List<byte[]> keys = new ArrayList<>(ClusterTest.keyPerRegion(regions, "fresh"));
        int n = keys.size();
        AtomicLongArray acked = new AtomicLongArray(n); // highest value acknowledged per key
        AtomicBoolean running = new AtomicBoolean(true);
        ConcurrentLinkedQueue<String> stale = new ConcurrentLinkedQueue<>();
        long[] reads = new long[1];

        // one writer chain per key: value i+1 is written once value i is acknowledged
        List<CompletableFuture<Void>> chains = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            int key = k;
            CompletableFuture<Void> chain = new CompletableFuture<>();
            chains.add(chain);
            Runnable[] next = new Runnable[1];
            next[0] = () -> {
                if (!running.get()) {
                    chain.complete(null);
                    return;
                }
                long v = acked.get(key) + 1;
                writer.put(keys.get(key), counter(v)).whenComplete((ok, err) -> {
                    if (err != null) {
                        chain.completeExceptionally(err);
                        return;
                    }
                    acked.accumulateAndGet(key, v, Math::max);
                    next[0].run();
                });
            };
            next[0].run();
        }
        Thread readers = new Thread(() -> {
            while (running.get()) {
                List<CompletableFuture<Void>> round = new ArrayList<>();
                for (int k = 0; k < n; k++) {
                    int key = k;
                    long floor = acked.get(key); // acknowledged before this get was invoked
                    round.add(reader.get(keys.get(key)).thenAccept(v -> {
                        long got = v == null ? 0 : ByteBuffer.wrap(v).getLong();
                        if (got < floor) {
                            stale.add("key " + key + ": read " + got + " after " + floor + " was acknowledged");
                        }
                    }));
                }
                CompletableFuture.allOf(round.toArray(CompletableFuture[]::new)).join();
                reads[0] += n;
            }
        }, "fresh-readers");
        readers.start();
        try {
            await().atMost(120, SECONDS).until(() -> reads[0] >= 3_000 && acked.get(0) >= 100);
        } finally {
            running.set(false);
            readers.join();
        }
        CompletableFuture.allOf(chains.toArray(CompletableFuture[]::new)).get(60, SECONDS);
        assertThat(stale).isEmpty();
        for (int k = 0; k < n; k++) {
            assertThat(ByteBuffer.wrap(reader.get(keys.get(k)).join()).getLong()).isEqualTo(acked.get(k));
        }
    }
}
