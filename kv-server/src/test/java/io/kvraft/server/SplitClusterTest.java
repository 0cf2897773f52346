package io.kvraft.server;

import io.kvraft.server.config.RaftConfig;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import io.kvraft.server.host.RegionCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import static io.kvraft.client.KvClient.sync;
import static io.kvraft.server.RegionChanges.assertAll;
import static io.kvraft.server.RegionChanges.awaitSameRegionMaps;
import static io.kvraft.server.RegionChanges.key;
import static io.kvraft.server.RegionChanges.putAll;
import static io.kvraft.server.RegionChanges.regionMap;
import static io.kvraft.server.RegionChanges.value;
import static io.kvraft.server.RaftTestSupport.snapshotAllRegions;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Regions that split, on three servers in this JVM that start with one region: by hand and by size, under
 * writes, across a restart of every node, and on a node that was down during the split and learns of it from a
 * snapshot. Every test starts a cluster of its own.
 */
@Timeout(value = 300, unit = SECONDS)
class SplitClusterTest {

    @TempDir
    Path dir;

    private static final SplitConfig MANUAL = new SplitConfig(false, null, null, null, null);

    private static InProcessCluster start(Path dir, String engine, SplitConfig split) throws Exception {
        UnaryOperator<ServerConfig> tweak = c -> c.withSplit(split);
        InProcessCluster cluster = InProcessCluster.start(3, 1, dir, engine, RaftConfig.LOG_SHARED, tweak);
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
        return cluster;
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_aRegionIsSplitByHandTwice_then_everyKeyReadsBackAndBothHalvesTakeWrites_alsoAfterEveryNodeRestarts(
            String engine) throws Exception {
        try (InProcessCluster cluster = start(dir, engine, MANUAL)) {
            KvClient client = cluster.client(); // its routes go stale with every split: it must find its way alone
            putAll(client, 2000, 0);

            List<RegionInfo> halves = sync(client.admin().split(1, key(1000)));
            assertThat(halves).hasSize(2);
            assertThat(halves.get(0).id()).isEqualTo(1);
            assertThat(halves.get(0).endKey()).isEqualTo(key(1000));
            assertThat(halves.get(0).epoch()).isEqualTo(2);
            assertThat(halves.get(1).id()).isGreaterThanOrEqualTo(65_537);
            assertThat(halves.get(1).startKey()).isEqualTo(key(1000));
            assertThat(halves.get(1).endKey().length == 0).isTrue();
            assertThat(halves.get(1).epoch()).isEqualTo(2);
            awaitSameRegionMaps(cluster, 2);
            assertAll(client, 2000, 0);

            List<RegionInfo> quarters = sync(client.admin().split(halves.get(1).id(), null)); // at about its middle key
            assertThat(quarters.get(1).id()).isNotIn(1, halves.get(1).id());
            assertThat(quarters.get(0).epoch()).isEqualTo(3);
            awaitSameRegionMaps(cluster, 3);
            putAll(client, 2000, 1);
            assertAll(client, 2000, 1);

            for (int i = 0; i < 3; i++) {
                cluster.stopNode(i);
            }
            for (int i = 0; i < 3; i++) {
                cluster.startNode(i);
            }
            awaitSameRegionMaps(cluster, 3);
            assertThat(regionMap(cluster.node(0)).values()).anyMatch(v -> v.startsWith(halves.get(1).id() + " epoch 3"));
            KvClient fresh = cluster.client();
            assertAll(fresh, 2000, 1);
            putAll(fresh, 2000, 2);
            assertAll(client, 2000, 2);
        }
    }

    /**
     * A split's new group is made off the parent's apply, after the split is recorded: a node that stops in between
     * lists the new region with no group files. It makes the group at its restart from its store (the data of the
     * new range at the split, which nothing wrote since) and takes the writes made meanwhile.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_aNodeStopsBeforeItMadeASplitOffRegionsGroup_then_itMakesItFromItsStoreAtRestartAndHasEveryWrite(
            String engine) throws Exception {
        try (InProcessCluster cluster = start(dir, engine, MANUAL)) {
            KvClient client = cluster.client();
            putAll(client, 1000, 0);
            int child = sync(client.admin().split(1, key(500))).get(1).id();
            awaitSameRegionMaps(cluster, 2);
            cluster.stopNode(2);
            // as if it had stopped before making the group: listed in its catalog, no files of the group
            Path groupDir = cluster.dataDir(2).resolve("raft").resolve("region-" + child);
            assertThat(groupDir).isDirectory();
            try (Stream<Path> walk = Files.walk(groupDir)) {
                for (Path p : (Iterable<Path>) walk.sorted(Comparator.reverseOrder())::iterator) {
                    Files.delete(p);
                }
            }
            putAll(client, 1000, 1); // the two live nodes are a majority of both regions
            cluster.startNode(2);
            assertThat(cluster.node(2).host().catalog().get(child)).isNotNull();
            awaitSameRegionMaps(cluster, 2);
            await().atMost(60, SECONDS).untilAsserted(() -> {
                for (int i = 0; i < 1000; i++) {
                    assertThat(cluster.node(2).store().get(key(i))).as("key %d on the restarted node", i)
                            .isEqualTo(value(i, 1));
                }
            });
            assertThat(groupDir.resolve("snapshot")).isDirectory();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_aNodeIsDownDuringASplitAndCatchesUpFromASnapshot_then_itEndsWithTheSameRegionsAndData(String engine)
            throws Exception {
        try (InProcessCluster cluster = start(dir, engine, MANUAL)) {
            KvClient client = cluster.client();
            putAll(client, 1000, 0);
            cluster.stopNode(2);
            List<RegionInfo> halves = sync(client.admin().split(1, key(500)));
            putAll(client, 1000, 1);
            // two snapshots on the live nodes: the parent's log no longer holds the split, so the lagging node gets it
            // from a snapshot of the parent taken after it, and the child's data from a snapshot of the child
            for (int round = 0; round < 2; round++) {
                snapshotAllRegions(cluster.node(0));
                snapshotAllRegions(cluster.node(1));
                putAll(client, 1000, 2 + round);
            }
            cluster.startNode(2);
            awaitSameRegionMaps(cluster, 2);
            assertThat(cluster.node(2).host().catalog().get(halves.get(1).id())).isNotNull();
            // the lagging node's own store ends with the latest data of both halves
            await().atMost(60, SECONDS).untilAsserted(() -> {
                for (int i = 0; i < 1000; i++) {
                    assertThat(cluster.node(2).store().get(key(i))).as("key %d on the lagging node", i)
                            .isEqualTo(value(i, 3));
                }
            });
        }
    }

    @Test
    void when_keysAreWrittenWhileTheRegionSplitsThreeTimes_then_theClientSeesNoErrorAndEveryAckedWriteReadsBack()
            throws Exception {
        try (InProcessCluster cluster = start(dir, "memory", MANUAL)) {
            KvClient client = cluster.client();
            try (RegionChanges.Writers writers = new RegionChanges.Writers(client, 4, 4000)) {
                writers.awaitMore(500);
                int right = sync(client.admin().split(1, key(2000))).get(1).id();
                sync(client.admin().split(1, key(1000)));
                sync(client.admin().split(right, key(3000)));
                awaitSameRegionMaps(cluster, 4);
                writers.awaitMore(500);
                writers.stopAndCheck();
                writers.assertAckedReadBack(client);
            }
        }
    }

    @Test
    void when_aSplitOffRegionHasItsFirstLeader_then_everyReplicaRunsWithTheConfiguredTimeoutAndJraftsElectionDelay()
            throws Exception {
        try (InProcessCluster cluster = start(dir, "memory", MANUAL)) {
            KvClient client = cluster.client();
            int child = sync(client.admin().split(1, key(1000))).get(1).id();
            awaitSameRegionMaps(cluster, 2);
            cluster.leaderOf(child);
            int configured = cluster.node(0).config().raft().electionTimeoutMs();
            // the replica on the parent's leader campaigned first with a short timeout and jraft's random delay cut to
            // 20 ms; once the region has a leader both are back, on every replica (set in its start options instead,
            // they fixed the group's heartbeat interval and read-index scanner for as long as it ran)
            await().atMost(30, SECONDS).untilAsserted(() -> {
                for (int i = 0; i < cluster.size(); i++) {
                    com.alipay.sofa.jraft.option.NodeOptions o = cluster.node(i).host().region(child).node().getOptions();
                    assertThat(o.getElectionTimeoutMs()).as("node %d's election timeout", i).isEqualTo(configured);
                    assertThat(o.getRaftOptions().getMaxElectionDelayMs()).as("node %d's election delay", i)
                            .isEqualTo(new com.alipay.sofa.jraft.option.RaftOptions().getMaxElectionDelayMs());
                }
            });
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_theRegionOfASequenceAndALockSplits_then_theSequenceNeverRepeatsAndTheLockIsStillHeldWithItsToken(
            String engine) throws Exception {
        try (InProcessCluster cluster = start(dir, engine, MANUAL)) {
            KvClient client = cluster.client();
            byte[] seq = "seq-z".getBytes(StandardCharsets.US_ASCII);
            byte[] lockKey = "lock-z".getBytes(StandardCharsets.US_ASCII);
            io.kvraft.client.SequenceRange before = sync(client.getSequence(seq, 100));
            io.kvraft.client.LockHandle held = sync(client.tryLock(lockKey, 60_000, 0));
            assertThat(held).isNotNull();
            // both keys go to the new region ("l..." and "s..." are above "b")
            int child = sync(client.admin().split(1, "b".getBytes(StandardCharsets.US_ASCII))).get(1).id();
            awaitSameRegionMaps(cluster, 2);
            assertThat(cluster.regionOf(seq)).isEqualTo(child);

            io.kvraft.client.SequenceRange after = sync(client.getSequence(seq, 100));
            assertThat(after.start()).isGreaterThanOrEqualTo(before.end());
            // the lock came along with its holder and token: another holder is refused, the holder's release works
            KvClient other = cluster.client(); // closed with the cluster
            assertThat(sync(other.tryLock(lockKey, 60_000, 0))).isNull();
            assertThat(sync(client.lockInfo(lockKey)).token()).isEqualTo(held.token());
            held.close();
            await().atMost(30, SECONDS).until(() -> sync(client.lockInfo(lockKey)).free());
        }
    }

    @Test
    void when_regionsGrowPastSplitMaxKeys_then_theyAreSplitAutomatically() throws Exception {
        try (InProcessCluster cluster = start(dir, "rocksdb", new SplitConfig(true, 500L, null, null, 200))) {
            KvClient client = cluster.client();
            putAll(client, 4000, 0);
            await().atMost(120, SECONDS).untilAsserted(() ->
                    assertThat(cluster.node(0).host().regions()).hasSizeGreaterThanOrEqualTo(4));
            assertAll(client, 4000, 0);
            for (int i = 0; i < 3; i++) {
                assertThat(cluster.node(i).host().catalog().entries()).hasSizeGreaterThanOrEqualTo(4);
            }
        }
    }

    @Test
    void when_aRegionServesMoreOpsPerSecondThanSplitMaxOpsPerSecond_then_itIsSplitByLoad() throws Exception {
        try (InProcessCluster cluster = start(dir, "memory", new SplitConfig(true, null, null, 200L, 500))) {
            KvClient client = cluster.client();
            putAll(client, 100, 0); // few keys, far below maxKeys and maxBytes: only the load can split
            await().atMost(120, SECONDS).untilAsserted(() -> {
                for (int i = 0; i < 100; i++) {
                    sync(client.get(key(i)));
                }
                assertThat(cluster.node(0).host().regions()).hasSizeGreaterThanOrEqualTo(2);
            });
            assertAll(client, 100, 0);
        }
    }

    @Test
    void when_aSplitIsAskedWithBadInput_then_typedErrorsAndNothingChanges() throws Exception {
        try (InProcessCluster cluster = start(dir, "memory", MANUAL)) {
            KvClient client = cluster.client();
            putAll(client, 10, 0);
            int right = sync(client.admin().split(1, key(5))).get(1).id();
            awaitSameRegionMaps(cluster, 2);
            Map<String, String> before = regionMap(cluster.node(0));

            assertThatThrownBy(() -> sync(client.admin().split(right, key(5)))) // its own start
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                    .hasMessageContaining("not strictly inside");
            assertThatThrownBy(() -> sync(client.admin().split(1, key(7)))) // in the other region
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
            assertThatThrownBy(() -> sync(client.admin().split(4242, null)))
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.REGION_NOT_FOUND));
            assertThatThrownBy(() -> sync(client.admin().split(1, new byte[cluster.node(0).config().limits().maxKeyBytes() + 1])))
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
            sync(client.deleteRange(key(0), key(5)));
            // the middle key is looked up on the leader, which may be new and not have applied the delete yet
            await().atMost(30, SECONDS).until(() -> java.util.stream.IntStream.range(0, 3)
                    .allMatch(n -> cluster.node(n).store().approximateCount(cluster.node(n).host().region(1).range()) == 0));
            assertThatThrownBy(() -> sync(client.admin().split(1, null))) // no keys left to find a middle in
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                    .hasMessageContaining("too few keys");

            assertThat(regionMap(cluster.node(0))).isEqualTo(before);
            assertThat(cluster.node(0).host().catalog().entries()).extracting(RegionCatalog.Entry::id)
                    .containsExactly(1, right);
        }
    }
}
