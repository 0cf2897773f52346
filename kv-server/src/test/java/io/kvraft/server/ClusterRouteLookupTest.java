package io.kvraft.server;

import io.kvraft.server.config.RaftConfig;
import io.kvraft.client.KvClient;
import io.kvraft.client.admin.MapRegions;
import io.kvraft.client.admin.MergedRegions;
import io.kvraft.client.cli.KvCtl;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.RegionViews;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.PlacementConfig;
import io.kvraft.server.config.ServerConfig.ReplicationConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Route lookups from the cluster map ({@code RegionsRequest.cluster}) on five nodes with {@code replication.factor: 3}:
 * a node that holds only some regions answers every region, relaying the map leader's view; a client configured with
 * that one node routes every key, before and after a split; {@code regions --from-map} lists them all. The map records
 * every region (range, epoch, conf version, voters) in its Raft group, so without a leader of the map a node answers
 * from its own copy, and clients still route every key whose region has a majority.
 */
@Timeout(value = 300, unit = SECONDS)
class ClusterRouteLookupTest {

    private static final int NODES = 5;
    private static final int REGIONS = 10;
    private static final int KEYS = 300;
    private static final RegionsRequest LOOKUP = RegionsRequest.newBuilder().setCluster(true).build();

    @TempDir
    Path dir;

    private static byte[] key(int i) {
        return SpreadKeys.key(i);
    }

    private static byte[] value(int i, int round) {
        return ("v" + i + "-" + round).getBytes(StandardCharsets.US_ASCII);
    }

    private static void putAndReadAll(KvClient client, int round) {
        List<CompletableFuture<Void>> puts = new ArrayList<>();
        for (int i = 0; i < KEYS; i++) {
            puts.add(IdempotentWrites.put(client, key(i), value(i, round)));
        }
        puts.forEach(KvClient::sync);
        for (int i = 0; i < KEYS; i++) {
            assertThat(sync(client.get(key(i)))).as("key %d", i).isEqualTo(value(i, round));
        }
    }

    private static KvServer metaLeader(InProcessCluster cluster) {
        return await().atMost(30, SECONDS).until(() -> IntStream.range(0, cluster.size()).mapToObj(cluster::node)
                .filter(s -> s != null && s.meta().group().isLeader()).findFirst().orElse(null), s -> s != null);
    }

    private static RegionsResponse lookUp(Transport t, String node) {
        return t.<RegionsResponse>call(node, LOOKUP, 10_000).join();
    }

    private static boolean ok(RegionsResponse r) {
        return !r.hasError() || r.getError().getCode() == ErrorCode.OK;
    }

    /** Every region once, tiling the key space, each on the three nodes that hold it and with one of them its leader. */
    private static void assertEveryRegion(InProcessCluster cluster, RegionsResponse resp, int regions) {
        assertThat(ok(resp)).as("answer %s", resp.getError()).isTrue();
        List<RegionInfo> listed = resp.getRegionsList();
        assertThat(listed).extracting(RegionInfo::getId).doesNotHaveDuplicates().hasSize(regions);
        RegionViews views = new RegionViews();
        views.add(listed);
        assertThat(views.covers()).as("the answer tiles the key space: %s", listed).isTrue();
        for (RegionInfo r : listed) {
            assertThat(r.getPeersList()).as("region %d's peers", r.getId()).hasSize(3)
                    .containsExactlyInAnyOrderElementsOf(cluster.hostsOf(r.getId()));
            assertThat(r.getLeader()).as("region %d's leader", r.getId()).isNotEmpty().isIn(r.getPeersList());
        }
    }

    /** As above, for the client's answer: every region once, tiling the key space, on its three nodes, led by one. */
    private static void assertEveryRegion(InProcessCluster cluster, MapRegions resp, int regions) {
        List<io.kvraft.client.admin.RegionInfo> listed = resp.regions();
        assertThat(listed).extracting(io.kvraft.client.admin.RegionInfo::id).doesNotHaveDuplicates().hasSize(regions);
        assertThat(new MergedRegions().add(listed).covers()).as("the answer tiles the key space: %s", listed).isTrue();
        for (io.kvraft.client.admin.RegionInfo r : listed) {
            assertThat(r.peers()).as("region %d's peers", r.id()).hasSize(3)
                    .containsExactlyInAnyOrderElementsOf(cluster.hostsOf(r.id()));
            assertThat(r.leader()).as("region %d's leader", r.id()).isNotEmpty().isIn(r.peers());
        }
    }

    @Test
    void when_aNodeHoldingSomeRegionsIsAskedForTheClusterMapsRoutes_then_itAnswersEveryRegion_andAClientOfThatNodeRoutesEveryKey()
            throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(NODES, REGIONS, dir, "memory",
                RaftConfig.LOG_SHARED, c -> c.withReplication(new ReplicationConfig(3))
                        .withSplit(new SplitConfig(false, null, null, null, null))
                        .withPlacement(new PlacementConfig(false, 200, null, null))); // reports every 200 ms, no moves
             Transport t = new Transport(io.kvraft.common.config.TlsConfig.OFF)) {
            await().atMost(60, SECONDS).until(cluster::allRegionsLed);
            String leader = metaLeader(cluster).config().endpoint();
            int asked = IntStream.range(0, NODES).filter(i -> !cluster.endpoints().get(i).equals(leader)).findFirst()
                    .orElseThrow();
            String node = cluster.endpoints().get(asked);
            List<Integer> held = cluster.node(asked).host().regions().stream().map(Region::id).toList();
            assertThat(held).as("node %s holds only some regions", node).hasSize(REGIONS * 3 / NODES);

            // the default request is as before: the node's own regions, no map leader named
            RegionsResponse own = t.<RegionsResponse>call(node, RegionsRequest.getDefaultInstance(), 10_000).join();
            assertThat(own.getRegionsList()).extracting(RegionInfo::getId).containsExactlyInAnyOrderElementsOf(held);
            assertThat(own.getMapLeader()).isEmpty();
            assertThat(own.getStoreId()).isNotEmpty();

            // a lookup of a node that does not lead the map: relayed to its leader, every region in the answer (once
            // the leader has every node's report and the leaders are settled)
            await().atMost(30, SECONDS).until(() -> {
                RegionsResponse r = lookUp(t, node);
                return ok(r) && r.getRegionsCount() == REGIONS
                        && r.getRegionsList().stream().noneMatch(x -> x.getLeader().isEmpty());
            });
            RegionsResponse relayed = lookUp(t, node);
            assertEveryRegion(cluster, relayed, REGIONS);
            assertThat(relayed.getMapLeader()).as("the map's leader").isEqualTo(leader);
            assertThat(relayed.getNode()).as("the node asked").isEqualTo(node);

            RegionsResponse direct = lookUp(t, leader);
            assertEveryRegion(cluster, direct, REGIONS);
            assertThat(direct.getMapLeader()).isEqualTo(leader);

            // a relayed lookup is answered where it lands, never relayed again
            RegionsResponse hop = t.<RegionsResponse>call(node, LOOKUP.toBuilder().setRelayed(true).build(), 10_000)
                    .join();
            assertThat(hop.getError().getCode()).isEqualTo(ErrorCode.NOT_LEADER);
            assertThat(hop.getError().getLeaderHint()).isEqualTo(leader);
            assertThat(hop.getRegionsList()).isEmpty();

            // with nothing changing, the map's leader writes no record after the first (reports every 200 ms)
            KvServer mapLeader = metaLeader(cluster);
            await().atMost(30, SECONDS).until(() -> mapLeader.meta().group().map().getRegionsCount() == REGIONS);
            java.util.concurrent.atomic.AtomicLong seen = new java.util.concurrent.atomic.AtomicLong(-1);
            await().during(3, SECONDS).atMost(30, SECONDS).until(() -> {
                long version = mapLeader.meta().group().map().getVersion();
                return seen.getAndSet(version) == version; // unchanged since the last look, for 15 report intervals
            });
            assertThat(mapLeader.meta().group().map().getRegionsList()).extracting(RegionInfo::getConfVer)
                    .as("every region's voters recorded").allMatch(v -> v > 0);

            // a client that knows only this node routes every key, and sees the map's regions
            KvClient client = cluster.client(ClientConfig.of(List.of(node)));
            putAndReadAll(client, 1);
            MapRegions fromClient = sync(client.admin().mapRegions());
            assertEveryRegion(cluster, fromClient, REGIONS);

            // a split: the client's routes go stale and are looked up again; the map follows within a report
            List<io.kvraft.client.admin.RegionInfo> halves = sync(client.admin().split(held.get(0), new byte[0]));
            int child = halves.get(1).id();
            await().atMost(60, SECONDS).until(() -> cluster.hostsOf(child).size() == 3 && cluster.allRegionsLed());
            putAndReadAll(client, 2);
            await().atMost(30, SECONDS).until(() -> {
                RegionsResponse r = lookUp(t, node);
                return ok(r) && r.getRegionsCount() == REGIONS + 1
                        && r.getRegionsList().stream().noneMatch(x -> x.getLeader().isEmpty());
            });
            RegionsResponse after = lookUp(t, node);
            assertEveryRegion(cluster, after, REGIONS + 1);
            // the map's record, in every node's copy: both halves of the split, at the split's epoch, on their nodes
            for (int i = 0; i < NODES; i++) {
                KvServer copy = cluster.node(i);
                await().atMost(30, SECONDS).until(() -> copy.meta().group().map().getRegionsCount() == REGIONS + 1);
                List<RegionInfo> record = copy.meta().group().map().getRegionsList();
                assertThat(record).filteredOn(r -> r.getId() == held.get(0) || r.getId() == child)
                        .extracting(RegionInfo::getEpoch).containsOnly(halves.get(0).epoch());
                assertThat(record).allSatisfy(r -> {
                    assertThat(r.getLeader()).isEmpty();
                    assertThat(r.getPeersList()).containsExactlyInAnyOrderElementsOf(cluster.hostsOf(r.getId()));
                });
            }
            assertThat(after.getRegionsList()).filteredOn(r -> r.getId() == held.get(0)).singleElement()
                    .extracting(RegionInfo::getEpoch).isEqualTo(halves.get(0).epoch());

            // the CLI, given only this node
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int code = KvCtl.run(new String[] {"--servers", node, "regions", "--from-map"}, new PrintWriter(out, true),
                    new PrintWriter(err, true));
            assertThat(code).as("exit code; stderr: %s", err).isZero();
            List<String> lines = out.toString().lines().toList();
            assertThat(lines.get(0)).isEqualTo("# " + (REGIONS + 1) + " regions as the cluster map's leader " + leader
                    + " last heard of them from the nodes (asked " + node + ")");
            assertThat(lines).hasSize(REGIONS + 3); // the line above, the header, one row per region
        }
    }

    @Test
    void when_theMapHasNoLeader_then_aNodeAnswersFromItsCopyOfTheMap_andAClientOfThatNodeRoutesEveryKey()
            throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(NODES, REGIONS, dir, "memory",
                RaftConfig.LOG_SHARED, c -> c.withReplication(new ReplicationConfig(3))
                        .withSplit(new SplitConfig(false, null, null, null, null))
                        .withPlacement(new PlacementConfig(false, 200, null, null)));
             Transport t = new Transport(io.kvraft.common.config.TlsConfig.OFF)) {
            await().atMost(60, SECONDS).until(cluster::allRegionsLed);
            KvServer leader = metaLeader(cluster);
            List<String> voters = await().atMost(30, SECONDS).until(() -> leader.meta().group().voters(),
                    v -> v.size() == 3);
            // a node that is no voter of the map: it relays lookups while the map has a leader
            int asked = IntStream.range(0, NODES).filter(i -> !voters.contains(cluster.endpoints().get(i))).findFirst()
                    .orElseThrow();
            String node = cluster.endpoints().get(asked);
            await().atMost(30, SECONDS).until(() -> ok(lookUp(t, node)) && !lookUp(t, node).getFromCopy());
            // its copy of the map records every region
            await().atMost(30, SECONDS).until(() -> cluster.node(asked).meta().group().map().getRegionsCount() == REGIONS);

            // two of the map's three voters stop: the map has no leader (nor has a region on both)
            List<Integer> stopped = IntStream.range(0, NODES).filter(i -> voters.contains(cluster.endpoints().get(i)))
                    .limit(2).boxed().toList();
            java.util.Map<Integer, java.util.Set<String>> hosts = new java.util.HashMap<>();
            for (int id = 1; id <= REGIONS; id++) {
                hosts.put(id, cluster.hostsOf(id));
            }
            stopped.forEach(cluster::stopNode);
            List<String> down = stopped.stream().map(i -> cluster.endpoints().get(i)).toList();

            // the node answers from its own copy: every region, on the nodes that hold it, leaders only of its own
            await().atMost(60, SECONDS).until(() -> lookUp(t, node).getFromCopy());
            RegionsResponse copy = lookUp(t, node);
            assertThat(ok(copy)).as("%s", copy.getError()).isTrue();
            assertThat(copy.getMapLeader()).isEmpty();
            assertThat(copy.getNode()).isEqualTo(node);
            assertThat(copy.getRegionsList()).extracting(RegionInfo::getId).doesNotHaveDuplicates().hasSize(REGIONS);
            RegionViews tiles = new RegionViews();
            tiles.add(copy.getRegionsList());
            assertThat(tiles.covers()).as("the copy tiles the key space: %s", copy.getRegionsList()).isTrue();
            for (RegionInfo r : copy.getRegionsList()) {
                assertThat(r.getPeersList()).as("region %d's peers", r.getId())
                        .containsExactlyInAnyOrderElementsOf(hosts.get(r.getId()));
            }

            // the CLI says where the answer came from
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int code = KvCtl.run(new String[] {"--servers", node, "regions", "--from-map"}, new PrintWriter(out, true),
                    new PrintWriter(err, true));
            assertThat(code).as("exit code; stderr: %s", err).isZero();
            assertThat(out.toString().lines().findFirst().orElseThrow()).isEqualTo("# " + REGIONS + " regions from "
                    + node + "'s copy of the cluster map (its leader did not answer; leaders only of the regions "
                    + node + " holds)");

            // a client that knows only that node routes every key whose region has a majority left
            KvClient client = cluster.client(ClientConfig.of(List.of(node)));
            assertThat(sync(client.admin().mapRegions()).regions()).hasSize(REGIONS);
            int written = 0;
            for (int i = 0; i < KEYS; i++) {
                java.util.Set<String> live = new java.util.HashSet<>(hosts.get(cluster.regionOf(key(i))));
                live.removeAll(down);
                if (live.size() >= 2) { // the region has a majority
                    sync(IdempotentWrites.put(client, key(i), value(i, 1)));
                    assertThat(sync(client.get(key(i)))).isEqualTo(value(i, 1));
                    written++;
                }
            }
            assertThat(written).as("keys in regions with a majority left").isPositive();

            // a relayed request is never answered from a copy: the relaying node falls back to its own instead
            RegionsResponse hop = t.<RegionsResponse>call(node, LOOKUP.toBuilder().setRelayed(true).build(), 10_000)
                    .join();
            assertThat(hop.getError().getCode()).isIn(ErrorCode.NO_LEADER, ErrorCode.NOT_LEADER);
            assertThat(hop.getRegionsList()).isEmpty();
        }
    }
}
