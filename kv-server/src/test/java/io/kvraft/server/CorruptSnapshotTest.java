package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.RaftTestSupport.LogCapture;
import io.kvraft.server.store.MemoryStore;
import io.kvraft.server.store.RocksStore;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import static io.kvraft.server.RaftTestSupport.snapshotAllRegions;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A node restarts with one region's latest local snapshot corrupt: it must start, refuse that snapshot
 * with one ERROR line, move the region's snapshot and log aside, and get the region back from its leader,
 * never holding a value that the cluster did not write last.
 */
class CorruptSnapshotTest {

    private static final int REGION = 5;

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_aLocalSnapshotIsCorrupt_then_theNodeStartsAndTheRegionRecoversFromItsLeader(String engine) throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(3, 6, dir, engine); // a few regions: one is corrupted
             LogCapture log = LogCapture.of("io.kvraft.server")) {
            cluster.awaitBalanced(120);
            KvClient c = cluster.client();
            List<RegionInfo> regions = c.admin().regions().join();
            List<byte[]> keys = new ArrayList<>();
            for (String suffix : List.of("a", "b", "c", "d")) {
                keys.addAll(ClusterTest.keyPerRegion(regions, suffix));
            }
            RegionInfo target = regions.get(REGION - 1);
            assertThat(target.id()).isEqualTo(REGION);
            List<byte[]> regionKeys = keys.stream().filter(k -> inRegion(target, k)).toList();
            assertThat(regionKeys).hasSize(4);

            putAll(c, keys, "round-1");
            for (int i = 0; i < 3; i++) {
                snapshotAllRegions(cluster.node(i));
            }
            putAll(c, keys, "round-2");
            for (int i = 0; i < 3; i++) {
                snapshotAllRegions(cluster.node(i));
            }

            Path nodeDir = Path.of(cluster.node(2).config().dataDir());
            cluster.stopNode(2);
            await().atMost(30, SECONDS).until(cluster::allRegionsLed);
            putAll(c, keys, "round-3");
            // both live nodes have applied round 3 before they snapshot: whichever of them leads the region when
            // the node comes back sends a snapshot that holds it (a follower lagging by a heartbeat would send
            // round 2, which the watcher below could not tell from the refused local data)
            await().atMost(30, SECONDS).until(() -> regions.stream().allMatch(r ->
                    appliedIndex(cluster.node(0), r.id()) == appliedIndex(cluster.node(1), r.id())));
            // the leaders snapshot again, so the region can only come back by a snapshot install
            snapshotAllRegions(cluster.node(0));
            snapshotAllRegions(cluster.node(1));

            Path regionDir = nodeDir.resolve("raft").resolve("region-" + REGION);
            Path snapshotDir = latestSnapshot(regionDir.resolve("snapshot"));
            Path dataFile = snapshotDir.resolve("kv").resolve(engine.equals("memory") ? MemoryStore.SNAPSHOT_FILE : RocksStore.SST_FILE);
            flipBytesInTheMiddle(dataFile);

            log.clear();
            cluster.startNode(2);
            KvServer restarted = cluster.node(2);

            // from now on until it has caught up, the region's keys on that node hold nothing or the latest values
            Map<String, String> wrong = new ConcurrentHashMap<>();
            AtomicBoolean watching = new AtomicBoolean(true);
            Thread watcher = new Thread(() -> {
                while (watching.get()) {
                    for (byte[] k : regionKeys) {
                        byte[] v = restarted.store().get(k);
                        if (v != null && !Arrays.equals(v, value("round-3", k))) {
                            wrong.put(SnapshotInstallTest.hex(k), new String(v, StandardCharsets.UTF_8));
                        }
                    }
                    Thread.onSpinWait();
                }
            }, "wrong-value-watcher");
            watcher.start();
            try {
                await().atMost(60, SECONDS).untilAsserted(() -> {
                    for (byte[] k : keys) {
                        assertThat(restarted.store().get(k)).as("key %s", SnapshotInstallTest.hex(k)).isEqualTo(value("round-3", k));
                    }
                });
            } finally {
                watching.set(false);
                watcher.join();
            }
            assertThat(wrong).as("values held by the restarted node that the cluster did not write last").isEmpty();

            List<String> errors = log.lines().stream().filter(l -> l.startsWith("ERROR")).toList();
            assertThat(errors).hasSize(1);
            assertThat(errors.get(0)).contains("region " + REGION + ": local snapshot refused").contains(dataFile.toString());
            // the store holds the data before the load's log line is written: wait for the line, do not race it
            await().atMost(30, SECONDS).until(() -> log.lines().stream()
                    .anyMatch(l -> l.contains("region " + REGION + ": snapshot loaded at index")));
            try (Stream<Path> entries = Files.list(regionDir)) {
                List<String> names = entries.map(p -> p.getFileName().toString()).toList();
                // the region's entries in the node's shared log were dropped with it; no log directory of its own
                assertThat(names).anyMatch(n -> n.startsWith("snapshot.corrupt-")).contains("meta", "snapshot")
                        .noneMatch(n -> n.startsWith("log"));
            }

            cluster.awaitBalanced(120);
            List<byte[]> got = c.multiGet(keys).join();
            for (int i = 0; i < keys.size(); i++) {
                assertThat(got.get(i)).isEqualTo(value("round-3", keys.get(i)));
            }
        }
    }

    static Path latestSnapshot(Path snapshotRoot) throws Exception {
        try (Stream<Path> s = Files.list(snapshotRoot)) {
            return s.filter(p -> p.getFileName().toString().startsWith("snapshot_"))
                    .max((a, b) -> Long.compare(index(a), index(b))).orElseThrow();
        }
    }

    private static long index(Path snapshotDir) {
        return Long.parseLong(snapshotDir.getFileName().toString().substring("snapshot_".length()));
    }

    static void flipBytesInTheMiddle(Path file) throws Exception {
        byte[] bytes = Files.readAllBytes(file);
        assertThat(bytes.length).isGreaterThan(16);
        for (int i = bytes.length / 2; i < bytes.length / 2 + 4; i++) {
            bytes[i] ^= (byte) 0x5A;
        }
        Files.write(file, bytes);
    }

    private static boolean inRegion(RegionInfo r, byte[] k) {
        return new io.kvraft.server.store.KeyRange(r.startKey(), r.endKey()).contains(k);
    }

    private static byte[] value(String round, byte[] k) {
        return (round + "/" + SnapshotInstallTest.hex(k)).getBytes(StandardCharsets.UTF_8);
    }

    private static void putAll(KvClient c, List<byte[]> keys, String round) {
        // a put left unknown by a leader stepping down (a loaded machine) is sent again: this test is the only writer
        CompletableFuture.allOf(keys.stream().map(k -> IdempotentWrites.put(c, k, value(round, k))).toArray(CompletableFuture[]::new)).join();
    }

    private static long appliedIndex(KvServer node, long region) {
        return node.host().region((int) region).node().getLastAppliedLogIndex();
    }
}
