package io.kvraft.server;

import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.StoreBatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

/**
 * A node whose store cannot write an entry (RocksDB out of room for a flush, a failing disk) stops for its storage,
 * as for a Raft log it cannot write: the entry is not counted applied there, the node's storage-failure handler is
 * told (kv-server then exits with code 5), and the other two nodes elect a leader and go on acknowledging writes:
 * the put that the failing leader could not apply is told TIMEOUT (outcome unknown) and is applied by the others. Before, the failed
 * apply was retried at every commit and the node answered nothing.
 */
@Timeout(value = 120, unit = SECONDS)
class StoreWriteFailureClusterTest {

    private static final int FAILING = 2;

    @TempDir
    Path dir;

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void when_aNodesStoreCannotWrite_then_theNodeStopsForItsStorage_andTheOthersKeepServing() throws Exception {
        AtomicInteger started = new AtomicInteger();
        AtomicBoolean failing = new AtomicBoolean();
        try (InProcessCluster cluster = InProcessCluster.start(3, 1, dir, "memory", RaftConfig.LOG_SHARED,
                // no leader balancing: the leadership handed to the failing node below stays there
                config -> config.withBalance(new ServerConfig.BalanceConfig(false, 200, 600)),
                store -> started.getAndIncrement() == FAILING ? new FailingApply(store, failing) : store)) {
            CompletableFuture<String> stopped = new CompletableFuture<>();
            cluster.node(FAILING).onStorageFailed(stopped::complete);
            KvClient client = cluster.client();
            sync(client.put(bytes("before"), bytes("1")));
            KvStore store = cluster.node(FAILING).store();
            await().atMost(30, SECONDS).until(() -> store.get(bytes("before")) != null);

            // the failing node leads: its own apply fails, the client's put is retried with the leader elected next
            await().atMost(30, SECONDS).until(() -> {
                int leader = cluster.leaderOf(1);
                if (leader >= 0 && leader != FAILING) {
                    cluster.node(leader).host().region(1).node()
                            .transferLeadershipTo(PeerId.parsePeer(cluster.node(FAILING).config().endpoint()));
                }
                return leader == FAILING;
            });
            failing.set(true);
            // committed, then not applied by the leader that proposed it: its outcome is unknown to the client
            Throwable unknown = catchThrowable(() -> sync(client.put(bytes("during"), bytes("2"))));
            assertThat(unknown).isInstanceOf(KvException.class).hasMessageContaining("outcome unknown");
            assertThat(((KvException) unknown).code()).isEqualTo(ErrorCode.TIMEOUT);

            String why = stopped.get(60, SECONDS);
            assertThat(why).contains("region 1").contains("the store cannot write").contains("No space left on device");
            assertThat(stopped).isDone();
            assertThat(store.get(bytes("during"))).isNull();

            sync(client.put(bytes("after"), bytes("3")));
            assertThat(sync(client.get(bytes("during")))).isEqualTo(bytes("2"));
            assertThat(sync(client.get(bytes("after")))).isEqualTo(bytes("3"));
        }
    }

    /** A store whose applies fail as RocksDB's do when a flush finds no room, once {@code failing} is set. */
    private static final class FailingApply extends ForwardingStore {
        private final AtomicBoolean failing;

        FailingApply(KvStore store, AtomicBoolean failing) {
            super(store);
            this.failing = failing;
        }

        @Override
        public void apply(int region, long appliedIndex, StoreBatch batch) {
            if (failing.get()) {
                throw new UncheckedIOException(new IOException("RocksDB apply of region " + region + " at index "
                        + appliedIndex + " failed: While appending to file: 000011.sst: No space left on device"));
            }
            super.apply(region, appliedIndex, batch);
        }
    }
}
