package io.kvraft.server;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.client.KvClient;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.RaftTestSupport.LogCapture;
import io.kvraft.server.config.ServerConfig.BalanceConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.region.Region;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.kvraft.server.RaftTestSupport.deleteTree;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * jraft's replication livelock, made to happen on purpose: a wiped follower loads a snapshot from the old
 * leader while the leadership moves to a node whose own snapshot is older. The new leader's install of its
 * older snapshot is answered "not newer", its appends below the follower's snapshot are rejected, and it
 * goes round that loop until it snapshots again. Periodic snapshots are off here, so only
 * {@code ReplicatorLoopBreaker} can end it; without it the follower never applies another entry.
 */
class ReplicatorLoopTest {

    @TempDir
    Path dir;

    @Test
    void when_theNewLeadersSnapshotIsOlderThanTheFollowers_then_replicationToTheFollowerStillResumes() throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(3, 3, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withBalance(new BalanceConfig(false, null, null)));
             LogCapture jraftLog = LogCapture.of("com.alipay.sofa.jraft.core.Replicator");
             LogCapture ourLog = LogCapture.of("io.kvraft.server")) {
            await().atMost(30, SECONDS).until(cluster::allRegionsLed);
            KvClient client = cluster.client();
            // region 1, led by node 1 or 2 (the old leader, A); the other of the two is B; node 3 is wiped
            int regionId = 1;
            if (region(cluster.node(2), regionId).isLeader()) {
                assertThat(region(cluster.node(2), regionId).node()
                        .transferLeadershipTo(PeerId.parsePeer(cluster.node(0).config().endpoint())).isOk()).isTrue();
            }
            await().atMost(60, SECONDS).until(() -> region(cluster.node(0), regionId).isLeader()
                    || region(cluster.node(1), regionId).isLeader());
            int a = region(cluster.node(0), regionId).isLeader() ? 0 : 1;
            int b = 1 - a;
            Region onA = region(cluster.node(a), regionId);
            RegionInfo info = client.admin().regions().join().stream().filter(r -> r.id() == regionId).findFirst().orElseThrow();
            List<byte[]> keys = keysIn(info, 20);

            putAll(client, keys, "round-1");
            snapshot(cluster.node(a), regionId);
            snapshot(cluster.node(b), regionId);
            putAll(client, keys, "round-2");
            snapshot(cluster.node(a), regionId);
            snapshot(cluster.node(b), regionId); // B's last snapshot; its log now starts after its first one
            cluster.stopNode(2);
            putAll(client, keys, "round-3");
            snapshot(cluster.node(a), regionId); // A's is newer than B's

            deleteTree(dir.resolve("node3"));
            CountDownLatch loading = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            cluster.startNode(2, store -> new GatedLoad(store, regionId, loading, release));
            assertThat(loading.await(30, TimeUnit.SECONDS)).as("node 3 loads A's snapshot").isTrue();

            // while node 3 is still loading A's snapshot, the leadership moves to B
            PeerId peerB = PeerId.parsePeer(cluster.node(b).config().endpoint());
            assertThat(onA.node().transferLeadershipTo(peerB).isOk()).isTrue();
            Region onB = region(cluster.node(b), regionId);
            await().atMost(60, SECONDS).until(onB::isLeader);
            // B tries its older snapshot and is told a newer one is being installed
            await().atMost(60, SECONDS).until(() -> jraftLog.lines().stream()
                    .anyMatch(l -> l.contains("A newer snapshot is under installing") && l.contains("region-" + regionId)));
            release.countDown();

            putAll(client, keys, "round-4");
            KvStore wiped = cluster.node(2).store();
            // node 3 came back wiped, so its replica is rebuilt (a learner first, from the cluster map's placement);
            // the leadership moving during that rebuild cuts it short, and placement asks again after a pause
            await().atMost(150, SECONDS).untilAsserted(() -> {
                for (byte[] k : keys) {
                    byte[] v = wiped.get(k);
                    assertThat(v).as("key on the wiped node").isNotNull();
                    assertThat(new String(v, StandardCharsets.UTF_8)).startsWith("round-4/");
                }
            });
            assertThat(ourLog.lines()).anyMatch(l -> l.contains("region " + regionId + ": replication to")
                    && l.contains("taking a snapshot to end it"));
        }
    }

    private static List<byte[]> keysIn(RegionInfo region, int n) {
        List<byte[]> keys = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            keys.add(ClusterTest.keyPerRegion(List.of(region), "k" + i).get(0));
        }
        return keys;
    }

    private static void putAll(KvClient c, List<byte[]> keys, String round) {
        CompletableFuture.allOf(keys.stream()
                .map(k -> c.put(k, (round + "/" + new String(k, StandardCharsets.ISO_8859_1)).getBytes(StandardCharsets.UTF_8)))
                .toArray(CompletableFuture[]::new)).join();
    }

    private static Region region(KvServer server, int regionId) {
        return server.host().regions().stream().filter(x -> x.id() == regionId).findFirst().orElseThrow();
    }

    private static void snapshot(KvServer server, int regionId) throws Exception {
        Region r = region(server, regionId);
        CompletableFuture<Status> done = new CompletableFuture<>();
        r.node().snapshot(done::complete);
        Status st = done.get(30, TimeUnit.SECONDS);
        assertThat(st.isOk()).as("snapshot of region %d on %s: %s", regionId, server.config().endpoint(), st).isTrue();
    }

    /** Holds the load of one region's snapshot until released. */
    private static final class GatedLoad extends ForwardingStore {
        private final int regionId;
        private final CountDownLatch loading;
        private final CountDownLatch release;

        GatedLoad(KvStore store, int regionId, CountDownLatch loading, CountDownLatch release) {
            super(store);
            this.regionId = regionId;
            this.loading = loading;
            this.release = release;
        }

        @Override
        public void loadSnapshot(int region, long appliedIndex, KeyRange range, Path dir, byte[] state) throws IOException {
            if (region == regionId) {
                loading.countDown();
                try {
                    if (!release.await(60, TimeUnit.SECONDS)) {
                        throw new IOException("test never released the snapshot load");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException(e);
                }
            }
            store.loadSnapshot(region, appliedIndex, range, dir, state);
        }
    }
}
