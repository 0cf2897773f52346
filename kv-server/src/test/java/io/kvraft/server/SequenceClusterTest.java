package io.kvraft.server;

import com.alipay.sofa.jraft.entity.PeerId;
import com.google.protobuf.ByteString;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.SequenceAllocator;
import io.kvraft.client.SequenceRange;
import io.kvraft.client.cli.KvCtl;
import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;

import static io.kvraft.client.KvClient.sync;
import static io.kvraft.server.RaftTestSupport.deleteTree;
import static io.kvraft.server.RaftTestSupport.snapshotAllRegions;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Sequences against three RocksDB servers with six regions in this JVM: concurrent callers, a leader
 * transfer, a restart of every node, a wiped node that learns a sequence only from a snapshot, the
 * separation from the pairs, bad input and the CLI. Every test uses keys of its own; each leaves all
 * nodes running.
 */
@Timeout(value = 240, unit = SECONDS)
class SequenceClusterTest {

    @TempDir
    static Path dir;

    static InProcessCluster cluster;
    static KvClient client;

    @BeforeAll
    static void start() throws Exception {
        cluster = InProcessCluster.start(3, 6, dir, "rocksdb");
        cluster.awaitBalanced(60);
        client = cluster.client();
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void when_manyCallersTakeFromOneSequenceAtOnce_then_theRangesTileTheNumbersWithoutOverlap() throws Exception {
        byte[] key = bytes("seq/concurrent");
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<List<SequenceRange>>> callers = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                callers.add(pool.submit((Callable<List<SequenceRange>>) () -> {
                    List<SequenceRange> got = new ArrayList<>();
                    List<java.util.concurrent.CompletableFuture<SequenceRange>> inFlight = new ArrayList<>();
                    for (int i = 0; i < 40; i++) { // several in flight per caller, so entries carry many calls
                        inFlight.add(client.getSequence(key, 1 + ThreadLocalRandom.current().nextInt(5)));
                    }
                    inFlight.forEach(f -> got.add(sync(f)));
                    return got;
                }));
            }
            List<SequenceRange> all = new ArrayList<>();
            for (Future<List<SequenceRange>> f : callers) {
                all.addAll(f.get(120, SECONDS));
            }
            all.sort(Comparator.comparingLong(SequenceRange::start));
            long expectedStart = 0;
            for (SequenceRange r : all) {
                assertThat(r.start()).as("range %s", r).isEqualTo(expectedStart);
                assertThat(r.size()).isBetween(1L, 5L);
                expectedStart = r.end();
            }
            assertThat(sync(client.getLatestSequence(key))).isEqualTo(expectedStart);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void when_allocatorsHandOutIdsFromManyThreads_then_everyIdIsUniqueAndEachThreadSeesThemIncrease() throws Exception {
        byte[] key = bytes("seq/allocator");
        SequenceAllocator first = new SequenceAllocator(client, key, 16);
        SequenceAllocator second = new SequenceAllocator(client, key, 7);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<List<Long>>> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                SequenceAllocator allocator = t % 2 == 0 ? first : second;
                threads.add(pool.submit(() -> {
                    List<Long> ids = new ArrayList<>();
                    for (int i = 0; i < 200; i++) {
                        ids.add(allocator.next());
                    }
                    return ids;
                }));
            }
            Set<Long> seen = new HashSet<>();
            for (Future<List<Long>> f : threads) {
                List<Long> ids = f.get(120, SECONDS);
                assertThat(ids).isSorted();
                for (long id : ids) {
                    assertThat(seen.add(id)).as("id %d handed out twice", id).isTrue();
                }
            }
            assertThat(seen).hasSize(800);
            assertThat(Collections.max(seen)).isLessThan(sync(client.getLatestSequence(key)));
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void when_theLeaderMovesAndThenEveryNodeRestarts_then_theSequenceGoesOnWhereItWas() throws Exception {
        byte[] key = bytes("seq/restart");
        assertThat(sync(client.getSequence(key, 10))).isEqualTo(new SequenceRange(0, 10));

        int region = cluster.regionOf(key);
        int leader = cluster.leaderOf(region);
        int target = (leader + 1) % cluster.size();
        long termBefore = cluster.term(region);
        assertThat(regionOn(leader, region).node().transferLeadershipTo(
                PeerId.parsePeer(cluster.node(target).config().endpoint())).isOk()).isTrue();
        cluster.awaitNewTerm(region, termBefore);
        assertThat(sync(client.getSequence(key, 5))).isEqualTo(new SequenceRange(10, 15));

        for (int i = 0; i < cluster.size(); i++) {
            cluster.stopNode(i);
        }
        for (int i = 0; i < cluster.size(); i++) {
            cluster.startNode(i);
        }
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
        assertThat(sync(client.getSequence(key, 1))).isEqualTo(new SequenceRange(15, 16));
        assertThat(sync(client.getLatestSequence(key))).isEqualTo(16);
    }

    @Test
    void when_aWipedNodeCatchesUpFromASnapshotAndLeads_then_itHandsOutOnlyNewNumbers() throws Exception {
        byte[] key = bytes("seq/snapshot");
        sync(client.getSequence(key, 5));
        for (int i = 0; i < cluster.size(); i++) {
            snapshotAllRegions(cluster.node(i));
        }
        cluster.stopNode(2);
        await().atMost(30, SECONDS).until(cluster::allRegionsLed);
        sync(client.getSequence(key, 5));
        // two snapshots on the others: their logs no longer reach back to the first entry
        snapshotAllRegions(cluster.node(0));
        snapshotAllRegions(cluster.node(1));
        sync(client.getSequence(key, 5));
        snapshotAllRegions(cluster.node(0));
        snapshotAllRegions(cluster.node(1));

        deleteTree(Path.of(cluster.node(0).config().dataDir()).resolveSibling("node3"));
        cluster.startNode(2);
        KvServer wiped = cluster.node(2);
        await().atMost(60, SECONDS).untilAsserted(() -> {
            byte[] record = wiped.store().getSystem(key);
            assertThat(record).as("the sequence's record on the wiped node").isNotNull();
            assertThat(CoordRecord.parseFrom(record).getNextSequence()).isEqualTo(15);
        });

        int region = cluster.regionOf(key);
        // hand the region to the wiped node, again if the leader balancer takes it away before it is seen leading
        await().atMost(60, SECONDS).pollInterval(java.time.Duration.ofMillis(200)).until(() -> {
            if (wiped.host().region(region).isLeader()) {
                return true;
            }
            int leader = cluster.leaderOf(region);
            regionOn(leader, region).node().transferLeadershipTo(PeerId.parsePeer(wiped.config().endpoint()));
            return false;
        });
        assertThat(sync(client.getSequence(key, 2)).start()).isGreaterThanOrEqualTo(15);
        cluster.awaitBalanced(60);
    }

    @Test
    void when_aKeyNamesAPairAndASequence_then_scansAndDeletesNeverTouchTheSequence() {
        byte[] key = bytes("seq/shared");
        sync(client.put(key, bytes("value")));
        sync(client.getSequence(key, 3));

        assertThat(sync(client.scan(bytes("seq/"), bytes("seq0"), 100, false)))
                .extracting(kv -> new String(kv.key(), StandardCharsets.UTF_8)).containsExactly("seq/shared");
        sync(client.deleteRange(bytes("seq/"), bytes("seq0")));
        assertThat(sync(client.get(key))).isNull();
        assertThat(sync(client.getSequence(key, 1))).isEqualTo(new SequenceRange(3, 4));

        assertThat(sync(client.resetSequence(key))).isTrue();
        assertThat(sync(client.getLatestSequence(key))).isZero();
        assertThat(sync(client.resetSequence(key))).isFalse();
    }

    @Test
    void when_theStepIsNotAPositiveSaneNumber_then_theCallFailsWithInvalidArgument() {
        byte[] key = bytes("seq/bad");
        for (long step : new long[] {0, -1, Long.MIN_VALUE, (1L << 40) + 1, Long.MAX_VALUE}) {
            assertThatThrownBy(() -> sync(client.getSequence(key, step))).as("step %d", step)
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        }
        assertThatThrownBy(() -> sync(client.getSequence(new byte[0], 1)))
                .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        assertThat(sync(client.getLatestSequence(key))).as("nothing was taken").isZero();
    }

    @Test
    void when_aRequestBypassesTheClientWithAHugeStep_then_theLeaderRefusesItBeforeTheLog() {
        byte[] key = bytes("seq/wire");
        WriteResponse resp = cluster.writeToLeader(cluster.regionOf(key), WriteOp.newBuilder()
                .setType(WriteOpType.GET_SEQUENCE).setKey(ByteString.copyFrom(key)).setStep(-1L).build()); // 2^64 - 1 on the wire
        assertThat(resp.getError().getCode()).isEqualTo(KvProto.ErrorCode.INVALID_ARGUMENT);
        assertThat(sync(client.getLatestSequence(key))).isZero();
    }

    @Test
    void when_theCliTakesNumbers_then_itPrintsStartAndEnd() {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        String servers = String.join(",", cluster.endpoints());
        int code = KvCtl.run(new String[] {"--servers", servers, "sequence", "get", "seq/cli", "--step", "5"},
                new PrintWriter(out, true), new PrintWriter(err, true));
        assertThat(code).as(err.toString()).isZero();
        assertThat(out.toString()).isEqualTo("0\t5" + System.lineSeparator());

        StringWriter err2 = new StringWriter();
        int bad = KvCtl.run(new String[] {"--servers", servers, "sequence", "get", "seq/cli", "--step", "0"},
                new PrintWriter(new StringWriter(), true), new PrintWriter(err2, true));
        assertThat(bad).isEqualTo(2);
        assertThat(err2.toString()).contains("--step");
    }


    private static Region regionOn(int node, int region) {
        return cluster.node(node).host().region(region);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

}
