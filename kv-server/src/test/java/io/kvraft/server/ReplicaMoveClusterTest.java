package io.kvraft.server;

import io.kvraft.server.config.RaftConfig;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.ReplicationConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import io.kvraft.server.host.RegionCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Replica moves on four servers in this JVM with {@code replication.factor: 3} and 4 regions (region 1 on nodes 0, 1
 * and 2): a replica moves to a node that had none while a client writes to the region, the old node keeps nothing of
 * it, the new one serves the data when another replica is down, and bad moves are refused with nothing changed.
 */
@Timeout(value = 300, unit = SECONDS)
class ReplicaMoveClusterTest {

    @TempDir
    Path dir;

    private InProcessCluster start(String engine) throws Exception {
        return start(engine, true);
    }

    /** @param balance whether the leader balancer runs (it may hand a leadership a test moved straight back) */
    private InProcessCluster start(String engine, boolean balance) throws Exception {
        return start(engine, balance, UnaryOperator.identity());
    }

    /** @param more further changes to every node's config */
    private InProcessCluster start(String engine, boolean balance, UnaryOperator<ServerConfig> more) throws Exception {
        InProcessCluster cluster = InProcessCluster.start(4, 4, dir, engine, RaftConfig.LOG_SHARED,
                c -> {
                    ServerConfig moves = c.withReplication(new ReplicationConfig(3))
                            .withSplit(new SplitConfig(false, null, null, null, null))
                            .withPlacement(new ServerConfig.PlacementConfig(false, null, null, null)); // moves by hand only
                    return more.apply(balance ? moves : moves.withBalance(new ServerConfig.BalanceConfig(false, null, null)));
                });
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
        return cluster;
    }

    /** Key {@code i} of region 1, which holds the keys below 0x40. */
    private static byte[] key(String kind, int i) {
        byte[] tail = String.format("%s%05d", kind, i).getBytes(StandardCharsets.US_ASCII);
        byte[] k = new byte[1 + tail.length];
        k[0] = (byte) (i % 0x40);
        System.arraycopy(tail, 0, k, 1, tail.length);
        return k;
    }

    private static byte[] value(int i) {
        return ("v" + i).getBytes(StandardCharsets.US_ASCII);
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_aReplicaMovesUnderWrites_then_theNewNodeHoldsEveryAcknowledgedWrite_andTheOldNodeNothing(String engine)
            throws Exception {
        try (InProcessCluster cluster = start(engine)) {
            List<String> nodes = cluster.endpoints();
            assertThat(cluster.hostsOf(1)).containsExactlyInAnyOrder(nodes.get(0), nodes.get(1), nodes.get(2));
            KvClient client = cluster.client();
            for (int i = 0; i < 300; i++) {
                sync(IdempotentWrites.put(client, key("k", i), value(i)));
            }
            // two snapshots: jraft drops the log up to the one before the last, so the new replica needs a snapshot
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < 3; i++) {
                    RaftTestSupport.snapshotAllRegions(cluster.node(i));
                }
                sync(IdempotentWrites.put(client, key("s", round), value(round)));
            }
            Map<Integer, Boolean> acked = new ConcurrentHashMap<>();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> writeFailure = new AtomicReference<>();
            Thread writer = new Thread(() -> {
                for (int i = 0; !stop.get(); i++) {
                    try {
                        sync(IdempotentWrites.put(client, key("w", i), value(i)));
                        acked.put(i, true);
                    } catch (RuntimeException e) {
                        writeFailure.set(e);
                        return;
                    }
                }
            }, "writer");
            writer.start();

            RegionInfo moved;
            try {
                moved = sync(client.admin().moveReplica(1, nodes.get(1), nodes.get(3)));
            } finally {
                stop.set(true);
                writer.join(60_000);
            }

            assertThat(writeFailure.get()).as("a write during the move failed").isNull();
            assertThat(acked).as("writes acknowledged during the move").isNotEmpty();
            Set<String> now = Set.of(nodes.get(0), nodes.get(2), nodes.get(3));
            assertThat(moved.peers()).containsExactlyInAnyOrderElementsOf(now);
            await().atMost(60, SECONDS).until(() -> cluster.hostsOf(1).equals(new java.util.TreeSet<>(now)));
            assertThat(cluster.dataDir(1).resolve("raft").resolve("region-1")).as("node 1's files of region 1")
                    .doesNotExist();
            assertThat(Files.readString(cluster.dataDir(1).resolve("raft").resolve(RegionCatalog.FILE)))
                    .doesNotContain("\"id\" : 1,");
            for (int i = 0; i < 4; i++) {
                if (cluster.node(i).host().region(1) != null) {
                    assertThat(cluster.node(i).host().region(1).peers()).as("node %d's view of region 1's replicas", i)
                            .containsExactlyInAnyOrderElementsOf(now);
                }
            }

            assertThat(io.kvraft.server.region.TestAccess.snapshotIndex(cluster.node(3).host().region(1)))
                    .as("the new replica installed a snapshot").isPositive();
            cluster.stopNode(0); // region 1 is on nodes 2 and 3 now: the moved replica is half its majority
            await().atMost(60, SECONDS).until(() -> cluster.leaderOf(1) >= 0);
            for (int i = 0; i < 300; i++) {
                assertThat(sync(client.get(key("k", i)))).as("key k%d", i).isEqualTo(value(i));
            }
            for (int i : acked.keySet()) {
                assertThat(sync(client.get(key("w", i)))).as("acknowledged write w%d", i).isEqualTo(value(i));
            }
        }
    }

    @Test
    void when_theSourceIsDownDuringTheMove_then_theMoveCompletes_andItsReplicaIsDroppedWhenItReturns() throws Exception {
        try (InProcessCluster cluster = start("memory")) {
            List<String> nodes = cluster.endpoints();
            KvClient client = cluster.client();
            putKeys(client);
            cluster.stopNode(1); // a node whose disk died: its replicas are rebuilt elsewhere

            RegionInfo moved = sync(client.admin().moveReplica(1, nodes.get(1), nodes.get(3)));

            Set<String> now = Set.of(nodes.get(0), nodes.get(2), nodes.get(3));
            assertThat(moved.peers()).containsExactlyInAnyOrderElementsOf(now);
            cluster.startNode(1); // back with a replica of region 1 that the region no longer counts
            Path files = cluster.dataDir(1).resolve("raft").resolve("region-1");
            // dropped: unlisted first, then its group stopped and its files removed
            await().atMost(90, SECONDS).until(() -> cluster.node(1).host().region(1) == null && !Files.exists(files));
            assertThat(cluster.hostsOf(1)).containsExactlyInAnyOrderElementsOf(now);
            assertThat(cluster.node(1).host().region(2)).as("node 1's other replicas stay").isNotNull();
            cluster.stopNode(0);
            assertKeys(client);
        }
    }

    /**
     * The target takes the learner, holds back its catch-up and then stops: the leader gives the move up once the
     * target has not reported its replica for {@code moves.silentTargetMs} (5 s here), not after the catch-up bound
     * (5 minutes), so the
     * move thread of that node is free again and the region is as it was. A second move meanwhile is refused at once.
     */
    @Test
    @Timeout(value = 150, unit = SECONDS)
    void when_theTargetStopsBeforeItCatchesUp_then_theMoveIsGivenUpSoon_andNothingChanges() throws Exception {
        try (InProcessCluster cluster = start("memory", true, c -> c.withMoves(new ServerConfig.MovesConfig(null, null, 5_000L)))) {
            List<String> nodes = cluster.endpoints();
            KvClient client = cluster.client();
            putKeys(client);
            java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
            AtomicBoolean held = new AtomicBoolean();
            cluster.stopNode(3);
            cluster.startNode(3, store -> new HoldsRegionOne(store, held, release));
            Set<String> before = cluster.hostsOf(1);
            int leader = cluster.leaderOf(1);
            String from = before.stream().filter(n -> !n.equals(nodes.get(leader))).findFirst().orElseThrow();
            KvServer target = cluster.node(3);
            Thread stopping = new Thread(() -> cluster.stopNode(3), "stop-node-3");
            try {
                java.util.concurrent.CompletableFuture<RegionInfo> move = client.admin().moveReplica(1, from, nodes.get(3));
                await().atMost(60, SECONDS).untilTrue(held); // a learner now, and behind
                // the leader's move thread is busy with that move: a second one is answered at once, not queued there
                java.util.concurrent.CompletableFuture<RegionInfo> second = client.admin().moveReplica(1, from, nodes.get(3));
                await().atMost(30, SECONDS).until(second::isDone);
                assertThatThrownBy(() -> sync(second))
                        .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.BUSY))
                        .hasMessageContaining("another replica move");
                stopping.start();
                await().atMost(30, SECONDS).until(target::isClosed); // it answers SHUTTING_DOWN from now on, then nothing
                release.countDown(); // so that its groups can stop

                assertThatThrownBy(() -> sync(move))
                        .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE))
                        .hasMessageContaining("given up, nothing changed")
                        .hasMessageContaining("did not report its replica");
            } finally {
                release.countDown();
                if (stopping.getState() != Thread.State.NEW) {
                    stopping.join(60_000);
                }
            }
            io.kvraft.server.region.Region led = cluster.node(cluster.leaderOf(1)).host().region(1);
            assertThat(Set.copyOf(led.peers())).isEqualTo(before);
            assertThat(led.node().listLearners()).as("the learner taken out again").isEmpty();
            assertKeys(client);
        }
    }

    /**
     * The leadership moves while the learner catches up: the old leader gives the move up and cannot take the learner
     * out (jraft refuses a configuration change on a follower). The next leader takes it out once it has stayed {@code
     * moves.strayLearnerMs} (2 s here) with no move of its own, and the learner's node drops its replica. A learner
     * of a move that runs stays however long the move lasts.
     */
    @Test
    @Timeout(value = 150, unit = SECONDS)
    void when_theLeaderChangesDuringTheMove_then_theNextLeaderTakesTheLearnerOut_andNothingChanges() throws Exception {
        // no leader balancer: it would hand the leadership straight back to the mover, whose move then completes
        try (InProcessCluster cluster = start("memory", false,
                c -> c.withMoves(new ServerConfig.MovesConfig(null, 2_000L)))) {
            List<String> nodes = cluster.endpoints();
            KvClient client = cluster.client();
            putKeys(client);
            java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
            AtomicBoolean held = new AtomicBoolean();
            cluster.stopNode(3);
            cluster.startNode(3, store -> new HoldsRegionOne(store, held, release));
            Set<String> before = cluster.hostsOf(1);
            int a = cluster.leaderOf(1);
            String from = before.stream().filter(n -> !n.equals(nodes.get(a))).findFirst().orElseThrow();
            int b = nodes.indexOf(before.stream().filter(n -> !n.equals(nodes.get(a)) && !n.equals(from))
                    .findFirst().orElseThrow());
            io.kvraft.server.region.Region onA = cluster.node(a).host().region(1);
            com.alipay.sofa.jraft.entity.PeerId learner = com.alipay.sofa.jraft.entity.PeerId.parsePeer(nodes.get(3));
            try {
                java.util.concurrent.CompletableFuture<RegionInfo> move = client.admin().moveReplica(1, from, nodes.get(3));
                await().atMost(60, SECONDS).untilTrue(held); // a learner now, and behind
                // the mover's own learner is no stray, however long its move takes
                await().during(4, SECONDS).atMost(30, SECONDS).until(() -> onA.node().listLearners().contains(learner));
                assertThat(regionOne(client).learners()).as("regions lists the learner").containsExactly(nodes.get(3));

                assertThat(onA.node().transferLeadershipTo(com.alipay.sofa.jraft.entity.PeerId.parsePeer(nodes.get(b)))
                        .isOk()).isTrue();
                io.kvraft.server.region.Region onB = cluster.node(b).host().region(1);
                await().atMost(60, SECONDS).until(onB::isLeader);
                release.countDown();

                assertThatThrownBy(() -> sync(move))
                        .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE))
                        .hasMessageContaining("given up, nothing changed");
                await().atMost(60, SECONDS).untilAsserted(() -> {
                    io.kvraft.server.region.Region led = cluster.node(cluster.leaderOf(1)).host().region(1);
                    assertThat(led.learners()).as("the old leader's learner, taken out").isEmpty();
                    assertThat(cluster.node(3).host().region(1)).as("the learner's replica, dropped").isNull();
                    assertThat(regionOne(client).learners()).isEmpty();
                });
            } finally {
                release.countDown();
            }
            assertThat(cluster.hostsOf(1)).isEqualTo(before);
            assertKeys(client);
        }
    }

    /**
     * Region 1 loses two of its three replicas' nodes: no leader can be elected, and a move of it fails after the
     * client's operation timeout with NO_LEADER (or NOT_LEADER) naming the nodes asked, not after the move's 10 minutes.
     */
    @Test
    @Timeout(value = 150, unit = SECONDS)
    void when_theRegionHasNoLeader_then_aMoveFailsAfterTheOperationTimeout_namingTheNodesAsked() throws Exception {
        try (InProcessCluster cluster = start("memory")) {
            List<String> nodes = cluster.endpoints();
            cluster.stopNode(1);
            cluster.stopNode(2); // region 1 is on nodes 0, 1 and 2: one replica left
            // until node 0 steps down (it cannot reach a majority) it may still take the move and answer it itself
            await().atMost(60, SECONDS).until(() -> !cluster.node(0).host().region(1).isLeader());
            KvClient client = cluster.client(new io.kvraft.client.config.ClientConfig(List.of(nodes.get(0), nodes.get(3)),
                    1_000L, 5_000L, null, null, null));

            assertThatThrownBy(() -> sync(client.admin().moveReplica(1, nodes.get(1), nodes.get(3))))
                    .isInstanceOfSatisfying(KvException.class,
                            e -> assertThat(e.code()).isIn(ErrorCode.NO_LEADER, ErrorCode.NOT_LEADER, ErrorCode.UNAVAILABLE))
                    .hasMessageContaining("tries");
            assertThat(cluster.node(0).host().region(1).peers()).containsExactlyInAnyOrderElementsOf(nodes.subList(0, 3));
        }
    }

    @Test
    void when_aMoveIsBad_then_itIsRefusedWithATypedError_andNothingChanges() throws Exception {
        try (InProcessCluster cluster = start("memory")) {
            List<String> nodes = cluster.endpoints();
            KvClient client = cluster.client();
            Set<String> before = cluster.hostsOf(1);

            assertRefused(client, 1, nodes.get(3), nodes.get(0), ErrorCode.INVALID_ARGUMENT, "holds no replica of region 1");
            assertRefused(client, 1, nodes.get(0), nodes.get(1), ErrorCode.INVALID_ARGUMENT, "holds a replica of region 1 already");
            assertRefused(client, 1, nodes.get(0), "127.0.0.1:1", ErrorCode.INVALID_ARGUMENT, "is not a node of the cluster");
            assertRefused(client, 1, nodes.get(0), nodes.get(0), ErrorCode.INVALID_ARGUMENT, "cannot move to the node it is on");
            assertRefused(client, 1, "nonsense", nodes.get(3), ErrorCode.INVALID_ARGUMENT, "nonsense");
            assertRefused(client, 4242, nodes.get(0), nodes.get(3), ErrorCode.REGION_NOT_FOUND, "4242");

            assertThat(cluster.hostsOf(1)).isEqualTo(before);
            assertThat(cluster.node(3).host().region(1)).isNull();
        }
    }

    /** Region 1 as {@code regions} lists it (its leader's answer). */
    private static RegionInfo regionOne(KvClient client) {
        return client.admin().regions().join().stream().filter(r -> r.id() == 1).findFirst().orElseThrow();
    }

    /** A store whose applies and snapshot loads of region 1 wait until {@code release}; {@code held} once one does. */
    private static final class HoldsRegionOne extends ForwardingStore {
        private final AtomicBoolean held;
        private final java.util.concurrent.CountDownLatch release;

        HoldsRegionOne(io.kvraft.server.store.KvStore store, AtomicBoolean held,
                       java.util.concurrent.CountDownLatch release) {
            super(store);
            this.held = held;
            this.release = release;
        }

        private void holdRegionOne(int region) {
            if (region == 1) {
                held.set(true);
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public void apply(int region, long appliedIndex, io.kvraft.server.store.StoreBatch batch) {
            holdRegionOne(region);
            super.apply(region, appliedIndex, batch);
        }

        @Override
        public void loadSnapshot(int region, long appliedIndex, io.kvraft.server.store.KeyRange range, Path dir,
                                 byte[] state) throws java.io.IOException {
            holdRegionOne(region);
            super.loadSnapshot(region, appliedIndex, range, dir, state);
        }
    }

    /** Writes keys k0..k99 of region 1. */
    private static void putKeys(KvClient client) {
        for (int i = 0; i < 100; i++) {
            sync(IdempotentWrites.put(client, key("k", i), value(i)));
        }
    }

    /** Reads keys k0..k99 back. */
    private static void assertKeys(KvClient client) {
        for (int i = 0; i < 100; i++) {
            assertThat(sync(client.get(key("k", i)))).as("key k%d", i).isEqualTo(value(i));
        }
    }

    private static void assertRefused(KvClient client, int region, String from, String to, ErrorCode code, String words) {
        assertThatThrownBy(() -> sync(client.admin().moveReplica(region, from, to)))
                .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(code))
                .hasMessageContaining(words);
    }
}
