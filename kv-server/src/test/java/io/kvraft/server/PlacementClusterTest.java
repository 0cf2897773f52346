package io.kvraft.server;

import io.kvraft.server.config.RaftConfig;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.ReplicationConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Five servers in this JVM with {@code replication.factor: 3}: each region has its replicas on three of the five
 * nodes, clients find every region though no node lists them all, a split keeps the new region on its parent's nodes,
 * regions on different nodes do not merge, and a node's loss leaves every region a majority.
 */
@Timeout(value = 300, unit = SECONDS)
class PlacementClusterTest {

    private static final int NODES = 5;
    private static final int REGIONS = 10;
    private static final int KEYS = 400;

    @TempDir
    Path dir;

    private InProcessCluster start() throws Exception {
        InProcessCluster cluster = InProcessCluster.start(NODES, REGIONS, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withReplication(new ReplicationConfig(3)).withSplit(new SplitConfig(false, null, null, null, null))
                        .withPlacement(new ServerConfig.PlacementConfig(false, null, null, null))); // the layout's placement only
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
        return cluster;
    }

    private static byte[] key(int i) {
        return SpreadKeys.key(i);
    }

    private static byte[] value(int i, int round) {
        return ("v" + i + "-" + round).getBytes(StandardCharsets.US_ASCII);
    }

    private static void putAll(KvClient client, int round) {
        List<CompletableFuture<Void>> puts = new ArrayList<>();
        for (int i = 0; i < KEYS; i++) {
            puts.add(IdempotentWrites.put(client, key(i), value(i, round)));
        }
        puts.forEach(KvClient::sync);
    }

    private static void assertAll(KvClient client, int round) {
        for (int i = 0; i < KEYS; i++) {
            assertThat(sync(client.get(key(i)))).as("key %d", i).isEqualTo(value(i, round));
        }
    }

    /** Every region is on exactly the nodes it names as its peers, three of them. */
    private static void assertPlacement(InProcessCluster cluster, int regions) {
        Set<Integer> ids = new HashSet<>();
        for (int i = 0; i < cluster.size(); i++) {
            if (cluster.node(i) == null) {
                continue;
            }
            for (Region r : cluster.node(i).host().regions()) {
                ids.add(r.id());
                assertThat(r.peers()).as("region %d's peers", r.id()).hasSize(3).doesNotHaveDuplicates()
                        .contains(cluster.node(i).config().endpoint());
                assertThat(cluster.hostsOf(r.id())).as("nodes hosting region %d", r.id())
                        .containsExactlyInAnyOrderElementsOf(r.peers());
            }
        }
        assertThat(ids).hasSize(regions);
    }

    @Test
    void when_eachRegionIsOnThreeOfFiveNodes_then_everyKeyReadsBack_theLeadersSpread_andTheClientSeesEveryRegion()
            throws Exception {
        try (InProcessCluster cluster = start()) {
            assertPlacement(cluster, REGIONS);
            for (int i = 0; i < NODES; i++) {
                assertThat(cluster.node(i).host().regions()).as("regions on node %d", i).hasSize(REGIONS * 3 / NODES);
            }
            KvClient client = cluster.client();
            putAll(client, 1);
            assertAll(client, 1);

            List<RegionInfo> listed = sync(client.admin().regions());
            assertThat(listed).extracting(RegionInfo::id).containsExactlyInAnyOrder(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
            assertThat(listed).allSatisfy(r -> assertThat(r.peers()).hasSize(3));

            cluster.awaitBalanced(90); // 2 leaders per node: the balancer asks peers for their own counts
        }
    }

    @Test
    void when_aRegionSplits_then_theNewRegionIsOnItsParentsNodes_andRegionsOnOtherNodesDoNotMerge() throws Exception {
        try (InProcessCluster cluster = start()) {
            KvClient client = cluster.client();
            putAll(client, 1);
            Set<String> parentHosts = cluster.hostsOf(1);

            List<RegionInfo> halves = sync(client.admin().split(1, new byte[0]));

            int child = halves.get(1).id();
            await().atMost(60, SECONDS).until(() -> cluster.hostsOf(child).size() == 3 && cluster.allRegionsLed());
            assertThat(cluster.hostsOf(child)).isEqualTo(parentHosts);
            assertThat(halves.get(1).peers()).containsExactlyInAnyOrderElementsOf(parentHosts);
            assertPlacement(cluster, REGIONS + 1);
            putAll(client, 2);
            assertAll(client, 2);

            // regions 1 (now cut at the split) and its child share their nodes: they merge back
            RegionInfo merged = sync(client.admin().merge(1, child));
            assertThat(merged.peers()).containsExactlyInAnyOrderElementsOf(parentHosts);
            await().atMost(60, SECONDS).until(() -> cluster.hostsOf(child).isEmpty());
            // regions 1 and 2 are on nodes 1-3 and 2-4: refused, and nothing changes
            Set<String> before = cluster.hostsOf(2);
            assertThatThrownBy(() -> sync(client.admin().merge(1, 2)))
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                    .hasMessageContaining("only regions on the same peers merge");
            assertThat(cluster.hostsOf(2)).isEqualTo(before);
            assertPlacement(cluster, REGIONS);
            assertAll(client, 2);
        }
    }

    @Test
    void when_aNodeStops_then_everyRegionKeepsAMajority_andTheNodeCatchesUpWhenItReturns() throws Exception {
        try (InProcessCluster cluster = start()) {
            KvClient client = cluster.client();
            putAll(client, 1);

            cluster.stopNode(0);
            await().atMost(60, SECONDS).until(cluster::allRegionsLed);
            putAll(client, 2);
            assertAll(client, 2);

            cluster.startNode(0);
            await().atMost(60, SECONDS).until(cluster::allRegionsLed);
            assertPlacement(cluster, REGIONS);
            for (Region r : cluster.node(0).host().regions()) { // node 0's replicas applied the writes made without it
                Region other = cluster.node(cluster.leaderOf(r.id())).host().region(r.id());
                await().atMost(60, SECONDS).until(() -> r.info().getAppliedIndex() >= other.info().getAppliedIndex());
            }
            cluster.stopNode(1); // node 0's replicas now count towards the majorities
            await().atMost(60, SECONDS).until(cluster::allRegionsLed);
            assertAll(client, 2);
        }
    }
}
