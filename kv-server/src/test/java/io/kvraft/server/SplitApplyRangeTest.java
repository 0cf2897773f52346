package io.kvraft.server;

import com.google.protobuf.ByteString;
import io.kvraft.client.KvClient;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.config.ServerConfig.BalanceConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A write the leader accepted for a key its region held, whose log entry lands behind a split that gives the key
 * away: every replica applies the split first, so the write must be refused there (KEY_OUT_OF_RANGE, the client
 * retries it in the new region), never applied by the old one. The leader checks the range when a request arrives,
 * so only the state machine's check at apply time stands between such a write and the wrong region.
 */
@Timeout(value = 300, unit = SECONDS)
class SplitApplyRangeTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;
    private Transport transport;

    @AfterEach
    void stop() {
        if (transport != null) {
            transport.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void when_aWriteIsLoggedBehindASplitThatGivesItsKeyAway_then_theOldRegionRefusesItAtApply() throws Exception {
        List<GatedApply> gates = new ArrayList<>();
        cluster = InProcessCluster.start(3, 4, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withBalance(new BalanceConfig(false, 200, null)), store -> {
                    GatedApply g = new GatedApply(store);
                    gates.add(g);
                    return g;
                });
        KvClient client = cluster.client();
        transport = new Transport();
        // the last region: the split's new region id comes from a sequence in the first one, which must not be held
        RegionInfo region = client.admin().regions().join().stream().filter(r -> r.endKey().length == 0).findFirst().orElseThrow();
        int id = region.id();
        byte[] start = region.startKey();
        byte[] kept = key(start, 0x01);
        byte[] splitAt = key(start, 0x80);
        byte[] givenAway = key(start, 0xc0);
        int from = cluster.leaderOf(id);
        client.put(kept, "v0".getBytes(StandardCharsets.UTF_8)).get(30, SECONDS); // the region takes writes
        Region onLeader = cluster.node(from).host().region(id);
        // a new leader records its voters in a CONF_CHANGED entry of its own: once applied, no entry but the test's
        // comes into the log, so the next one after the held write is the split's
        await().atMost(60, SECONDS).until(() -> onLeader.confVer() >= 1);

        GatedApply gate = gates.get(from);
        CompletableFuture<List<RegionInfo>> split;
        CompletableFuture<WriteResponse> late;
        try {
            gate.hold(id);
            CompletableFuture<Void> held = client.put(kept, "v1".getBytes(StandardCharsets.UTF_8));
            await().atMost(60, SECONDS).until(() -> gate.held.getCount() == 0); // the leader applies nothing more
            long logged = onLeader.node().getLastLogIndex();
            split = client.admin().split(id, splitAt);
            await().atMost(60, SECONDS).until(() -> onLeader.node().getLastLogIndex() > logged); // the split's entry
            assertThat(onLeader.range().contains(givenAway)).as("the leader has not applied the split").isTrue();
            // a write for a key the split gives away, at the region's epoch as the leader still has it: it passes
            // the leader's checks and is logged behind the split
            late = transport.call(cluster.endpoints().get(from), WriteRequest.newBuilder().setRegionId(id)
                    .setRegionEpoch(region.epoch()).addOps(WriteOp.newBuilder().setType(WriteOpType.PUT)
                            .setKey(ByteString.copyFrom(givenAway)).setValue(ByteString.copyFromUtf8("late")))
                    .build(), 60_000);
            await().atMost(60, SECONDS).until(() -> onLeader.node().getLastLogIndex() > logged + 1);
            assertThat(late).as("answered before its entry applied").isNotDone();
            gate.release.countDown();
            held.get(60, SECONDS);
        } finally {
            gate.release.countDown(); // else the node cannot stop
        }
        assertThat(split.get(60, SECONDS)).hasSize(2);
        WriteResponse answer = late.get(60, SECONDS);
        assertThat(answer.hasError()).as("the old region must not apply a key it gave away").isTrue();
        assertThat(answer.getError().getCode()).isEqualTo(ErrorCode.KEY_OUT_OF_RANGE);
        assertThat(client.get(givenAway).get(30, SECONDS)).as("the refused write left nothing").isNull();
        // the client's way: the same write, retried by it, lands in the new region
        client.put(givenAway, "retried".getBytes(StandardCharsets.UTF_8)).get(30, SECONDS);
        assertThat(client.get(givenAway).get(30, SECONDS)).isEqualTo("retried".getBytes(StandardCharsets.UTF_8));
        assertThat(client.get(kept).get(30, SECONDS)).isEqualTo("v1".getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] key(byte[] start, int next) {
        byte[] k = Arrays.copyOf(start, start.length + 1);
        k[start.length] = (byte) next;
        return k;
    }
}
