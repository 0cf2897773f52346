package io.kvraft.server;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.core.State;
import io.kvraft.client.KvClient;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node closed on an interrupted thread (a removed node's refusal once ran close() on the housekeeping thread, which
 * close() itself stops and so interrupts) still waits for every Raft group to stop before it closes the store and the
 * shared RocksDB log the groups write to, and it keeps the interrupt for its caller.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class CloseOnInterruptedThreadTest {

    @TempDir
    Path dir;

    @Test
    void theGroupsHaveStoppedBeforeTheStoreCloses() throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(3, 6, dir, "memory")) {
            cluster.awaitBalanced(120);
            List<Node> groups = new CopyOnWriteArrayList<>();
            List<Map<State, Long>> atStoreClose = new CopyOnWriteArrayList<>();
            cluster.stopNode(0);
            cluster.startNode(0, store -> new ForwardingStore(store) {
                @Override
                public void close() throws IOException {
                    atStoreClose.add(groups.stream().collect(Collectors.groupingBy(Node::getNodeState, Collectors.counting())));
                    super.close();
                }
            });
            cluster.awaitBalanced(120);
            KvClient client = cluster.client();
            CompletableFuture.allOf(IntStream.range(0, 200).mapToObj(i -> IdempotentWrites.put(client,
                    ("k" + i).getBytes(StandardCharsets.UTF_8), new byte[100])).toArray(CompletableFuture[]::new)).join();

            KvServer node = cluster.node(0);
            node.host().regions().stream().map(Region::node).forEach(groups::add);
            assertThat(groups).hasSize(6);
            AtomicBoolean stillInterrupted = new AtomicBoolean();
            Thread closer = new Thread(() -> {
                Thread.currentThread().interrupt();
                node.close();
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            }, "interrupted-closer");
            closer.start();
            closer.join(TimeUnit.MINUTES.toMillis(2));

            assertThat(closer.isAlive()).as("close() returned").isFalse();
            assertThat(stillInterrupted).as("the interrupt is kept for the caller").isTrue();
            assertThat(atStoreClose).as("raft states of node 0's groups when its store closed")
                    .containsExactly(Map.of(State.STATE_SHUTDOWN, 6L));
        }
    }
}
