package io.kvraft.server.region;

import io.kvraft.server.config.RaftConfig;
import io.kvraft.client.KvClient;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.server.IdempotentWrites;
import io.kvraft.server.InProcessCluster;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.MergeConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A merge left prepared, as a coordinator that crashed right after the prepare leaves it: the left region's leader
 * finishes it after merge.timeoutMs when every replica of the right region is ready, and rolls it back when one is
 * not. Either way the right region does not stay frozen.
 */
@Timeout(value = 300, unit = SECONDS)
class MergeRecoveryTest {

    @TempDir
    Path dir;

    private static byte[] key(int i) {
        return String.format("k%05d", i).getBytes(StandardCharsets.US_ASCII);
    }

    private static InProcessCluster start(Path dir) throws Exception {
        UnaryOperator<ServerConfig> tweak = c -> c.withSplit(new SplitConfig(false, null, null, null, null))
                .withMerge(new MergeConfig(false, null, null, 200, 1500));
        InProcessCluster cluster = InProcessCluster.start(3, 1, dir, "memory", RaftConfig.LOG_SHARED, tweak);
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
        return cluster;
    }

    private static void putAll(KvClient client, int keys, String value) {
        List<CompletableFuture<Void>> puts = new ArrayList<>();
        for (int i = 0; i < keys; i++) {
            puts.add(IdempotentWrites.put(client, key(i), value.getBytes(StandardCharsets.US_ASCII)));
        }
        puts.forEach(KvClient::sync);
    }

    /** Proposes PREPARE_MERGE of {@code right} into region 1 on its leader, and nothing after it. */
    private static Region prepareOnly(InProcessCluster cluster, int right) {
        Region r = cluster.node(cluster.leaderOf(right)).host().region(right);
        CompletableFuture<Boolean> prepared = new CompletableFuture<>();
        r.propose(WriteOp.newBuilder().setType(WriteOpType.PREPARE_MERGE).setRegionId(1).setEpoch(r.epoch()).build(),
                (status, changed, state, other) -> prepared.complete(status.isOk() && changed));
        assertThat(prepared.join()).isTrue();
        return r;
    }

    @ParameterizedTest(name = "a replica down: {0}")
    @ValueSource(booleans = {false, true})
    void when_aMergeIsLeftPrepared_then_itIsFinishedWhenEveryReplicaIsReady_elseRolledBack(boolean replicaDown)
            throws Exception {
        try (InProcessCluster cluster = start(dir)) {
            KvClient client = cluster.client();
            putAll(client, 500, "a");
            int right = sync(client.admin().split(1, key(250))).get(1).id();
            await().atMost(60, SECONDS).until(() -> java.util.stream.IntStream.range(0, 3)
                    .allMatch(i -> cluster.node(i).host().region(right) != null));
            int down = -1;
            if (replicaDown) {
                // a node that leads neither region (of three nodes one always does), so both keep their leaders
                for (int i = 0; i < 3; i++) {
                    if (i != cluster.leaderOf(1) && i != cluster.leaderOf(right)) {
                        down = i;
                        break;
                    }
                }
                cluster.stopNode(down);
            }
            assertThat(prepareOnly(cluster, right).mergingInto()).as("on the leader that applied it").isEqualTo(1);
            int up = down == 0 ? 1 : 0;

            if (replicaDown) {
                await().atMost(60, SECONDS).untilAsserted(() -> {
                    for (int i = 0; i < 3; i++) {
                        if (cluster.node(i) != null) {
                            assertThat(cluster.node(i).host().region(right).mergingInto()).as("node %d", i).isZero();
                        }
                    }
                });
                assertThat(cluster.node(up).host().regions()).hasSize(2);
            } else {
                await().atMost(60, SECONDS).untilAsserted(() -> {
                    for (int i = 0; i < 3; i++) {
                        assertThat(cluster.node(i).host().regions()).as("node %d", i).hasSize(1);
                        assertThat(cluster.node(i).host().region(1).range().end()).isEmpty();
                    }
                });
            }
            putAll(client, 500, "b"); // every key takes writes again, in whichever region holds it now
            for (int i = 0; i < 500; i++) {
                assertThat(sync(client.get(key(i)))).isEqualTo("b".getBytes(StandardCharsets.US_ASCII));
            }
        }
    }
}
