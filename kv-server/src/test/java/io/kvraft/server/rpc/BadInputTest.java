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
import io.kvraft.server.config.ServerConfig.BalanceConfig;
import io.kvraft.server.config.RaftConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.awaitility.Awaitility.await;

/** Bad requests through the real RPC port: each gets its documented error and the node keeps serving. */
class BadInputTest {

    @TempDir
    static Path dir;

    static InProcessCluster cluster;
    static KvClient client;
    static Transport transport;
    static RegionInfo region;
    static String follower;

    @BeforeAll
    static void start() throws Exception {
        // the balancer off: leaders stay where the elections put them (each test still looks its leader up)
        cluster = InProcessCluster.start(3, 24, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withBalance(new BalanceConfig(false, null, null)));
        client = cluster.client();
        transport = new Transport();
    }

    /** Region 4 with the leader its nodes agree on now, and one of its followers. */
    @BeforeEach
    void lookUpTheLeader() {
        await().atMost(60, SECONDS).until(() -> {
            RegionInfo r = client.admin().regions().join().stream().filter(i -> i.id() == 4).findFirst().orElseThrow();
            long leaders = cluster.endpoints().stream().filter(e -> leads(e, 4)).count();
            if (leaders != 1 || r.leader().isEmpty() || !leads(r.leader(), 4)) {
                return false;
            }
            region = r;
            return true;
        });
        follower = region.peers().stream().filter(p -> !p.equals(region.leader())).findFirst().orElseThrow();
    }

    private static boolean leads(String endpoint, int regionId) {
        int i = cluster.endpoints().indexOf(endpoint);
        return cluster.node(i).host().region(regionId).isLeader();
    }

    private static ErrorCode codeOf(Runnable call) {
        Throwable t = catchThrowable(call::run);
        assertThat(t).as("the call should fail").isNotNull();
        return KvException.unwrap(t).code().toWire();
    }

    @AfterAll
    static void stop() {
        transport.close();
        cluster.close();
    }

    static byte[] keyIn(RegionInfo r) {
        byte[] start = r.startKey();
        byte[] k = java.util.Arrays.copyOf(start, start.length + 1);
        k[start.length] = 1;
        return k;
    }

    private WriteResponse write(String target, WriteRequest req) {
        return transport.<WriteResponse>call(target, req, 5000).join();
    }

    private WriteRequest put(RegionInfo r, long epoch, byte[] key, byte[] value) {
        return WriteRequest.newBuilder().setRegionId(r.id()).setRegionEpoch(epoch)
                .addOps(WriteOp.newBuilder().setType(WriteOpType.PUT).setKey(ByteString.copyFrom(key))
                        .setValue(ByteString.copyFrom(value))).build();
    }

    @Test
    void when_keyIsEmpty_then_invalidArgument() {
        assertThat(write(region.leader(), put(region, 1, new byte[0], new byte[1])).getError().getCode())
                .isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(codeOf(() -> client.put(new byte[0], new byte[1]).join())).isEqualTo(ErrorCode.INVALID_ARGUMENT);
    }

    @Test
    void when_keyOrValueIsOversized_then_invalidArgumentNamingTheLimit() {
        byte[] bigKey = new byte[4097];
        System.arraycopy(keyIn(region), 0, bigKey, 0, keyIn(region).length);
        WriteResponse r = write(region.leader(), put(region, 1, bigKey, new byte[1]));
        assertThat(r.getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(r.getError().getDetail()).contains("maxKeyBytes");
        r = write(region.leader(), put(region, 1, keyIn(region), new byte[(1 << 20) + 1]));
        assertThat(r.getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(r.getError().getDetail()).contains("maxValueBytes");
        assertThat(codeOf(() -> client.put(keyIn(region), new byte[(1 << 20) + 1]).join()))
                .isEqualTo(ErrorCode.INVALID_ARGUMENT);
    }

    @Test
    void when_regionIsUnknown_then_regionNotFound() {
        WriteRequest req = WriteRequest.newBuilder(put(region, 1, keyIn(region), new byte[1])).setRegionId(999).build();
        assertThat(write(region.leader(), req).getError().getCode()).isEqualTo(ErrorCode.REGION_NOT_FOUND);
        ReadResponse rr = transport.<ReadResponse>call(region.leader(), ReadRequest.newBuilder().setRegionId(0)
                .setRegionEpoch(1).addKeys(ByteString.copyFrom(keyIn(region))).build(), 5000).join();
        assertThat(rr.getError().getCode()).isEqualTo(ErrorCode.REGION_NOT_FOUND);
    }

    @Test
    void when_keyIsOutsideTheRegion_then_keyOutOfRange() {
        RegionInfo other = client.admin().regions().join().get(10);
        assertThat(write(region.leader(), put(region, 1, keyIn(other), new byte[1])).getError().getCode())
                .isEqualTo(ErrorCode.KEY_OUT_OF_RANGE);
    }

    @Test
    void when_epochIsStale_then_staleEpoch() {
        assertThat(write(region.leader(), put(region, 0, keyIn(region), new byte[1])).getError().getCode())
                .isEqualTo(ErrorCode.STALE_EPOCH);
    }

    @Test
    void when_writeGoesToAFollower_then_notLeaderWithTheLeaderAsHint() {
        WriteResponse r = write(follower, put(region, 1, keyIn(region), new byte[1]));
        assertThat(r.getError().getCode()).isEqualTo(ErrorCode.NOT_LEADER);
        assertThat(r.getError().getLeaderHint()).isEqualTo(region.leader());
    }

    @Test
    void when_batchIsEmpty_then_invalidArgument() {
        WriteRequest req = WriteRequest.newBuilder().setRegionId(region.id()).setRegionEpoch(1).build();
        assertThat(write(region.leader(), req).getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
    }

    @Test
    void when_aWriteRequestCarriesReadsButNoWrites_then_invalidArgument() {
        WriteRequest req = WriteRequest.newBuilder().setRegionId(region.id()).setRegionEpoch(1)
                .addReadKeys(ByteString.copyFrom(keyIn(region))).build();
        WriteResponse r = write(region.leader(), req);
        assertThat(r.getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(r.getError().getDetail()).contains("empty write batch");
    }

    @Test
    void when_aReadRidingOnWritesIsOutsideTheRegion_then_keyOutOfRangeAndNothingIsWritten() throws Exception {
        byte[] key = java.util.Arrays.copyOf(keyIn(region), keyIn(region).length + 1);
        key[key.length - 1] = 7; // a key of this test alone
        RegionInfo other = client.admin().regions().join().get(10);
        WriteRequest req = WriteRequest.newBuilder(put(region, 1, key, new byte[] {1}))
                .addReadKeys(ByteString.copyFrom(keyIn(other))).build();
        assertThat(write(region.leader(), req).getError().getCode()).isEqualTo(ErrorCode.KEY_OUT_OF_RANGE);
        WriteRequest empty = WriteRequest.newBuilder(put(region, 1, key, new byte[] {1}))
                .addReadKeys(ByteString.EMPTY).build();
        assertThat(write(region.leader(), empty).getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(client.get(key).get(30, SECONDS)).as("the refused requests' put").isNull();
    }

    @Test
    void when_writesAndRidingReadsTogetherExceedMaxBatchOps_then_invalidArgumentNamingTheLimit() {
        WriteRequest.Builder b = WriteRequest.newBuilder(put(region, 1, keyIn(region), new byte[1]));
        for (int i = 0; i < 10_000; i++) { // 1 op and 10,000 reads: one over limits.maxBatchOps
            b.addReadKeys(ByteString.copyFrom(keyIn(region)));
        }
        WriteResponse r = write(region.leader(), b.build());
        assertThat(r.getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(r.getError().getDetail()).contains("10000 reads").contains("limits.maxBatchOps");
    }

    @Test
    void when_garbageBytesHitTheRpcPort_then_theNodeKeepsServing() throws Exception {
        byte[] key = keyIn(region);
        client.put(key, "before".getBytes()).join();
        String[] hp = region.leader().split(":");
        Random rnd = new Random(1);
        for (int i = 0; i < 5; i++) {
            try (Socket s = new Socket(hp[0], Integer.parseInt(hp[1])); OutputStream out = s.getOutputStream()) {
                byte[] junk = new byte[1 + rnd.nextInt(4096)];
                rnd.nextBytes(junk);
                if (i == 0) {
                    junk[0] = 2; // bolt's protocol code, so the decoder goes further before it gives up
                }
                out.write(junk);
                out.flush();
            }
        }
        client.put(key, "after".getBytes()).join();
        assertThat(client.get(key).join()).isEqualTo("after".getBytes());
        List<RegionInfo> regions = client.admin().regions().join();
        assertThat(regions).hasSize(24);
    }
}
