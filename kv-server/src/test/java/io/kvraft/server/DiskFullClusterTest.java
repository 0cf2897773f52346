package io.kvraft.server;

import com.alipay.sofa.jraft.entity.PeerId;
import com.google.protobuf.ByteString;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.StoreConfig;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

/**
 * A node whose disk is full ({@code store.minFreeDiskBytes} over the room its file system has, so full from the start)
 * makes every region with a replica on it refuse writes that add data with STORE_FULL: the regions it leads itself,
 * and, told in its answers to node heartbeats, those that other nodes lead. Deletes and reads pass. The real disk,
 * filled under load and freed again, is {@code bench/disk-full-drill.sh}'s; the room's arithmetic is DiskGuardTest's.
 */
@Timeout(value = 120, unit = SECONDS)
class DiskFullClusterTest {

    private static final int FULL = 2;

    @TempDir
    Path dir;

    /** A key inside the region: its start key, or a zero byte for the first region (whose start is empty). */
    private static ByteString keyIn(Region region) {
        ByteString start = region.state().getStartKey();
        return start.isEmpty() ? ByteString.copyFrom(new byte[]{0}) : start;
    }

    private static WriteOp op(WriteOpType type, ByteString key) {
        WriteOp.Builder b = WriteOp.newBuilder().setType(type).setKey(key);
        if (type == WriteOpType.PUT) {
            b.setValue(ByteString.copyFromUtf8("v"));
        }
        return b.build();
    }

    @Test
    void when_aNodesDiskIsFull_then_everyRegionWithAReplicaThereRefusesGrowingWritesAndTakesDeletesAndReads()
            throws Exception {
        AtomicInteger started = new AtomicInteger();
        try (InProcessCluster cluster = InProcessCluster.start(3, 3, dir, "memory",
                io.kvraft.server.config.RaftConfig.LOG_SHARED, config -> {
                    // no leader balancing: the region handed away from the full node below stays led elsewhere
                    ServerConfig c = config.withBalance(new ServerConfig.BalanceConfig(false, 200, 600));
                    if (started.getAndIncrement() != FULL) {
                        return c;
                    }
                    StoreConfig s = c.store();
                    return c.withStore(new StoreConfig(s.engine(), s.blockCacheBytes(), s.writeBufferBytes(),
                            s.compression(), s.hashIndex(), s.maxHeapFraction(), Long.MAX_VALUE / 4));
                })) {
            String full = cluster.node(FULL).config().endpoint();
            List<Integer> regions = cluster.node(0).host().regions().stream().map(Region::id).sorted().toList();
            assertThat(regions).hasSize(3);
            // one region led elsewhere for sure: its leader learns of the full disk from node heartbeats only
            int viaPeer = regions.get(0);
            String other = cluster.node(0).config().endpoint();
            await().atMost(30, SECONDS).pollInterval(java.time.Duration.ofMillis(500)).until(() -> {
                if (cluster.leaderOf(viaPeer) != FULL) {
                    return true;
                }
                // refused while the region's first entries commit or the target catches up: asked again
                cluster.node(FULL).host().region(viaPeer).node().transferLeadershipTo(PeerId.parsePeer(other));
                return false;
            });
            for (int region : regions) {
                ByteString key = keyIn(cluster.node(0).host().region(region));
                WriteResponse put = await().atMost(30, SECONDS).until(
                        () -> cluster.writeToLeader(region, op(WriteOpType.PUT, key)),
                        r -> r.hasError() && r.getError().getCode() == ErrorCode.STORE_FULL);
                assertThat(put.getError().getDetail()).as("region %d", region)
                        .contains("node " + full + ": disk: ")
                        .contains("(store.minFreeDiskBytes ")
                        .contains("writes that add data are refused, deletes pass");
                if (region == viaPeer) {
                    assertThat(put.getError().getDetail()).contains("(a replica of this region)");
                }
                WriteResponse delete = cluster.writeToLeader(region, op(WriteOpType.DELETE, key));
                assertThat(delete.hasError() && delete.getError().getCode() != ErrorCode.OK)
                        .as("delete in region %d: %s", region, delete.getError()).isFalse();
            }

            // through the client: refused at once (STORE_FULL is not retried), and reads answer
            KvClient client = cluster.client();
            Throwable t = catchThrowable(() -> sync(client.put("a-key".getBytes(StandardCharsets.UTF_8),
                    "v".getBytes(StandardCharsets.UTF_8))));
            assertThat(KvException.unwrap(t).code()).as(String.valueOf(t)).isEqualTo(io.kvraft.common.ErrorCode.STORE_FULL);
            assertThat(sync(client.get("a-key".getBytes(StandardCharsets.UTF_8)))).isNull();
        }
    }
}
