package io.kvraft.server.region;

import io.kvraft.client.KvClient;
import io.kvraft.server.InProcessCluster;
import io.kvraft.server.config.ServerConfig.RaftConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

/** raft.appendEntriesThreads: followers replicate on a few shared threads, or on jraft's thread per group and leader. */
class PooledAppendEntriesTest {

    private static final int REGIONS = 6;

    @TempDir
    Path dir;

    @Test
    void when_appendEntriesThreadsIsTwo_then_followersUseOnlyTheSharedThreadsAndEveryWriteIsReplicated() throws Exception {
        try (InProcessCluster c = InProcessCluster.start(3, REGIONS, dir, "memory", RaftConfig.LOG_SHARED, 2)) {
            writeAndReadBack(c);

            assertThat(jraftPerPairThreads(c)).isEmpty();
            assertThat(threadsNamed("kv-append-entries-")).isNotEmpty();
            assertEveryReplicaApplied(c);
        }
    }

    @Test
    void when_appendEntriesThreadsIsZero_then_jraftRunsAThreadPerGroupAndLeader() throws Exception {
        try (InProcessCluster c = InProcessCluster.start(3, REGIONS, dir, "memory", RaftConfig.LOG_SHARED, 0)) {
            writeAndReadBack(c);

            // each follower replica of each region: REGIONS groups x 2 followers
            assertThat(jraftPerPairThreads(c)).hasSizeGreaterThanOrEqualTo(REGIONS * 2);
            assertEveryReplicaApplied(c);
        }
    }

    private static void writeAndReadBack(InProcessCluster c) throws Exception {
        c.awaitBalanced(30);
        KvClient client = c.client();
        List<CompletableFuture<?>> puts = new ArrayList<>();
        for (int i = 0; i < 600; i++) {
            puts.add(client.put(key(i), ("v" + i).getBytes(StandardCharsets.UTF_8)));
        }
        CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).get(30, SECONDS);
        for (int i = 0; i < 600; i += 37) {
            assertThat(client.get(key(i)).get(10, SECONDS)).isEqualTo(("v" + i).getBytes(StandardCharsets.UTF_8));
        }
    }

    /** Followers apply what the leader committed: every node's applied index catches up with its leader's. */
    private static void assertEveryReplicaApplied(InProcessCluster c) {
        org.awaitility.Awaitility.await().atMost(20, SECONDS).untilAsserted(() -> {
            for (int r = 1; r <= REGIONS; r++) {
                List<Long> applied = new ArrayList<>();
                for (int n = 0; n < 3; n++) {
                    applied.add(c.node(n).host().region(r).node().getLastAppliedLogIndex());
                }
                assertThat(applied).as("region %d applied index per node", r).containsOnly(applied.get(0));
            }
        });
    }

    private static byte[] key(int i) {
        return String.format("%02x-key-%05d", (i * 7) % 256, i).getBytes(StandardCharsets.UTF_8);
    }

    /** jraft names its per-pair threads "groupId/PeerPair[local -> remote]-AppendEntriesThread..." */
    private static List<String> jraftPerPairThreads(InProcessCluster c) {
        return threadsNamed("-AppendEntriesThread").stream()
                .filter(n -> c.endpoints().stream().anyMatch(n::contains))
                .toList();
    }

    private static List<String> threadsNamed(String part) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .map(Thread::getName)
                .filter(n -> n.contains(part))
                .toList();
    }
}
