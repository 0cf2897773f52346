package io.kvraft.server;

import io.kvraft.server.config.RaftConfig;
import io.kvraft.client.KvClient;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ClusterRequest;
import io.kvraft.common.proto.KvProto.ClusterResponse;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.NodeStateRequest;
import io.kvraft.common.proto.KvProto.NodeStateResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ClusterConfig;
import io.kvraft.server.config.ServerConfig.PlacementConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The cluster map and placement in one JVM: two nodes join a loaded 3-node cluster and replicas move onto them until
 * every node holds as many as the others (within one); a drained node ends holding nothing, not even a voter of the
 * map, and once removed it is refused when it comes back with its data; bad requests change nothing.
 */
@Timeout(value = 300, unit = SECONDS)
class MembershipClusterTest {

    private static final int REGIONS = 6;
    private static final int KEYS = 300;

    @TempDir
    Path dir;

    private static ServerConfig tune(ServerConfig c) {
        return c.withSplit(new SplitConfig(false, null, null, null, null))
                .withPlacement(new PlacementConfig(true, 200, 60_000L, null));
    }

    private static byte[] key(int i) {
        return SpreadKeys.key(i);
    }

    private static byte[] value(int i) {
        return ("v" + i).getBytes(StandardCharsets.US_ASCII);
    }

    private static void putAll(KvClient client) {
        List<CompletableFuture<Void>> puts = new ArrayList<>();
        for (int i = 0; i < KEYS; i++) {
            puts.add(IdempotentWrites.put(client, key(i), value(i)));
        }
        puts.forEach(KvClient::sync);
    }

    private static void assertAllRead(KvClient client) {
        for (int i = 0; i < KEYS; i++) {
            assertThat(sync(client.get(key(i)))).as("key %d", i).isEqualTo(value(i));
        }
    }

    /** Nodes of the test beyond the cluster's first three, closed by the test whatever happens. */
    private final List<KvServer> joined = new ArrayList<>();

    private KvServer join(InProcessCluster cluster, String name) throws Exception {
        ServerConfig first = cluster.node(1).config(); // node 0 is removed by the end of the test
        String endpoint = "127.0.0.1:" + InProcessCluster.freePort();
        ServerConfig c = tune(new ServerConfig(endpoint, dir.resolve(name).toString(),
                new ClusterConfig(null, REGIONS, null, List.of(first.endpoint())), first.store(), first.raft(),
                null, first.balance()));
        KvServer s = KvServer.start(c);
        joined.add(s);
        return s;
    }

    private List<KvServer> all(InProcessCluster cluster) {
        List<KvServer> all = new ArrayList<>();
        for (int i = 0; i < cluster.size(); i++) {
            if (cluster.node(i) != null) {
                all.add(cluster.node(i));
            }
        }
        joined.stream().filter(s -> !s.isClosed()).forEach(all::add);
        return all;
    }

    private KvServer metaLeader(InProcessCluster cluster) {
        return await().atMost(30, SECONDS).until(() -> all(cluster).stream()
                .filter(s -> s.meta().group().isLeader()).findFirst().orElse(null), s -> s != null);
    }

    /** Replicas per node: the regions each running node has a group of. */
    private Map<String, Integer> replicas(InProcessCluster cluster) {
        Map<String, Integer> counts = new HashMap<>();
        for (KvServer s : all(cluster)) {
            counts.put(s.config().endpoint(), s.host().regions().size());
        }
        return counts;
    }

    /** Every region led, with three voters that are exactly the nodes holding it. */
    private boolean threeReplicasEach(InProcessCluster cluster) {
        for (int id = 1; id <= REGIONS; id++) {
            List<String> holders = new ArrayList<>();
            List<String> voters = null;
            for (KvServer s : all(cluster)) {
                Region r = s.host().region(id);
                if (r != null) {
                    holders.add(s.config().endpoint());
                    if (r.isLeader()) {
                        voters = r.peers();
                    }
                }
            }
            if (voters == null || voters.size() != 3 || !holders.containsAll(voters) || holders.size() != 3) {
                return false;
            }
        }
        return true;
    }

    private static boolean even(Map<String, Integer> counts) {
        int max = counts.values().stream().mapToInt(Integer::intValue).max().orElse(0);
        int min = counts.values().stream().mapToInt(Integer::intValue).min().orElse(0);
        return max - min <= 1;
    }

    private NodeStateResponse setState(Transport t, InProcessCluster cluster, String node, NodeState state, boolean force) {
        NodeStateRequest req = NodeStateRequest.newBuilder().setEndpoint(node).setState(state).setForce(force).build();
        // the map's leadership moves in these tests (its voters leave a drained node): a node that no longer leads
        // it changed nothing, and the one that leads now is asked
        return await().atMost(60, SECONDS).until(
                () -> t.<NodeStateResponse>call(metaLeader(cluster).config().endpoint(), req, 10_000).join(),
                r -> !MAP_MOVED.contains(r.getError().getCode()));
    }

    private ClusterResponse clusterView(Transport t, InProcessCluster cluster) {
        return await().atMost(60, SECONDS).until(() -> t.<ClusterResponse>call(metaLeader(cluster).config().endpoint(),
                ClusterRequest.getDefaultInstance(), 10_000).join(), r -> !MAP_MOVED.contains(r.getError().getCode()));
    }

    private static final java.util.Set<ErrorCode> MAP_MOVED = java.util.EnumSet.of(ErrorCode.NOT_LEADER, ErrorCode.NO_LEADER);

    private static NodeState stateOf(ClusterMap map, String node) {
        return map.getNodesList().stream().filter(n -> n.getEndpoint().equals(node)).map(NodeRecord::getState)
                .findFirst().orElse(null);
    }

    /** What a route lookup from the cluster map answers now, a line per region: for a failure's diagnosis. */
    private static String mapAnswer(InProcessCluster cluster) {
        try (KvClient c = cluster.client()) {
            StringBuilder b = new StringBuilder("the cluster map's route answer:\n");
            for (io.kvraft.client.admin.RegionInfo r : c.admin().mapRegions().get(10, SECONDS).regions()) {
                b.append("  region ").append(r.id()).append(" epoch ").append(r.epoch()).append(" conf ")
                        .append(r.confVer()).append(" term ").append(r.term()).append(" leader ")
                        .append(r.leader()).append(" peers ").append(r.peers()).append('\n');
            }
            return b.toString();
        } catch (Exception e) {
            return "the cluster map's route answer: none (" + e + ")";
        }
    }

    @Test
    void nodesJoinDrainAndLeave() throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(3, REGIONS, dir, "memory",
                RaftConfig.LOG_SHARED, MembershipClusterTest::tune);
             Transport t = new Transport(io.kvraft.common.config.TlsConfig.OFF)) {
            try {
                await().atMost(60, SECONDS).until(cluster::allRegionsLed);
                await().atMost(60, SECONDS).until(() -> all(cluster).stream().allMatch(s -> s.meta().registered()));
                String clusterId = cluster.node(0).meta().clusterId();
                assertThat(clusterId).isNotEmpty();
                assertThat(all(cluster)).allMatch(s -> s.meta().clusterId().equals(clusterId));
                KvClient client = cluster.client();
                putAll(client);

                // 3 -> 5: replicas move onto the new nodes until the counts are even
                KvServer n4 = join(cluster, "node4");
                KvServer n5 = join(cluster, "node5");
                await().atMost(180, SECONDS).until(() -> replicas(cluster).size() == 5 && even(replicas(cluster))
                        && threeReplicasEach(cluster));
                assertThat(replicas(cluster).get(n4.config().endpoint())).isGreaterThanOrEqualTo(3);
                assertThat(n4.meta().clusterId()).isEqualTo(clusterId);
                assertThat(n5.meta().group().map().getNodesCount()).isEqualTo(5); // a learner of the map has it too
                assertAllRead(client);

                // bad requests: answered with the reason, nothing changes
                NodeStateResponse unknown = setState(t, cluster, "127.0.0.1:1", NodeState.DRAINING, false);
                assertThat(unknown.getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                assertThat(unknown.getError().getDetail()).contains("not a node of the cluster");
                String first = cluster.endpoints().get(0);
                NodeStateResponse holding = setState(t, cluster, first, NodeState.REMOVED, false);
                assertThat(holding.getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                assertThat(holding.getError().getDetail()).contains("drain it first");
                assertThat(stateOf(clusterView(t, cluster).getMap(), first)).isEqualTo(NodeState.UP);

                // drain the first node (a voter of the map): it ends holding nothing
                assertThat(setState(t, cluster, first, NodeState.DRAINING, false).getError().getCode())
                        .isEqualTo(ErrorCode.OK);
                await().atMost(180, SECONDS).until(() -> cluster.node(0).host().regions().isEmpty()
                        && !metaLeader(cluster).meta().group().voters().contains(first) && threeReplicasEach(cluster));
                // two more drains would leave fewer UP nodes than the factor: the second is refused
                String second = cluster.endpoints().get(1);
                assertThat(setState(t, cluster, second, NodeState.DRAINING, false).getError().getCode())
                        .isEqualTo(ErrorCode.OK);
                NodeStateResponse tooFew = setState(t, cluster, cluster.endpoints().get(2), NodeState.DRAINING, false);
                assertThat(tooFew.getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                assertThat(tooFew.getError().getDetail()).contains("replication.factor");
                assertThat(setState(t, cluster, second, NodeState.UP, false).getError().getCode()).isEqualTo(ErrorCode.OK);

                // removed for good: the node with its data directory is refused when it comes back
                assertThat(setState(t, cluster, first, NodeState.REMOVED, false).getError().getCode())
                        .isEqualTo(ErrorCode.OK);
                cluster.stopNode(0);
                cluster.startNode(0);
                KvServer back = cluster.node(0);
                await().atMost(60, SECONDS).until(back::isClosed);
                assertThat(back.meta().registered()).isFalse();
                cluster.stopNode(0);
                assertAllRead(client);

                // a data directory of another cluster is refused at join
                Path foreign = dir.resolve("foreign");
                Files.createDirectories(foreign);
                Files.writeString(foreign.resolve("ENGINE"), "memory\n"); // a data directory made by another cluster
                Files.writeString(foreign.resolve("CLUSTER_ID"), "another-cluster\n");
                KvServer stranger = join(cluster, "foreign");
                await().atMost(60, SECONDS).until(stranger::isClosed);
                assertThat(clusterView(t, cluster).getMap().getNodesList()).noneMatch(n -> n.getEndpoint()
                        .equals(stranger.config().endpoint()));
            } catch (AssertionError | RuntimeException e) {
                System.err.println(cluster.describe());
                System.err.println(mapAnswer(cluster));
                throw e;
            } finally {
                joined.forEach(KvServer::close);
            }
        }
    }

    /**
     * A node down for longer than placement.downAfterMs has its replicas rebuilt on the others; when it comes back, its
     * stale replicas are dropped and placement evens the counts out again.
     */
    @Test
    void replicasOfANodeDownTooLongAreRebuilt() throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(4, REGIONS, dir, "memory",
                RaftConfig.LOG_SHARED, c -> tune(c).withReplication(new ServerConfig.ReplicationConfig(3))
                        .withPlacement(new PlacementConfig(true, 200, 3_000L, null)))) {
            try {
                await().atMost(60, SECONDS).until(cluster::allRegionsLed);
                await().atMost(60, SECONDS).until(() -> all(cluster).stream().allMatch(s -> s.meta().registered()));
                KvClient client = cluster.client();
                putAll(client);
                String gone = cluster.endpoints().get(3); // not a voter of the map: its first three nodes are
                assertThat(cluster.node(3).host().regions()).isNotEmpty();
                cluster.stopNode(3);
                // the map records it down, in every live node's copy (a new leader of the map need not wait again)
                await().atMost(60, SECONDS).until(() -> IntStream.range(0, 3).allMatch(i ->
                        downSince(cluster.node(i), gone) > 0));
                // a rebuilt replica is listed on its node while it is a learner, before the gone voter is removed: wait for both
                await().atMost(120, SECONDS).until(() -> threeReplicasEach(cluster) && all(cluster).stream()
                        .flatMap(s -> s.host().regions().stream()).noneMatch(r -> r.peers().contains(gone)));
                assertAllRead(client);
                cluster.startNode(3); // back: its old replicas are dropped, and placement gives it its share again
                await().atMost(60, SECONDS).until(() -> all(cluster).stream().allMatch(s -> downSince(s, gone) == 0));
                await().atMost(120, SECONDS).until(() -> replicas(cluster).size() == 4 && even(replicas(cluster))
                        && threeReplicasEach(cluster));
                assertAllRead(client);
            } catch (AssertionError | RuntimeException e) {
                System.err.println(cluster.describe());
                throw e;
            }
        }
    }

    /** When node {@code endpoint} went down, as {@code server}'s copy of the map says; 0: not down. */
    private static long downSince(KvServer server, String endpoint) {
        return server.meta().group().map().getNodesList().stream().filter(n -> n.getEndpoint().equals(endpoint))
                .findFirst().orElseThrow().getDownSinceMs();
    }

    /**
     * A member's disk wiped and the node started again at its address: it does not take its old place as a voter with an
     * empty log; it starts with no region and each replica is rebuilt on it (the voter out, then back as a learner).
     */
    @Test
    void aWipedNodeAtItsOwnAddressIsRebuiltNotTrusted() throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(3, REGIONS, dir, "memory",
                RaftConfig.LOG_SHARED, MembershipClusterTest::tune)) {
            try {
                await().atMost(60, SECONDS).until(cluster::allRegionsLed);
                await().atMost(60, SECONDS).until(() -> all(cluster).stream().allMatch(s -> s.meta().registered()));
                KvClient client = cluster.client();
                putAll(client);
                // by hand, on a healthy replica: refused, nothing changes
                String third = cluster.endpoints().get(2);
                assertThatThrownBy(() -> sync(client.admin().rebuildReplica(1, third)))
                        .hasMessageContaining("INVALID_ARGUMENT").hasMessageContaining("nothing to rebuild");
                assertThatThrownBy(() -> sync(client.admin().addReplica(1, third)))
                        .hasMessageContaining("INVALID_ARGUMENT").hasMessageContaining("already");
                String storeIdBefore = cluster.node(2).meta().clusterId();
                cluster.stopNode(2);
                RaftTestSupport.deleteTree(cluster.dataDir(2));
                cluster.startNode(2);
                KvServer wiped = cluster.node(2);
                await().atMost(60, SECONDS).until(() -> wiped.meta().registered());
                assertThat(wiped.meta().clusterId()).isEqualTo(storeIdBefore);
                // the map lists it in regions it does not hold yet, and says so (each waits 10 s before its rebuild)
                await().atMost(30, SECONDS).until(() -> sync(client.admin().cluster()).node(third).status().missing() > 0);
                await().atMost(180, SECONDS).until(() -> wiped.host().regions().size() == REGIONS
                        && threeReplicasEach(cluster));
                await().atMost(30, SECONDS).until(() -> sync(client.admin().cluster()).nodes().stream()
                        .allMatch(n -> n.status() == null || n.status().missing() == 0));
                await().atMost(60, SECONDS).untilAsserted(() -> {
                    for (int i = 0; i < KEYS; i++) {
                        assertThat(wiped.store().get(key(i))).as("key %d on the rebuilt node", i).isEqualTo(value(i));
                    }
                });
                assertAllRead(client);
            } catch (AssertionError | RuntimeException e) {
                System.err.println(cluster.describe());
                throw e;
            }
        }
    }
}
