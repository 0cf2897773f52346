package io.kvraft.server;

import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Reads under a steady write load while region leaders keep moving, in both read modes: a get invoked
 * after a put was acknowledged must return that put's value or a later one, never an older one. With
 * {@code read_index} the reads ride on the leader's next log entry (or take a ReadIndex round); with
 * {@code leader_lease} they are served on the leader's lease. A node that answered a read after it lost
 * the leadership, or before applying what it committed, would return an older value.
 */
class ReadFreshnessTest {

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

    @ParameterizedTest(name = "readMode {0}")
    @ValueSource(strings = {"read_index", "leader_lease"})
    void when_readsRunBesideWritesAndLeaderMoves_then_noReadReturnsAValueOlderThanAnAcknowledgedWrite(String readMode)
            throws Exception {
        cluster = InProcessCluster.start(3, 24, dir, "memory");
        cluster.awaitBalanced(120);
        KvClient writer = cluster.client();
        KvClient reader = cluster.client(new ClientConfig(cluster.endpoints(), null, null, readMode, null));
        List<RegionInfo> regions = writer.admin().regions().join();
        List<byte[]> keys = new ArrayList<>(ClusterTest.keyPerRegion(regions, "fresh"));
        int n = keys.size();
        AtomicLongArray acked = new AtomicLongArray(n); // highest value acknowledged per key
        AtomicBoolean running = new AtomicBoolean(true);
        ConcurrentLinkedQueue<String> stale = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<String> writeErrors = new ConcurrentLinkedQueue<>();
        AtomicLong reads = new AtomicLong();

        // one writer chain per key: value i+1 is written once value i is acknowledged; a write whose outcome is
        // unknown (a leader change may cause one) is written again, so the acknowledged values only grow
        List<CompletableFuture<Void>> chains = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            int key = k;
            CompletableFuture<Void> chain = new CompletableFuture<>();
            chains.add(chain);
            Runnable[] next = new Runnable[1];
            next[0] = () -> {
                if (!running.get()) {
                    chain.complete(null);
                    return;
                }
                long v = acked.get(key) + 1;
                writer.put(keys.get(key), counter(v)).whenComplete((ok, err) -> {
                    if (err != null) {
                        writeErrors.add(KvException.unwrap(err).code() + " on key " + key);
                    } else {
                        acked.accumulateAndGet(key, v, Math::max);
                    }
                    next[0].run();
                });
            };
            next[0].run();
        }
        Thread readers = new Thread(() -> {
            while (running.get()) {
                List<CompletableFuture<Void>> round = new ArrayList<>();
                for (int k = 0; k < n; k++) {
                    int key = k;
                    long floor = acked.get(key); // acknowledged before this get was invoked
                    round.add(reader.get(keys.get(key)).thenAccept(v -> {
                        long got = v == null ? 0 : ByteBuffer.wrap(v).getLong();
                        if (got < floor) {
                            stale.add("key " + key + ": read " + got + " after " + floor + " was acknowledged");
                        }
                    }));
                }
                CompletableFuture.allOf(round.toArray(CompletableFuture[]::new)).join();
                reads.addAndGet(n);
            }
        }, "fresh-readers");
        AtomicInteger moves = new AtomicInteger();
        Thread mover = new Thread(() -> moveLeaders(running, moves, reads::get, n), "leader-mover");
        readers.start();
        mover.start();
        try {
            await().atMost(240, SECONDS).until(() -> reads.get() >= 3_000 && acked.get(0) >= 100 && moves.get() >= 20);
        } finally {
            running.set(false);
            readers.join();
            mover.join();
        }
        CompletableFuture.allOf(chains.toArray(CompletableFuture[]::new)).get(60, SECONDS);
        assertThat(stale).as("stale reads with readMode %s (write errors: %s)", readMode, writeErrors).isEmpty();
        assertThat(writeErrors.size()).as("writes with an unknown outcome: %s", writeErrors).isLessThan(n * 10);
        for (int k = 0; k < n; k++) {
            long last = ByteBuffer.wrap(reader.get(keys.get(k)).join()).getLong();
            // the write after the last acknowledged one may have applied without an answer
            assertThat(last).as("key %d", k).isBetween(acked.get(k), acked.get(k) + 1);
        }
    }

    /**
     * Hands the leadership of a random region to another node, again and again, while {@code running};
     * between two moves the readers finish at least one more round ({@code round} reads), so the load
     * runs on every leader layout.
     */
    private void moveLeaders(AtomicBoolean running, AtomicInteger moves, java.util.function.LongSupplier reads, int round) {
        Random rnd = new Random(26);
        while (running.get()) {
            int node = rnd.nextInt(cluster.size());
            List<Region> led = cluster.node(node).host().regions().stream().filter(Region::isLeader).toList();
            if (!led.isEmpty()) {
                Region r = led.get(rnd.nextInt(led.size()));
                String target = cluster.endpoints().get((node + 1 + rnd.nextInt(cluster.size() - 1)) % cluster.size());
                if (r.node().transferLeadershipTo(PeerId.parsePeer(target)).isOk()) {
                    String from = cluster.endpoints().get(node);
                    try {
                        // moved once the old leader follows someone: from then on it must not answer reads
                        await().atMost(30, SECONDS).until(() -> !r.isLeader() && !r.leaderHint().equals(from));
                        moves.incrementAndGet();
                    } catch (org.awaitility.core.ConditionTimeoutException abandoned) {
                        // jraft gave the transfer up (the target did not catch up in time): not a move
                    }
                }
            }
            long before = reads.getAsLong();
            try {
                await().atMost(60, SECONDS).until(() -> !running.get() || reads.getAsLong() >= before + round);
            } catch (org.awaitility.core.ConditionTimeoutException stalled) {
                return; // the readers stalled: the main thread's wait fails and says so
            }
        }
    }
}
