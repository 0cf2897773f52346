package io.kvraft.server.launch;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.common.KvException;
import io.kvraft.client.route.RetryPolicy;
import io.kvraft.client.config.ClientConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Three real server JVMs from YAML files: a client writes and reads while one node is killed with
 * SIGKILL; afterwards every acknowledged write is read back.
 */
class ProcessClusterKillTest {

    @TempDir
    Path dir;

    @Test
    void when_oneNodeIsKilledMidRun_then_clientsGoOnAndNoAcknowledgedWriteIsLost() throws Exception {
        List<Path> configs = LocalClusterConfigs.write(dir.resolve("conf"), 3, "memory", 1000, "");
        List<String> jvm = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");
        try (ProcessCluster cluster = ProcessCluster.start(configs, dir.resolve("data"), jvm, Duration.ofSeconds(120));
             KvClient client = KvClients.connect(ClientConfig.of(cluster.servers()))) {
            Map<Long, Long> acked = new ConcurrentHashMap<>(); // key id -> acknowledged value; every put has its own key
            AtomicLong failures = new AtomicLong();       // failed with a code that says "not applied"
            AtomicLong unknownOutcome = new AtomicLong(); // in flight to the killed node: never retried (may have applied)
            AtomicLong ackedAfterKill = new AtomicLong();
            Semaphore inflight = new Semaphore(64);
            Random rnd = new Random(7);
            long start = System.nanoTime();
            boolean killed = false;
            long ops = 0;
            while (System.nanoTime() - start < SECONDS.toNanos(20)) {
                if (!killed && System.nanoTime() - start > SECONDS.toNanos(5)) {
                    cluster.kill(0);
                    killed = true;
                }
                long value = ++ops;
                long id = value;
                inflight.acquire();
                if (rnd.nextInt(10) == 0) {
                    client.get(key(rnd.nextInt((int) value))).whenComplete((v, e) -> inflight.release());
                    continue;
                }
                boolean afterKill = killed;
                client.put(key(id), ByteBuffer.allocate(8).putLong(value).array()).whenComplete((v, e) -> {
                    if (e == null) {
                        acked.put(id, value);
                        if (afterKill) {
                            ackedAfterKill.incrementAndGet();
                        }
                    } else if (RetryPolicy.outcomeUnknown(KvException.unwrap(e).code())) {
                        unknownOutcome.incrementAndGet();
                    } else {
                        failures.incrementAndGet();
                        System.out.println("put failed: " + KvException.unwrap(e).getMessage());
                    }
                    inflight.release();
                });
            }
            inflight.acquire(64);
            assertThat(killed).isTrue();
            assertThat(acked).isNotEmpty();
            List<byte[]> keys = acked.keySet().stream().map(ProcessClusterKillTest::key).toList();
            List<byte[]> values = client.multiGet(keys).join();
            long missing = 0;
            int i = 0;
            for (Long id : acked.keySet()) {
                byte[] v = values.get(i++);
                if (v == null || ByteBuffer.wrap(v).getLong() != acked.get(id)) {
                    missing++;
                }
            }
            assertThat(missing).as("acknowledged writes missing or wrong, of %d", acked.size()).isZero();
            assertThat(failures.get()).as("puts failed otherwise than with an unknown outcome").isZero();
            // only the puts in flight to the killed node when it died end unknown; the client goes on after that
            assertThat(unknownOutcome.get()).as("puts with an unknown outcome").isLessThanOrEqualTo(64);
            // the client carries on through the other two (however long the failover takes here)
            assertThat(ackedAfterKill.get()).as("puts sent after the kill and acknowledged").isPositive();
        }
    }

    static byte[] key(long id) {
        // spread over the whole key space: the first bytes are a mix of the id
        long h = id * 0x9E3779B97F4A7C15L;
        h ^= h >>> 29;
        return ByteBuffer.allocate(16).putLong(h).putLong(id).array();
    }
}
