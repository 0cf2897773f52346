package io.kvraft.server;

import com.alipay.sofa.jraft.option.RaftOptions;
import io.kvraft.client.KvClient;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code raft.replicatorPipeline} as the running jraft nodes see it. jraft's own flag changes only how followers
 * order and answer AppendEntries; its leaders pipeline up to {@code maxReplicatorInflightMsgs + 1} requests per
 * follower either way. So "off" must also hold the leaders to jraft's least working depth, and replication must
 * still carry a burst of one-entry-per-put writes (the S4 shape) to every replica.
 */
class ReplicatorPipelineTest {

    @TempDir
    Path dir;

    @ParameterizedTest(name = "replicatorPipeline={0}")
    @ValueSource(booleans = {true, false})
    void when_thePipelineIsSwitched_then_theLeadersReplicatorDepthFollowsAndEveryWriteIsReplicated(boolean pipeline)
            throws Exception {
        // S3/S4's shape: one log entry per put, many entries in flight per leader
        RaftConfig raft = new RaftConfig(1000, 500, 5, true, 0, pipeline, 64, 256, 1, 1024, RaftConfig.LOG_SHARED, 2, null);
        try (InProcessCluster cluster = InProcessCluster.start(3, 2, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withRaft(raft))) {
            await().atMost(30, SECONDS).until(cluster::allRegionsLed);
            for (int i = 0; i < cluster.size(); i++) {
                for (Region region : cluster.node(i).host().regions()) {
                    RaftOptions options = region.node().getRaftOptions();
                    assertThat(options.isReplicatorPipeline()).as("jraft's flag").isEqualTo(pipeline);
                    assertThat(options.getMaxReplicatorInflightMsgs()).as("the leader's depth")
                            .isEqualTo(pipeline ? 64 : 1);
                }
            }

            KvClient client = cluster.client();
            List<byte[]> keys = new ArrayList<>();
            List<CompletableFuture<Void>> acks = new ArrayList<>();
            for (int i = 0; i < 2_000; i++) {
                byte[] key = String.format("key-%05d", i).getBytes(StandardCharsets.UTF_8);
                keys.add(key);
                acks.add(client.put(key, key));
            }
            CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new)).get(60, SECONDS);
            List<byte[]> values = client.multiGet(keys).get(30, SECONDS);
            for (int i = 0; i < keys.size(); i++) {
                assertThat(values.get(i)).isEqualTo(keys.get(i));
            }
            // every replica of every region reaches the leader's last index: the followers got it all
            for (Region leader : leaders(cluster)) {
                long last = leader.node().getLastLogIndex();
                await().atMost(30, SECONDS).until(() -> replicasOf(cluster, leader.id()).stream()
                        .allMatch(r -> r.node().getLastAppliedLogIndex() >= last));
            }
        }
    }

    private static List<Region> leaders(InProcessCluster cluster) {
        List<Region> leaders = new ArrayList<>();
        for (int i = 0; i < cluster.size(); i++) {
            cluster.node(i).host().regions().stream().filter(Region::isLeader).forEach(leaders::add);
        }
        return leaders;
    }

    private static List<Region> replicasOf(InProcessCluster cluster, int regionId) {
        List<Region> replicas = new ArrayList<>();
        for (int i = 0; i < cluster.size(); i++) {
            cluster.node(i).host().regions().stream().filter(r -> r.id() == regionId).forEach(replicas::add);
        }
        return replicas;
    }
}
