package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.server.region.Region;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** What the split and merge cluster tests share: their keys and values, and the checks of the nodes' region maps. */
final class RegionChanges {

    private RegionChanges() {
    }

    static byte[] key(int i) {
        return String.format("k%05d", i).getBytes(StandardCharsets.US_ASCII);
    }

    static byte[] value(int i, int round) {
        return ("v" + i + "-" + round).getBytes(StandardCharsets.US_ASCII);
    }

    /** Each running node's regions as (start key hex -> "id epoch end"), to compare the nodes' maps. */
    static Map<String, String> regionMap(KvServer server) {
        Map<String, String> map = new TreeMap<>();
        for (Region r : server.host().regions()) {
            map.put(java.util.HexFormat.of().formatHex(r.range().start()),
                    r.id() + " epoch " + r.epoch() + " end " + java.util.HexFormat.of().formatHex(r.range().end()));
        }
        return map;
    }

    /** Every node has the same {@code regions} regions, each has exactly one leader, and every replica names it. */
    static void awaitSameRegionMaps(InProcessCluster cluster, int regions) {
        await().atMost(60, SECONDS).untilAsserted(() -> {
            Map<String, String> first = regionMap(cluster.node(0));
            assertThat(first).hasSize(regions);
            for (int i = 1; i < cluster.size(); i++) {
                assertThat(regionMap(cluster.node(i))).isEqualTo(first);
            }
        });
        await().atMost(60, SECONDS).untilAsserted(() -> assertThat(cluster.allRegionsLed()).as(cluster.describe()).isTrue());
        await().atMost(60, SECONDS).untilAsserted(() -> {
            for (Region r : cluster.node(0).host().regions()) {
                List<String> leaders = new ArrayList<>();
                List<String> hints = new ArrayList<>();
                for (int i = 0; i < cluster.size(); i++) {
                    Region replica = cluster.node(i).host().region(r.id());
                    if (replica.isLeader()) {
                        leaders.add(cluster.node(i).config().endpoint());
                    }
                    hints.add(replica.leaderHint());
                }
                assertThat(leaders).as("leaders of region %d (hints %s)", r.id(), hints).hasSize(1);
                assertThat(hints).as("leader hints of region %d", r.id()).containsOnly(leaders.get(0));
            }
        });
    }

    /** Puts round {@code round}'s values; a put whose outcome is unknown (a leader lost under load) is sent again. */
    static void putAll(KvClient client, int keys, int round) {
        List<java.util.concurrent.CompletableFuture<Void>> puts = new ArrayList<>();
        for (int i = 0; i < keys; i++) {
            puts.add(IdempotentWrites.put(client, key(i), value(i, round)));
        }
        puts.forEach(KvClient::sync);
    }

    static void assertAll(KvClient client, int keys, int round) {
        for (int i = 0; i < keys; i++) {
            assertThat(sync(client.get(key(i)))).as("key %d", i).isEqualTo(value(i, round));
        }
    }

    /**
     * Threads that put keys 0 to {@code keys - 1} over and over, one put at a time each, until stopped: a put that
     * fails (any error) ends its thread with that error, which {@link #stopAndCheck} reports.
     */
    static final class Writers implements AutoCloseable {
        final Map<Integer, byte[]> acked = new java.util.concurrent.ConcurrentHashMap<>();
        private final java.util.concurrent.atomic.AtomicInteger acks = new java.util.concurrent.atomic.AtomicInteger();
        private final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        private final java.util.concurrent.ExecutorService pool;
        private final List<java.util.concurrent.Future<Integer>> done = new ArrayList<>();

        Writers(KvClient client, int threads, int keys) {
            pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
            for (int w = 0; w < threads; w++) {
                int writer = w;
                done.add(pool.submit(() -> {
                    int n = 0;
                    for (int round = 0; !stop.get(); round++) {
                        for (int i = writer; i < keys && !stop.get(); i += threads) {
                            byte[] v = value(i, round);
                            sync(client.put(key(i), v)); // throws on any error: the test fails
                            acked.put(i, v);
                            acks.incrementAndGet();
                            n++;
                        }
                    }
                    return n;
                }));
            }
        }

        /** Waits until {@code n} more puts than now have been acknowledged. */
        void awaitMore(int n) {
            int before = acks.get();
            await().atMost(30, SECONDS).until(() -> acks.get() >= before + n);
        }

        /** Stops the threads; every one must have written and none failed. */
        void stopAndCheck() throws Exception {
            stop.set(true);
            pool.shutdown();
            for (java.util.concurrent.Future<Integer> f : done) {
                assertThat(f.get(60, SECONDS)).isPositive();
            }
        }

        /** Every acknowledged put's latest value reads back. */
        void assertAckedReadBack(KvClient client) {
            acked.forEach((i, v) -> assertThat(sync(client.get(key(i)))).as("key %d", i).isEqualTo(v));
        }

        @Override
        public void close() {
            stop.set(true);
            pool.shutdownNow();
        }
    }
}
