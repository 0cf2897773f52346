package io.kvraft.server;

import io.kvraft.server.config.RaftConfig;
import io.kvraft.client.KvClient;
import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.MapRecoveryPlan;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto;
import io.kvraft.client.admin.NodeState;
import io.kvraft.common.proto.KvProto.RecoverMapRequest;
import io.kvraft.common.proto.KvProto.RecoverMapResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ClusterConfig;
import io.kvraft.server.config.ServerConfig.PlacementConfig;
import io.kvraft.server.config.ServerConfig.ReplicationConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import io.kvraft.server.meta.MetaGroup;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static io.kvraft.client.KvClient.sync;
import static io.kvraft.server.RecoveryTests.applied;
import static io.kvraft.server.RecoveryTests.assertRefused;
import static io.kvraft.server.RecoveryTests.cli;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Forced recovery of the cluster map's own group ({@code recover-map}) on three nodes when two of them are lost for
 * good: nothing answers admin calls until it runs. Refused while the map has a leader and for a majority of voters;
 * then the survivor leads the map alone and marks the lost nodes removed, {@code recover-region --all} brings back
 * every region from it with every write, a lost node that comes back with its old data is refused and stops, and a new
 * node joins the recovered cluster and takes replicas.
 */
@Timeout(value = 300, unit = SECONDS)
class MapRecoveryClusterTest {

    private static final int REGIONS = 4;
    private static final int KEYS = 200;

    @TempDir
    Path dir;

    private final List<KvServer> joined = new ArrayList<>();

    @AfterEach
    void closeJoined() {
        joined.forEach(KvServer::close);
    }

    private static byte[] value(int i) {
        return ("v" + i).getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void when_twoOfThreeNodesAreLost_then_theMapAndEveryRegionAreRecoveredFromTheThird() throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(3, REGIONS, dir, "memory",
                RaftConfig.LOG_SHARED,
                c -> c.withReplication(new ReplicationConfig(3))
                        .withSplit(new SplitConfig(false, null, null, null, null))
                        .withPlacement(new PlacementConfig(true, 200, 2_000L, null)));
             Transport raw = new Transport()) {
            await().atMost(60, SECONDS).until(cluster::allRegionsLed);
            List<String> nodes = cluster.endpoints();
            KvClient client = cluster.client();
            for (int i = 0; i < KEYS; i++) {
                sync(IdempotentWrites.put(client, SpreadKeys.key(i), value(i)));
            }
            await().atMost(30, SECONDS).until(() -> java.util.stream.IntStream.range(0, 3)
                    .allMatch(i -> cluster.node(i).meta().group().voters().size() == 3));
            // every replica has applied everything: no acknowledged write is lost in this test
            for (int r = 1; r <= REGIONS; r++) {
                int rr = r;
                await().atMost(30, SECONDS).until(() -> applied(cluster, rr, false) >= applied(cluster, rr, true));
            }

            // a map with a leader is not recovered: by the plan, the CLI, nor by a voter asked directly
            assertRefused(() -> sync(client.admin().planMapRecovery()), ErrorCode.INVALID_ARGUMENT, "has a leader");
            RecoveryTests.Run led = cli(cluster, "recover-map", "--yes");
            assertThat(led.code()).isEqualTo(1);
            assertThat(led.err()).startsWith("error: INVALID_ARGUMENT").contains("has a leader");
            assertThat(led.err().lines().count()).isEqualTo(1);

            int survivor = 0;
            String kept = nodes.get(survivor);
            List<String> lost = List.of(nodes.get(1), nodes.get(2));
            cluster.stopNode(1);
            cluster.stopNode(2);
            MetaGroup map = cluster.node(survivor).meta().group();
            await().atMost(30, SECONDS).until(() -> !map.isLeader() && map.leaderHint().isEmpty());

            // asked directly: a majority of the voters, or voters without the node asked, are refused
            RecoverMapResponse majority = raw.<RecoverMapResponse>call(kept, RecoverMapRequest.newBuilder()
                    .addVoters(kept).addVoters(lost.get(0)).build(), 5000).join();
            assertThat(majority.getError().getCode()).isEqualTo(KvProto.ErrorCode.INVALID_ARGUMENT);
            assertThat(majority.getError().getDetail()).contains("a majority");
            RecoverMapResponse other = raw.<RecoverMapResponse>call(kept, RecoverMapRequest.newBuilder()
                    .addVoters(lost.get(0)).build(), 5000).join();
            assertThat(other.getError().getDetail()).contains("do not name this node");

            MapRecoveryPlan plan = sync(client.admin().planMapRecovery());
            assertThat(plan.survivors()).containsExactly(kept);
            assertThat(plan.lost()).containsExactlyInAnyOrderElementsOf(lost);
            assertThat(plan.lastLogIndex()).isPositive();
            RecoveryTests.Run dry = cli(cluster, "recover-map");
            assertThat(dry.code()).as(dry.out() + dry.err()).isZero();
            assertThat(dry.out()).contains("cluster map: 1 of its 3 voters answer").contains(kept + "  last log index ")
                    .contains("lost (to be removed from the cluster map)").contains("nothing changed");
            assertThat(map.voters()).as("a plan changes nothing").hasSize(3);

            RecoveryTests.Run done = cli(cluster, "recover-map", "--yes");
            assertThat(done.code()).as(done.out() + done.err()).isZero();
            assertThat(done.out()).contains("cluster map recovered: leader " + kept + ", voters " + kept + ";");
            ClusterInfo after = sync(client.admin().cluster());
            assertThat(after.mapLeader()).isEqualTo(kept);
            for (String l : lost) {
                assertThat(state(after, l)).as(l).isEqualTo(NodeState.REMOVED);
            }
            assertThat(state(after, kept)).isEqualTo(NodeState.UP);

            // every region lost two of its three voters with them: all are recovered from the survivor, every write
            // kept (once the survivor's replicas know their leaders are gone: until then a region counts as whole)
            await().atMost(60, SECONDS).ignoreExceptions().until(() -> sync(client.admin().surveyRecovery()).plans().size(),
                    n -> n == REGIONS);
            RecoveryTests.Run regions = cli(cluster, "recover-region", "--all", "--yes");
            assertThat(regions.code()).as(regions.out() + regions.err()).isZero();
            assertThat(regions.out()).contains(REGIONS + " of " + REGIONS + " regions recovered");
            for (int i = 0; i < KEYS; i++) {
                assertThat(sync(client.get(SpreadKeys.key(i)))).as("key %d", i).isEqualTo(value(i));
            }
            sync(IdempotentWrites.put(client, SpreadKeys.key(KEYS), value(KEYS)));

            // a lost node started again with its old data directory is refused, and stops
            cluster.startNode(1);
            KvServer back = cluster.node(1);
            await().atMost(60, SECONDS).until(back::isClosed);
            cluster.stopNode(1);
            assertThat(map.isLeader()).isTrue();
            assertThat(map.voters()).containsExactly(kept);

            // a new node joins the recovered cluster: it becomes a voter of the map and takes a replica of each region
            ServerConfig first = cluster.node(survivor).config();
            String endpoint = "127.0.0.1:" + InProcessCluster.freePort();
            KvServer fresh = KvServer.start(new ServerConfig(endpoint, dir.resolve("fresh").toString(),
                    new ClusterConfig(null, REGIONS, null, List.of(kept)), first.store(), first.raft(), null,
                    first.balance()).withSplit(new SplitConfig(false, null, null, null, null))
                    .withPlacement(new PlacementConfig(true, 200, 2_000L, null)));
            joined.add(fresh);
            await().atMost(60, SECONDS).until(() -> map.voters().contains(endpoint));
            for (int r = 1; r <= REGIONS; r++) {
                int rr = r;
                await().atMost(120, SECONDS).until(() -> {
                    Region x = cluster.node(survivor).host().region(rr);
                    // led by either: the leader balancer hands some leaders to the new node
                    return x != null && x.peers().contains(endpoint) && x.peers().size() == 2;
                });
            }
            for (int i = 0; i <= KEYS; i++) {
                assertThat(sync(client.get(SpreadKeys.key(i)))).as("key %d", i).isEqualTo(value(i));
            }
            // and the map is led normally now: a second recovery is refused
            assertRefused(() -> sync(client.admin().planMapRecovery()), ErrorCode.INVALID_ARGUMENT, "has a leader");
        }
    }

    private static NodeState state(ClusterInfo c, String endpoint) {
        ClusterInfo.Node n = c.node(endpoint);
        return n == null ? null : n.state();
    }
}
