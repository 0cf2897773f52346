package io.kvraft.server;

import io.kvraft.server.config.RaftConfig;
import com.google.protobuf.ByteString;
import io.kvraft.client.KvClient;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.ReadRequest;
import io.kvraft.common.proto.KvProto.ReadResponse;
import io.kvraft.common.proto.KvProto.RegionState;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.ReplicationConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A region's conf version (the second counter of its epoch, beside the split/merge epoch): every change of its voters
 * bumps it on every replica, through a CONF_CHANGED entry in the region's own log; it outlives a restart; a request
 * routed with an older one is answered STALE_EPOCH, and the client refreshes its route and carries on. Four servers,
 * factor 3, region 1 on nodes 0, 1 and 2; moves by hand only.
 */
@Timeout(value = 300, unit = SECONDS)
class ConfVersionClusterTest {

    @TempDir
    Path dir;

    private InProcessCluster start(String engine) throws Exception {
        InProcessCluster cluster = InProcessCluster.start(4, 4, dir, engine, RaftConfig.LOG_SHARED,
                c -> c.withReplication(new ReplicationConfig(3)).withSplit(new SplitConfig(false, null, null, null, null))
                        .withPlacement(new ServerConfig.PlacementConfig(false, null, null, null)));
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
        return cluster;
    }

    private static byte[] key(String name) {
        return ("\u0001" + name).getBytes(StandardCharsets.US_ASCII); // below 0x40: region 1
    }

    /** Region 1's state on node i, or null when the node has no replica of it. */
    private static RegionState state(InProcessCluster cluster, int i) {
        Region r = cluster.node(i).host().region(1);
        return r == null ? null : r.state();
    }

    /** Whether the replicas of region 1 on {@code nodes} all recorded {@code voters} at a conf version above {@code above}. */
    private static boolean recorded(InProcessCluster cluster, List<Integer> nodes, List<String> voters, long above) {
        for (int i : nodes) {
            RegionState s = state(cluster, i);
            if (s == null || s.getConfVer() <= above || !s.getConfPeersList().equals(voters.stream().sorted().toList())) {
                return false;
            }
        }
        return true;
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_aRegionsVotersChange_then_itsConfVersionGoesUpEverywhere_andAnOldRouteIsRefreshed(String engine) throws Exception {
        try (InProcessCluster cluster = start(engine); Transport raw = new Transport()) {
            List<String> nodes = cluster.endpoints();
            List<String> before = List.of(nodes.get(0), nodes.get(1), nodes.get(2));
            // a new region's leader records its voters once: conf version 1 on every replica
            await().atMost(60, SECONDS).until(() -> recorded(cluster, List.of(0, 1, 2), before, 0));
            long v1 = state(cluster, 0).getConfVer();
            assertThat(v1).isEqualTo(1);

            KvClient client = cluster.client();
            sync(client.put(key("a"), "1".getBytes(StandardCharsets.US_ASCII)));
            long epoch = state(cluster, 0).getEpoch();

            sync(client.admin().moveReplica(1, nodes.get(2), nodes.get(3)));
            List<String> after = List.of(nodes.get(0), nodes.get(1), nodes.get(3));
            await().atMost(60, SECONDS).until(() -> recorded(cluster, List.of(0, 1, 3), after, v1));
            long v2 = state(cluster, 0).getConfVer();
            assertThat(state(cluster, 3).getConfVer()).as("the new replica's conf version").isEqualTo(v2);

            // a request routed with the old conf version: STALE_EPOCH naming the change; with the new one or 0: served
            String leader = nodes.get(cluster.leaderOf(1));
            ReadResponse stale = raw.<ReadResponse>call(leader, read(epoch, v1), 5000).join();
            assertThat(stale.getError().getCode()).isEqualTo(ErrorCode.STALE_EPOCH);
            assertThat(stale.getError().getDetail()).contains("replicas changed").contains("conf version " + v2);
            assertThat(raw.<ReadResponse>call(leader, read(epoch, v2), 5000).join().getValues(0).getFound()).isTrue();
            assertThat(raw.<ReadResponse>call(leader, read(epoch, 0), 5000).join().getValues(0).getFound()).isTrue();

            // the client's route still has the old version: its requests are refused once, then go on with the new one
            sync(client.put(key("b"), "2".getBytes(StandardCharsets.US_ASCII)));
            assertThat(sync(client.get(key("a")))).isEqualTo("1".getBytes(StandardCharsets.US_ASCII));
            assertThat(sync(client.get(key("b")))).isEqualTo("2".getBytes(StandardCharsets.US_ASCII));

            // a restart keeps the conf version and the voters it stands for
            cluster.stopNode(3);
            cluster.startNode(3);
            await().atMost(60, SECONDS).until(() -> recorded(cluster, List.of(3), after, v2 - 1));
            assertThat(state(cluster, 3).getConfVer()).isEqualTo(v2);
        }
    }

    /**
     * A replica dropped from a node and made there again replays the region's log from its catalog entry, not from
     * the state its dropped predecessor recorded: before, it took that state up and counted the CONF_CHANGED entries
     * whose voters differ from it again, so its conf version ran ahead of the other replicas' and the cluster map took
     * its stale voters for the newer ones (a drained node that could not be removed).
     */
    @ParameterizedTest
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_aReplicaMovesOffANodeAndBack_then_itsConfVersionIsTheOtherReplicas(String engine) throws Exception {
        try (InProcessCluster cluster = start(engine)) {
            List<String> nodes = cluster.endpoints();
            List<String> first = List.of(nodes.get(0), nodes.get(1), nodes.get(2));
            await().atMost(60, SECONDS).until(() -> recorded(cluster, List.of(0, 1, 2), first, 0));
            KvClient client = cluster.client();
            sync(client.put(key("a"), "1".getBytes(StandardCharsets.US_ASCII)));

            sync(client.admin().moveReplica(1, nodes.get(2), nodes.get(3)));
            List<String> second = List.of(nodes.get(0), nodes.get(1), nodes.get(3));
            await().atMost(60, SECONDS).until(() -> recorded(cluster, List.of(0, 1, 3), second, 1));
            sync(client.admin().moveReplica(1, nodes.get(1), nodes.get(2)));
            List<String> third = List.of(nodes.get(0), nodes.get(2), nodes.get(3));
            await().atMost(60, SECONDS).until(() -> recorded(cluster, List.of(0, 2, 3), third, 2));
            await().atMost(60, SECONDS).until(() -> state(cluster, 1) == null); // dropped there, having recorded second
            long v3 = state(cluster, 0).getConfVer();

            sync(client.admin().moveReplica(1, nodes.get(3), nodes.get(1))); // back onto a node it was dropped from
            await().atMost(60, SECONDS).until(() -> recorded(cluster, List.of(0, 1, 2), first, v3));
            long v4 = state(cluster, 0).getConfVer();
            assertThat(v4).isEqualTo(v3 + 1);
            await().atMost(60, SECONDS).untilAsserted(() -> assertThat(state(cluster, 2).getConfVer()).isEqualTo(v4));
            assertThat(state(cluster, 1).getConfVer()).as("the replica made again on node 1").isEqualTo(v4);
            assertThat(sync(client.get(key("a")))).isEqualTo("1".getBytes(StandardCharsets.US_ASCII));
        }
    }

    @Test
    void when_aClientSendsAConfChangedEntry_then_itIsRefused() throws Exception {
        try (InProcessCluster cluster = start("memory"); Transport raw = new Transport()) {
            String leader = cluster.endpoints().get(cluster.leaderOf(1));
            WriteResponse resp = raw.<WriteResponse>call(leader, WriteRequest.newBuilder().setRegionId(1)
                    .setRegionEpoch(state(cluster, cluster.leaderOf(1)).getEpoch())
                    .addOps(WriteOp.newBuilder().setType(WriteOpType.CONF_CHANGED).setKey(ByteString.copyFrom(key("x")))
                            .addPeers("127.0.0.1:1")).build(), 5000).join();
            assertThat(resp.getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(resp.getError().getDetail()).contains("CONF_CHANGED").contains("region leaders only");
        }
    }

    private static ReadRequest read(long epoch, long confVer) {
        return ReadRequest.newBuilder().setRegionId(1).setRegionEpoch(epoch).setRegionConfVer(confVer)
                .addKeys(ByteString.copyFrom(key("a"))).build();
    }
}
