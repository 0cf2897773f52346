package io.kvraft.server.rpc;

import com.google.protobuf.ByteString;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.ReadRequest;
import io.kvraft.common.proto.KvProto.ReadResponse;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.InProcessCluster;
import io.kvraft.server.KvServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Bad input at every node through the real RPC port (garbage, truncated and lying bolt frames, bad keys,
 * unknown regions, wrong epochs both ways, writes to followers) while a well-behaved client writes: each
 * bad request gets its typed error, the good client sees no error, and every write it had acknowledged
 * reads back. And a node that is shutting down answers SHUTTING_DOWN.
 */
class BadInputWhileServingTest {

    @TempDir
    Path dir;

    @Test
    void when_badInputHitsEveryNodeDuringLoad_then_eachGetsItsErrorAndTheGoodClientSeesNone() throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(3, 6, dir, "memory");
             Transport raw = new Transport()) {
            cluster.awaitBalanced(120);
            KvClient good = cluster.client();
            List<RegionInfo> regions = good.admin().regions().join();

            Map<Long, Long> acked = new ConcurrentHashMap<>();
            Queue<String> goodErrors = new ConcurrentLinkedQueue<>();
            AtomicBoolean running = new AtomicBoolean(true);
            Thread writer = new Thread(() -> writeSteadily(good, acked, goodErrors, running), "good-client");
            writer.start();
            try {
                await().atMost(30, SECONDS).until(() -> acked.size() > 100);
                Random rnd = new Random(3);
                for (String node : cluster.endpoints()) {
                    sendJunk(node, rnd);
                    sendTruncatedFrames(node);
                }
                for (RegionInfo r : regions) {
                    assertBadRequestsAnswered(raw, cluster, r);
                }
                int before = acked.size();
                await().atMost(30, SECONDS).until(() -> acked.size() > before + 100);
            } finally {
                running.set(false);
                writer.join(SECONDS.toMillis(60));
            }
            assertThat(goodErrors).as("errors seen by the well-behaved client").isEmpty();
            List<Long> ids = new ArrayList<>(acked.keySet());
            List<byte[]> values = good.multiGet(ids.stream().map(BadInputWhileServingTest::key).toList()).join();
            for (int i = 0; i < ids.size(); i++) {
                assertThat(values.get(i)).as("acknowledged write %d", ids.get(i))
                        .isEqualTo(ByteBuffer.allocate(8).putLong(acked.get(ids.get(i))).array());
            }
        }
    }

    @Test
    void when_aNodeIsShuttingDown_then_itAnswersShuttingDown() throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(3, 6, dir, "memory");
             Transport raw = new Transport()) {
            cluster.awaitBalanced(120);
            KvServer leaving = cluster.node(2);
            String target = cluster.endpoints().get(2);
            RegionInfo region = cluster.client().admin().regions().join().stream()
                    .filter(r -> r.leader().equals(target)).findFirst().orElseThrow();
            Set<ErrorCode> seen = EnumSet.noneOf(ErrorCode.class);
            CompletableFuture<Void> shutdown = CompletableFuture.runAsync(() -> leaving.shutdownGracefully(20_000));
            while (!shutdown.isDone()) {
                try {
                    WriteResponse r = raw.<WriteResponse>call(target, put(region, region.epoch(), keyIn(region)), 1000).join();
                    seen.add(r.getError().getCode());
                } catch (RuntimeException e) {
                    seen.add(KvException.unwrap(e).code().toWire()); // the port closes at the end
                }
            }
            shutdown.join();
            assertThat(seen).contains(ErrorCode.SHUTTING_DOWN)
                    .isSubsetOf(ErrorCode.OK, ErrorCode.SHUTTING_DOWN, ErrorCode.UNAVAILABLE, ErrorCode.TIMEOUT);
        }
    }

    private static void writeSteadily(KvClient client, Map<Long, Long> acked, Queue<String> errors, AtomicBoolean running) {
        Semaphore window = new Semaphore(16);
        long id = 0;
        try {
            while (running.get()) {
                window.acquire();
                long k = ++id;
                long v = k * 31;
                client.put(key(k), ByteBuffer.allocate(8).putLong(v).array()).whenComplete((ok, e) -> {
                    if (e == null) {
                        acked.put(k, v);
                    } else {
                        errors.add(KvException.unwrap(e).getMessage());
                    }
                    window.release();
                });
            }
            window.acquire(16);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sendJunk(String node, Random rnd) throws Exception {
        for (int i = 0; i < 3; i++) {
            byte[] junk = new byte[1 + rnd.nextInt(2048)];
            rnd.nextBytes(junk);
            junk[0] = (byte) (i + 1); // bolt protocol codes 1 and 2 make the decoder read on; 3 is none
            rawSend(node, junk);
        }
    }

    /**
     * Bolt v1 request frames that end early or promise more than they carry, then the connection closes:
     * the node must drop just that connection.
     */
    private static void sendTruncatedFrames(String node) throws Exception {
        ByteBuffer header = ByteBuffer.allocate(22);
        header.put((byte) 1)             // protocol: bolt v1
                .put((byte) 1)           // type: request
                .putShort((short) 1)     // command: rpc request
                .put((byte) 1)           // version
                .putInt(42)              // request id
                .put((byte) 11)          // codec: protobuf-ish id, irrelevant here
                .putInt(1000)            // timeout
                .putShort((short) 60)    // class name length
                .putShort((short) 0)     // header length
                .putInt(1 << 20);        // content length: 1 MiB promised
        byte[] h = header.array();
        rawSend(node, java.util.Arrays.copyOf(h, 9));                   // cut inside the header
        byte[] lying = java.util.Arrays.copyOf(h, h.length + 30);      // whole header, 30 of 60 class bytes
        rawSend(node, lying);
        byte[] full = java.util.Arrays.copyOf(h, h.length + 60 + 100); // class name of zeros, short content
        rawSend(node, full);
    }

    private static void rawSend(String node, byte[] bytes) throws Exception {
        String[] hp = node.split(":");
        try (Socket s = new Socket(hp[0], Integer.parseInt(hp[1])); OutputStream out = s.getOutputStream()) {
            out.write(bytes);
            out.flush();
        }
    }

    private static void assertBadRequestsAnswered(Transport raw, InProcessCluster cluster, RegionInfo r) {
        RegionInfo fresh = cluster.client().admin().regions().join().stream().filter(x -> x.id() == r.id()).findFirst()
                .orElseThrow();
        String leader = fresh.leader();
        String follower = fresh.peers().stream().filter(p -> !p.equals(leader)).findFirst().orElseThrow();
        long epoch = fresh.epoch();
        byte[] k = keyIn(fresh);
        assertThat(write(raw, leader, put(fresh, epoch, new byte[0]))).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(write(raw, leader, put(fresh, epoch, append(k, new byte[5000])))).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(write(raw, leader, putValue(fresh, epoch, k, new byte[(1 << 20) + 1]))).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(write(raw, leader, put(fresh, epoch - 1, k))).isEqualTo(ErrorCode.STALE_EPOCH);
        assertThat(write(raw, leader, put(fresh, epoch + 5, k))).isEqualTo(ErrorCode.STALE_EPOCH);
        WriteRequest unknown = WriteRequest.newBuilder(put(fresh, epoch, k)).setRegionId(9_999).build();
        assertThat(write(raw, leader, unknown)).isEqualTo(ErrorCode.REGION_NOT_FOUND);
        assertThat(write(raw, follower, put(fresh, epoch, k))).isIn(ErrorCode.NOT_LEADER);
        ReadResponse read = raw.<ReadResponse>call(leader, ReadRequest.newBuilder().setRegionId(fresh.id())
                .setRegionEpoch(epoch).addKeys(ByteString.EMPTY).build(), 5000).join();
        assertThat(read.getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
    }

    private static ErrorCode write(Transport raw, String target, WriteRequest req) {
        return raw.<WriteResponse>call(target, req, 5000).join().getError().getCode();
    }

    private static WriteRequest put(RegionInfo r, long epoch, byte[] key) {
        return putValue(r, epoch, key, new byte[]{1});
    }

    private static WriteRequest putValue(RegionInfo r, long epoch, byte[] key, byte[] value) {
        return WriteRequest.newBuilder().setRegionId(r.id()).setRegionEpoch(epoch)
                .addOps(WriteOp.newBuilder().setType(WriteOpType.PUT).setKey(ByteString.copyFrom(key))
                        .setValue(ByteString.copyFrom(value))).build();
    }

    private static byte[] keyIn(RegionInfo r) {
        return append(r.startKey(), new byte[]{0, 'b', 'a', 'd'});
    }

    private static byte[] append(byte[] a, byte[] b) {
        return ByteBuffer.allocate(a.length + b.length).put(a).put(b).array();
    }

    static byte[] key(long id) {
        long h = id * 0x9E3779B97F4A7C15L;
        return ByteBuffer.allocate(16).putLong(h).putLong(id).array();
    }
}
