package io.kvraft.server.launch;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.client.config.ClientConfig;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Three real server JVMs; a client writes unique keys and records every acknowledgement; then all three
 * are killed with SIGKILL at once, writes still in flight, and restarted on the same data. No acknowledged
 * write may be missing afterwards. Three cycles per engine, with snapshots every 5 s, so restarts load a
 * local snapshot and replay the log after it (for rocksdb: over a store that is already ahead of both).
 * (Much shorter intervals make jraft churn snapshots under a follower that is still copying one, which
 * on a loaded machine puts that follower's group into ERROR: sofa-jraft issue #955.)
 */
class DurableRestartTest {

    private static final int CYCLES = 3;
    private static final long WRITE_PHASE_MS = 3_000;
    /** Past WRITE_PHASE_MS a cycle writes on until this many puts came back, for at most MAX_WRITE_PHASE_MS. */
    private static final int MIN_ACKED_PER_CYCLE = 100;
    private static final long MAX_WRITE_PHASE_MS = 60_000;
    private static final int INFLIGHT = 64;
    private static final List<String> SMALL_JVM = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_allNodesAreKilledAtOnceAndRestarted_then_noAcknowledgedWriteIsLost(String engine) throws Exception {
        // short snapshot interval so restarts go through local snapshots; no balancer moving leaders mid-cycle
        List<Path> configs = LocalClusterConfigs.write(dir, 3, engine, "electionTimeoutMs: 1000\nsnapshotIntervalSecs: 5",
                "enabled: false", "");
        // the writer gives up soon (2 s a try, 5 s a put) so the puts in flight at a kill settle; the reader that checks
        // them after a restart has the defaults (5 s, 30 s): on a loaded machine a restarted cluster's first multiGet
        // over every region outlasted 5 s
        ClientConfig clientConfig = new ClientConfig(null, 2_000L, 5_000L, null, null);
        long t0 = System.nanoTime();
        try (ProcessCluster cluster = ProcessCluster.start(configs, dir.resolve("data"), SMALL_JVM, Duration.ofSeconds(120));
             KvClient client = KvClients.connect(clientConfig.withServers(cluster.servers()));
             KvClient reader = KvClients.connect(new ClientConfig(cluster.servers(), null, null, null, null))) {
            Map<Long, Long> acked = new ConcurrentHashMap<>(); // key id -> value; every put has its own key
            AtomicLong failed = new AtomicLong();
            AtomicLong nextId = new AtomicLong();
            Semaphore inflight = new Semaphore(INFLIGHT);
            System.out.printf("%s: cluster ready in %d ms%n", engine, ms(t0));
            try {
                runCycles(engine, cluster, client, reader, acked, failed, nextId, inflight);
            } catch (Throwable t) {
                printNodeErrors(cluster.dataRoot());
                throw t;
            }
        }
    }

    private static void runCycles(String engine, ProcessCluster cluster, KvClient client, KvClient reader, Map<Long, Long> acked,
                                  AtomicLong failed, AtomicLong nextId, Semaphore inflight) throws Exception {
        for (int cycle = 1; cycle <= CYCLES; cycle++) {
            long start = System.nanoTime();
            long end = start + TimeUnit.MILLISECONDS.toNanos(WRITE_PHASE_MS);
            long endAtLatest = start + TimeUnit.MILLISECONDS.toNanos(MAX_WRITE_PHASE_MS);
            long ackedAtStart = acked.size();
            // 3 s of writes, longer while fewer than MIN_ACKED_PER_CYCLE came back: on a slow machine a restarted
            // cluster's first puts can take longer than 3 s, and a cycle with nothing acknowledged proves nothing
            while (System.nanoTime() < end
                    || (acked.size() - ackedAtStart < MIN_ACKED_PER_CYCLE && System.nanoTime() < endAtLatest)) {
                inflight.acquire();
                long id = nextId.incrementAndGet();
                long value = id * 31 + cycle;
                client.put(key(id), ByteBuffer.allocate(8).putLong(value).array()).whenComplete((v, e) -> {
                    if (e == null) {
                        acked.put(id, value);
                    } else {
                        failed.incrementAndGet();
                    }
                    inflight.release();
                });
            }
            // all three at once, right away: up to INFLIGHT puts are on their way
            long ackedThisCycle = acked.size() - ackedAtStart;
            long writeMs = ms(start);
            for (int i = 0; i < 3; i++) {
                cluster.kill(i);
            }
            long restart = System.nanoTime();
            for (int i = 0; i < 3; i++) {
                cluster.startNode(i);
            }
            cluster.awaitReady(Duration.ofSeconds(120));
            long readyMs = ms(restart);
            assertThat(inflight.tryAcquire(INFLIGHT, 30, TimeUnit.SECONDS)).as("in-flight puts settle").isTrue();
            inflight.release(INFLIGHT);

            List<Long> ids = new ArrayList<>(acked.keySet());
            List<byte[]> values = reader.multiGet(ids.stream().map(DurableRestartTest::key).toList()).join();
            long missing = 0;
            for (int i = 0; i < ids.size(); i++) {
                byte[] v = values.get(i);
                if (v == null || ByteBuffer.wrap(v).getLong() != acked.get(ids.get(i))) {
                    missing++;
                }
            }
            long[] snapshots = snapshotLoads(cluster.dataRoot());
            System.out.printf("%s cycle %d: %d puts acknowledged in %d ms before the kill, %d in all, %d failed,"
                            + " %d missing; ready %d ms after the restart; so far %d snapshots loaded, %d not needed"
                            + " (store ahead)%n", engine, cycle, ackedThisCycle, writeMs, acked.size(), failed.get(),
                    missing, readyMs, snapshots[0], snapshots[1]);
            assertThat(ackedThisCycle).as("puts acknowledged in cycle %d", cycle).isPositive();
            assertThat(missing).as("acknowledged writes missing or wrong after cycle %d, of %d", cycle, ids.size()).isZero();
            if (cycle == CYCLES) {
                // the restarts went through local snapshots: loaded (memory), or skipped as the store was ahead (rocksdb)
                assertThat(snapshots[engine.equals("memory") ? 0 : 1]).as("restarts over a local snapshot").isPositive();
            }
        }
    }


    /** The servers' own errors (not the connection noise of peers being down), for a failing run. */
    private static void printNodeErrors(Path dataRoot) {
        for (int i = 1; i <= 3; i++) {
            Path log = dataRoot.resolve("node" + i + ".log");
            try {
                List<String> errors = Files.readAllLines(log).stream()
                        .filter(l -> l.contains(" ERROR ") && !l.contains("AbstractClientService") && !l.contains("Fail to connect")
                                && !l.contains("channel") && !l.contains("replicator") && !l.contains("Replicator"))
                        .toList();
                System.out.printf("node %d: %d errors, the last ones:%n", i, errors.size());
                errors.subList(Math.max(0, errors.size() - 30), errors.size()).forEach(l -> System.out.println("  " + l));
            } catch (Exception e) {
                System.out.println("node " + i + ": cannot read " + log + ": " + e);
            }
        }
    }

    private static long ms(long since) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since);
    }

    /** How often the nodes loaded a snapshot, and how often a snapshot was not needed because the store was ahead. */
    private static long[] snapshotLoads(Path dataRoot) throws Exception {
        long[] loadedSkipped = new long[2];
        for (int i = 1; i <= 3; i++) {
            for (String line : Files.readAllLines(dataRoot.resolve("node" + i + ".log"))) {
                loadedSkipped[0] += line.contains(": snapshot loaded at index") ? 1 : 0;
                loadedSkipped[1] += line.contains("not loaded") ? 1 : 0;
            }
        }
        return loadedSkipped;
    }

    static byte[] key(long id) {
        return ProcessClusterKillTest.key(id);
    }
}
