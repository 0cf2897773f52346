package io.kvraft.server;

import io.kvraft.server.config.RaftConfig;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.MergeConfig;
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
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

import static io.kvraft.client.KvClient.sync;
import static io.kvraft.server.RegionChanges.assertAll;
import static io.kvraft.server.RegionChanges.awaitSameRegionMaps;
import static io.kvraft.server.RegionChanges.key;
import static io.kvraft.server.RegionChanges.putAll;
import static io.kvraft.server.RegionChanges.regionMap;
import static io.kvraft.server.RegionChanges.value;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Regions that merge, on three servers in this JVM that start with one region and split it by hand: by hand, under
 * writes, across a restart of every node, rolled back when a replica cannot take part, automatically when small,
 * and refused with typed errors for bad input. Every test starts a cluster of its own.
 */
@Timeout(value = 300, unit = SECONDS)
class MergeClusterTest {

    @TempDir
    Path dir;

    private static final SplitConfig NO_AUTO_SPLIT = new SplitConfig(false, null, null, null, null);

    private static InProcessCluster start(Path dir, String engine, MergeConfig merge) throws Exception {
        UnaryOperator<ServerConfig> tweak = c -> c.withSplit(NO_AUTO_SPLIT).withMerge(merge);
        InProcessCluster cluster = InProcessCluster.start(3, 1, dir, engine, RaftConfig.LOG_SHARED, tweak);
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
        return cluster;
    }

    private static Path regionDir(KvServer node, int region) {
        return Path.of(node.config().dataDir(), "raft", "region-" + region);
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_twoRegionsAreMergedByHand_then_everyKeyReadsBack_theRightRegionIsGoneEverywhere_evenAfterEveryNodeRestarts(
            String engine) throws Exception {
        try (InProcessCluster cluster = start(dir, engine, MergeConfig.DEFAULT)) {
            KvClient client = cluster.client(); // its routes go stale with the split and the merge: it must find its way
            putAll(client, 2000, 0);
            byte[] seq = "k01500-seq".getBytes(StandardCharsets.US_ASCII);
            byte[] lockKey = "k01500-lock".getBytes(StandardCharsets.US_ASCII);
            List<RegionInfo> halves = sync(client.admin().split(1, key(1000)));
            int right = halves.get(1).id();
            awaitSameRegionMaps(cluster, 2);
            io.kvraft.client.SequenceRange before = sync(client.getSequence(seq, 100));
            io.kvraft.client.LockHandle held = sync(client.tryLock(lockKey, 60_000, 0));
            assertThat(held).isNotNull();
            putAll(client, 2000, 1);

            RegionInfo merged = sync(client.admin().merge(1, right));
            assertThat(merged.id()).isEqualTo(1);
            assertThat(merged.startKey().length == 0).isTrue();
            assertThat(merged.endKey().length == 0).isTrue();
            assertThat(merged.epoch()).isGreaterThan(halves.get(1).epoch() + 1);
            awaitSameRegionMaps(cluster, 1);
            for (int i = 0; i < 3; i++) {
                KvServer node = cluster.node(i);
                await().atMost(60, SECONDS).untilAsserted(() -> {
                    assertThat(node.host().catalog().entries()).extracting(RegionCatalog.Entry::id).containsExactly(1);
                    assertThat(regionDir(node, right)).doesNotExist();
                });
            }
            assertAll(client, 2000, 1);
            // the sequence and the lock of the merged-in range came along
            assertThat(sync(client.getSequence(seq, 100)).start()).isGreaterThanOrEqualTo(before.end());
            assertThat(sync(client.lockInfo(lockKey)).token()).isEqualTo(held.token());
            putAll(client, 2000, 2);
            held.close(); // before the restart: its renewals would fail while every node is down

            for (int i = 0; i < 3; i++) {
                cluster.stopNode(i);
            }
            for (int i = 0; i < 3; i++) {
                cluster.startNode(i);
            }
            awaitSameRegionMaps(cluster, 1);
            assertThat(cluster.node(0).host().region(1).epoch()).isEqualTo(merged.epoch());
            KvClient fresh = cluster.client();
            assertAll(fresh, 2000, 2);
            putAll(fresh, 2000, 3);
            assertAll(client, 2000, 3);
        }
    }

    @Test
    void when_keysAreWrittenWhileRegionsSplitAndMerge_then_theClientSeesNoErrorAndEveryAckedWriteReadsBack()
            throws Exception {
        try (InProcessCluster cluster = start(dir, "rocksdb", MergeConfig.DEFAULT)) {
            KvClient client = cluster.client();
            int right = sync(client.admin().split(1, key(2000))).get(1).id();
            awaitSameRegionMaps(cluster, 2);
            try (RegionChanges.Writers writers = new RegionChanges.Writers(client, 4, 4000)) {
                writers.awaitMore(500);
                sync(client.admin().merge(1, right));
                awaitSameRegionMaps(cluster, 1);
                int again = sync(client.admin().split(1, key(3000))).get(1).id();
                awaitSameRegionMaps(cluster, 2);
                sync(client.admin().merge(1, again));
                awaitSameRegionMaps(cluster, 1);
                writers.awaitMore(500);
                writers.stopAndCheck();
                writers.assertAckedReadBack(client);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_aReplicaIsDownDuringAMerge_then_itIsRolledBackWhole_andTheRegionTakesWritesAgain_thenMergesOnceItIsBack(
            String engine) throws Exception {
        try (InProcessCluster cluster = start(dir, engine, new MergeConfig(false, null, null, 200, 1500))) {
            KvClient client = cluster.client();
            putAll(client, 1000, 0);
            int right = sync(client.admin().split(1, key(500))).get(1).id();
            awaitSameRegionMaps(cluster, 2);
            cluster.stopNode(2);

            // rolled back by this call, or (when a leader moved meanwhile) by the new leader after merge.timeoutMs
            assertThatThrownBy(() -> sync(client.admin().merge(1, right)))
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE))
                    .hasMessageContaining("did not hold its final data");
            for (int i = 0; i < 2; i++) {
                assertThat(cluster.node(i).host().regions()).hasSize(2);
            }
            await().atMost(30, SECONDS).until(() -> cluster.node(0).host().region(right).mergingInto() == 0
                    && cluster.node(1).host().region(right).mergingInto() == 0);
            putAll(client, 1000, 1); // both regions take writes again
            assertAll(client, 1000, 1);

            cluster.startNode(2);
            awaitSameRegionMaps(cluster, 2);
            RegionInfo merged = sync(client.admin().merge(1, right));
            assertThat(merged.endKey().length == 0).isTrue();
            awaitSameRegionMaps(cluster, 1);
            await().atMost(60, SECONDS).untilAsserted(() -> {
                for (int i = 0; i < 1000; i++) {
                    assertThat(cluster.node(2).store().get(key(i))).as("key %d on the node that was down", i)
                            .isEqualTo(value(i, 1));
                }
            });
            assertAll(client, 1000, 1);
        }
    }

    @Test
    void when_adjacentRegionsAreSmall_then_theyAreMergedAutomatically() throws Exception {
        try (InProcessCluster cluster = start(dir, "memory", new MergeConfig(true, 1000L, null, 200, null))) {
            KvClient client = cluster.client();
            putAll(client, 300, 0);
            // the splits race the automatic merges: whatever is split is merged back, down to one region
            int a = sync(client.admin().split(1, key(100))).get(1).id();
            await().atMost(120, SECONDS).untilAsserted(() -> {
                for (int i = 0; i < 3; i++) {
                    assertThat(cluster.node(i).host().regions()).hasSize(1);
                    assertThat(cluster.node(i).host().region(a)).isNull();
                }
            });
            assertAll(client, 300, 0);
        }
    }

    @Test
    void when_aMergeIsAskedWithBadInput_then_typedErrorsAndNothingChanges() throws Exception {
        try (InProcessCluster cluster = start(dir, "memory", MergeConfig.DEFAULT)) {
            KvClient client = cluster.client();
            putAll(client, 30, 0);
            int mid = sync(client.admin().split(1, key(10))).get(1).id();
            awaitSameRegionMaps(cluster, 2);
            int last = sync(client.admin().split(mid, key(20))).get(1).id();
            awaitSameRegionMaps(cluster, 3);
            Map<String, String> before = regionMap(cluster.node(0));

            assertThatThrownBy(() -> sync(client.admin().merge(1, last))) // not adjacent
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                    .hasMessageContaining("not adjacent");
            assertThatThrownBy(() -> sync(client.admin().merge(mid, 1))) // the wrong way round
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                    .hasMessageContaining("merge 1 " + mid);
            assertThatThrownBy(() -> sync(client.admin().merge(1, 1)))
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
            assertThatThrownBy(() -> sync(client.admin().merge(1, 4242)))
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.REGION_NOT_FOUND));
            assertThatThrownBy(() -> sync(client.admin().merge(4242, 1)))
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.REGION_NOT_FOUND));

            assertThat(regionMap(cluster.node(0))).isEqualTo(before);
            assertAll(client, 30, 0);
            for (int i = 0; i < 3; i++) {
                assertThat(Files.isDirectory(regionDir(cluster.node(i), last))).isTrue();
            }
        }
    }
}
