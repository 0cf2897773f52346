package io.kvraft.server;

import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Writes in flight while a region's leader hands over: jraft fails the old leader's pending entries with "Leader
 * stepped down", though a transfer only starts once the target holds them all, so they commit under the new leader.
 * The old leader answers each write by its entry's fate in the log (applied, or not and then retried), never "outcome
 * unknown". Chains of compare-and-puts show both mistakes it could make: a write answered "not applied" that was
 * (its retry finds the value already moved on and fails), and one answered "applied" that was not (the count of
 * acknowledged steps outruns the value).
 */
@Timeout(value = 300, unit = SECONDS)
class LeaderMoveWritesTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static byte[] counter(long n) {
        return ByteBuffer.allocate(Long.BYTES).putLong(n).array();
    }

    @ParameterizedTest(name = "engine {0}")
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_leadersMoveUnderCompareAndPutChains_then_everyStepIsAnsweredByItsFate(String engine) throws Exception {
        cluster = InProcessCluster.start(3, 4, dir, engine);
        cluster.awaitBalanced(120);
        KvClient client = cluster.client();
        List<RegionInfo> regions = client.admin().regions().join();
        List<byte[]> keys = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            keys.addAll(ClusterTest.keyPerRegion(regions, "move-" + i));
        }
        int n = keys.size();
        for (byte[] k : keys) {
            client.put(k, counter(0)).get(30, SECONDS);
        }
        AtomicLongArray acked = new AtomicLongArray(n);
        AtomicBoolean running = new AtomicBoolean(true);
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        List<CompletableFuture<Void>> chains = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            int key = k;
            CompletableFuture<Void> chain = new CompletableFuture<>();
            chains.add(chain);
            Runnable[] next = new Runnable[1];
            next[0] = () -> {
                long v = acked.get(key);
                if (!running.get() || !errors.isEmpty()) {
                    chain.complete(null);
                    return;
                }
                client.compareAndPut(keys.get(key), counter(v), counter(v + 1)).whenComplete((ok, err) -> {
                    if (err != null) {
                        KvException e = KvException.unwrap(err);
                        errors.add("key " + key + " step " + (v + 1) + ": " + e.code() + " " + e.getMessage());
                    } else if (!ok) {
                        errors.add("key " + key + " step " + (v + 1) + ": compare-and-put refused (already applied?)");
                    } else {
                        acked.set(key, v + 1);
                    }
                    next[0].run();
                });
            };
            next[0].run();
        }
        int moves = 0;
        try {
            for (int round = 0; round < 12 && errors.isEmpty(); round++) {
                int region = regions.get(round % regions.size()).id();
                int from = cluster.leaderOf(region);
                long before = cluster.term(region);
                long progress = sum(acked);
                // let the chains run on this layout first, so entries are in flight when the leader moves
                await().atMost(60, SECONDS).until(() -> !errors.isEmpty() || sum(acked) >= progress + 50);
                Region r = cluster.node(from).host().region(region);
                String target = cluster.endpoints().get((from + 1 + round % 2) % cluster.size());
                if (r.node().transferLeadershipTo(PeerId.parsePeer(target)).isOk()) {
                    cluster.awaitNewTerm(region, before);
                    moves++;
                }
            }
        } finally {
            running.set(false);
        }
        CompletableFuture.allOf(chains.toArray(CompletableFuture[]::new)).get(60, SECONDS);
        assertThat(errors).as("answers other than applied (after %d leader moves)", moves).isEmpty();
        assertThat(moves).isGreaterThanOrEqualTo(6);
        for (int k = 0; k < n; k++) {
            long value = ByteBuffer.wrap(client.get(keys.get(k)).get(30, SECONDS)).getLong();
            assertThat(value).as("key %d: acknowledged steps", k).isEqualTo(acked.get(k));
        }
    }

    /**
     * The old leader's state machine is held inside one entry's apply while more entries commit behind it; then the
     * leadership moves. jraft fails the closures of the committed entries it had not applied yet ("Leader stepped
     * down"); the node, a follower now, applies them once released and answers their writes as applied.
     */
    @ParameterizedTest(name = "engine {0}")
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_theOldLeaderAppliesEntriesAfterItsLeadershipEnded_then_theirWritesAreAnsweredApplied(String engine)
            throws Exception {
        List<GatedApply> gates = new ArrayList<>();
        cluster = InProcessCluster.start(3, 4, dir, engine, io.kvraft.server.config.RaftConfig.LOG_SHARED,
                c -> c.withBalance(new io.kvraft.server.config.ServerConfig.BalanceConfig(false, 200, null)), store -> {
                    GatedApply g = new GatedApply(store);
                    gates.add(g);
                    return g;
                });
        // several requests in flight per region, so puts queue on the leader behind the held one
        KvClient client = cluster.client(new io.kvraft.client.config.ClientConfig(cluster.endpoints(), null, null, null,
                new io.kvraft.client.config.ClientConfig.Batching(true, 1, null, 64, null, null), null));
        RegionInfo region = client.admin().regions().join().get(0);
        int id = region.id();
        int from = cluster.leaderOf(id);
        List<byte[]> keys = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            keys.add(ClusterTest.keyPerRegion(List.of(region), "held-" + i).get(0));
        }
        client.put(keys.get(0), counter(0)).get(30, SECONDS); // the region takes writes

        GatedApply gate = gates.get(from);
        try {
            movesWithHeldApply(client, gate, keys, id, from);
        } finally {
            gate.release.countDown(); // else the node cannot stop
        }
    }

    private void movesWithHeldApply(KvClient client, GatedApply gate, List<byte[]> keys, int id,
                                    int from) throws Exception {
        gate.hold(id);
        List<CompletableFuture<Void>> puts = new ArrayList<>();
        puts.add(client.put(keys.get(0), counter(1)));
        await().atMost(30, SECONDS).until(() -> gate.held.getCount() == 0); // the state machine is inside that apply
        Region onLeader = cluster.node(from).host().region(id);
        for (int i = 1; i < keys.size(); i++) {
            puts.add(client.put(keys.get(i), counter(i + 1)));
        }
        // entries behind the held one commit: the followers have them, the leader has not applied them
        // (jraft reports a node's commit index as its state machine has taken it in: ask the followers)
        Region onFollower = cluster.node((from + 1) % cluster.size()).host().region(id);
        await().atMost(30, SECONDS).until(() -> onFollower.node().getLastCommittedIndex()
                >= onLeader.node().getLastAppliedLogIndex() + 2);
        long before = cluster.term(id);
        String target = cluster.endpoints().get((from + 1) % cluster.size());
        assertThat(onLeader.node().transferLeadershipTo(PeerId.parsePeer(target)).isOk()).isTrue();
        await().atMost(30, SECONDS).until(() -> cluster.term(id) > before && !onLeader.isLeader());
        gate.release.countDown();

        List<String> failed = new ArrayList<>();
        for (int i = 0; i < puts.size(); i++) {
            try {
                puts.get(i).get(60, SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                KvException k = KvException.unwrap(e);
                failed.add("put " + i + ": " + k.code() + " " + k.getMessage());
            }
        }
        assertThat(failed).as("writes whose entries committed while the old leader was held").isEmpty();
        for (int i = 0; i < keys.size(); i++) {
            assertThat(client.get(keys.get(i)).get(30, SECONDS)).as("key %d", i).isEqualTo(counter(i + 1));
        }
    }

    private static long sum(AtomicLongArray a) {
        long s = 0;
        for (int i = 0; i < a.length(); i++) {
            s += a.get(i);
        }
        return s;
    }
}
