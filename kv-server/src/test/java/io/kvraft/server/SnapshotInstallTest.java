package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.RaftTestSupport.LogCapture;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.kvraft.server.RaftTestSupport.deleteTree;
import static io.kvraft.server.RaftTestSupport.snapshotAllRegions;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A node whose data dir is wiped while the others snapshot twice (so their logs no longer start at 1)
 * can only catch up by installing a snapshot of every region from the leaders: checked for both engines.
 * Meanwhile bolt's shared default executor has only {@value #BOLT_THREADS} threads: fewer than the {@value #REGIONS}
 * regions whose snapshots arrive at once, as on a node with 24 regions and bolt's 20 (a download that held one of
 * them until it ended hung every download there, now and then on a loaded machine, always here).
 */
@org.junit.jupiter.api.Timeout(value = 10, unit = java.util.concurrent.TimeUnit.MINUTES)
class SnapshotInstallTest {

    private static final int BOLT_THREADS = 4;
    /** More regions than bolt threads, and a share of 3 leaders per node. */
    private static final int REGIONS = 9;
    private static final Pattern LOADED = Pattern.compile("region (\\d+): snapshot loaded at index (\\d+)");

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_aWipedNodeRestartsAfterTheLogsWereTruncated_then_itInstallsSnapshotsAndCatchesUp(String engine) throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(3, REGIONS, dir, engine);
             LogCapture log = LogCapture.of("io.kvraft.server")) {
            cluster.awaitBalanced(120);
            KvClient c = cluster.client();
            List<RegionInfo> regions = c.admin().regions().join();
            List<byte[]> keys = new ArrayList<>();
            for (String suffix : List.of("a", "b", "c")) {
                keys.addAll(ClusterTest.keyPerRegion(regions, suffix));
            }
            Map<String, byte[]> expected = new LinkedHashMap<>();

            putAll(c, keys, "round-1", expected);
            for (int i = 0; i < 3; i++) {
                snapshotAllRegions(cluster.node(i));
            }

            cluster.stopNode(2);
            await().atMost(120, SECONDS).until(cluster::allRegionsLed);
            putAll(c, keys, "round-2", expected);
            snapshotAllRegions(cluster.node(0));
            snapshotAllRegions(cluster.node(1));
            putAll(c, keys, "round-3", expected);
            // deletes must reach the wiped node too, through the snapshot
            List<byte[]> deleted = keys.subList(2 * regions.size(), keys.size());
            CompletableFuture.allOf(deleted.stream().map(k -> IdempotentWrites.delete(c, k)).toArray(CompletableFuture[]::new)).join();
            deleted.forEach(k -> expected.put(hex(k), null));
            // the second snapshot makes jraft drop the log up to the first one: index 1 is gone on every leader
            snapshotAllRegions(cluster.node(0));
            snapshotAllRegions(cluster.node(1));
            // and some writes after the last snapshot, which come from the log once the snapshot is in
            putAll(c, keys.subList(0, regions.size()), "round-4", expected);

            Path wipedDir = Path.of(cluster.node(0).config().dataDir()).resolveSibling("node3");
            assertThat(wipedDir).isDirectory();
            deleteTree(wipedDir);
            log.clear();
            try (BoltDefaultExecutor few = BoltDefaultExecutor.shrinkTo(BOLT_THREADS)) {
                cluster.startNode(2);
                awaitCaughtUp(cluster, keys, expected, regions.size(), wipedDir, log);
            }
            // and it serves them once it leads its share again
            cluster.awaitBalanced(120);
            assertThat(cluster.node(2).leaderCount()).isEqualTo(REGIONS / 3);
            List<byte[]> got = c.multiGet(keys).join();
            for (int i = 0; i < keys.size(); i++) {
                assertThat(got.get(i)).isEqualTo(expected.get(hex(keys.get(i))));
            }
        }
    }

    private static void awaitCaughtUp(InProcessCluster cluster, List<byte[]> keys, Map<String, byte[]> expected,
                                      int regionCount, Path wipedDir, LogCapture log) throws Exception {
        KvServer wiped = cluster.node(2);
        // generous: on a loaded machine (load average 60) 120 s were once not enough; the message says how far
        // each region got, to tell a slow catch-up from a region that never installs its snapshot
        await().atMost(240, SECONDS).untilAsserted(() -> {
            List<String> differ = new ArrayList<>();
            for (byte[] k : keys) {
                if (!java.util.Arrays.equals(wiped.store().get(k), expected.get(hex(k)))) {
                    differ.add(hex(k));
                }
            }
            assertThat(differ).as(() -> differ.size() + " of " + keys.size() + " keys not (yet) as expected on the"
                    + " wiped node; per region, its applied index / the leader's:\n" + progress(cluster, wiped)).isEmpty();
        });
        // only the wiped node loads snapshots here, and it must have done so for every region; the store
        // shows the data a moment before the state machine logs the load, so the log is awaited too
        await().atMost(120, SECONDS).untilAsserted(() -> {
            Set<Integer> loaded = new TreeSet<>();
            for (String line : log.lines()) {
                Matcher m = LOADED.matcher(line);
                if (m.find()) {
                    loaded.add(Integer.parseInt(m.group(1)));
                    assertThat(Long.parseLong(m.group(2))).isGreaterThan(1);
                }
            }
            assertThat(loaded).as("regions whose snapshot the wiped node loaded").hasSize(regionCount);
        });
        for (int r = 1; r <= regionCount; r++) {
            try (var s = Files.list(wipedDir.resolve("raft").resolve("region-" + r).resolve("snapshot"))) {
                assertThat(s.map(p -> p.getFileName().toString())).anyMatch(n -> n.startsWith("snapshot_"));
            }
        }
    }

    /** Each region's applied index on {@code wiped} and on the node that leads it now. */
    private static String progress(InProcessCluster cluster, KvServer wiped) {
        StringBuilder sb = new StringBuilder();
        for (io.kvraft.server.region.Region r : wiped.host().regions()) {
            long leaderApplied = -1;
            for (int i = 0; i < cluster.size(); i++) {
                io.kvraft.server.region.Region on = cluster.node(i).host().region(r.id());
                if (on != null && on.isLeader()) {
                    leaderApplied = on.node().getLastAppliedLogIndex();
                }
            }
            sb.append(r.id()).append(": ").append(r.node() == null ? "not started" : r.node().getLastAppliedLogIndex())
                    .append(" / ").append(leaderApplied).append("  ");
        }
        return sb.toString();
    }

    private static void putAll(KvClient c, List<byte[]> keys, String round, Map<String, byte[]> expected) {
        List<CompletableFuture<Void>> acks = new ArrayList<>();
        for (byte[] k : keys) {
            byte[] v = (round + "/" + hex(k)).getBytes(StandardCharsets.UTF_8);
            acks.add(IdempotentWrites.put(c, k, v)); // sent again if a leader change leaves it unknown
            expected.put(hex(k), v);
        }
        CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new)).join();
    }

    static String hex(byte[] k) {
        StringBuilder sb = new StringBuilder();
        for (byte b : k) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }
}
