package io.kvraft.server;

import com.google.protobuf.ByteString;
import io.kvraft.client.KvClient;
import io.kvraft.client.config.ClientConfig;
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
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Linearizable gets that ride on a write request's log entry ({@code WriteRequest.read_keys}, the client's
 * {@code batching.readsWithWrites}): answered once the entry is applied, with no ReadIndex round of their own.
 */
@Timeout(value = 180, unit = SECONDS)
class ReadsWithWritesTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static ByteString key(RegionInfo region, String suffix) {
        return ByteString.copyFrom(ClusterTest.keyPerRegion(List.of(region), suffix).get(0));
    }

    @Test
    void when_aWriteRequestCarriesReadKeys_then_theyAreAnsweredFromTheStateAfterItsWrites() throws Exception {
        cluster = InProcessCluster.start(3, 4, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withBalance(new BalanceConfig(false, null, null)));
        KvClient client = cluster.client();
        RegionInfo region = client.admin().regions().join().get(1);
        ByteString before = key(region, "before");
        ByteString same = key(region, "same");
        ByteString absent = key(region, "absent");
        client.put(before.toByteArray(), bytes("acked")).get(30, SECONDS);

        WriteRequest req = WriteRequest.newBuilder().setRegionId(region.id()).setRegionEpoch(region.epoch())
                .addOps(WriteOp.newBuilder().setType(WriteOpType.PUT).setKey(same).setValue(ByteString.copyFromUtf8("mine")))
                .addReadKeys(before).addReadKeys(same).addReadKeys(absent).build();
        WriteResponse resp;
        try (Transport transport = new Transport()) {
            String leader = cluster.endpoints().get(cluster.leaderOf(region.id()));
            resp = transport.<WriteResponse>call(leader, req, 10_000).join();
        }

        assertThat(resp.getError().getCode()).isEqualTo(ErrorCode.OK);
        assertThat(resp.getSucceededList()).containsExactly(true);
        assertThat(resp.hasReadError()).isFalse();
        assertThat(resp.getReadValuesCount()).isEqualTo(3);
        assertThat(resp.getReadValues(0).getValue().toStringUtf8()).isEqualTo("acked");
        assertThat(resp.getReadValues(1).getValue().toStringUtf8()).as("the request's own put, applied first").isEqualTo("mine");
        assertThat(resp.getReadValues(2).getFound()).isFalse();
    }

    /**
     * The leader's state machine is held inside one entry's apply, so the client's write batch for the region stays in
     * flight; a put and gets queue behind it and leave together as the next batch. The gets must see the held put and
     * the put beside them, and the region must not take a ReadIndex round for them.
     */
    private final List<GatedApply> gates = new ArrayList<>();

    /** Three nodes whose stores can each hold one apply; the balancer off, so leaders stay put. */
    private void startGated() throws Exception {
        cluster = InProcessCluster.start(3, 4, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withBalance(new BalanceConfig(false, null, null)), store -> {
                    GatedApply g = new GatedApply(store);
                    gates.add(g);
                    return g;
                });
    }

    @Test
    void when_getsQueueBehindAWriteBatch_then_theyRideOnTheNextEntryAndTakeNoReadIndexRound() throws Exception {
        startGated();
        KvClient client = cluster.client(ClientConfig.of(cluster.endpoints())); // batching and readsWithWrites on
        RegionInfo region = client.admin().regions().join().get(2);
        int id = region.id();
        byte[] held = key(region, "held").toByteArray();
        byte[] beside = key(region, "beside").toByteArray();
        byte[] never = key(region, "never").toByteArray();
        client.put(held, bytes("v0")).get(30, SECONDS); // the route is known and the region takes writes
        int leader = cluster.leaderOf(id);
        Region onLeader = cluster.node(leader).host().region(id);
        GatedApply gate = gates.get(leader);

        List<CompletableFuture<byte[]>> gets = new ArrayList<>();
        CompletableFuture<Void> heldPut;
        CompletableFuture<Void> besidePut;
        long roundsBefore;
        try {
            gate.hold(id);
            heldPut = client.put(held, bytes("v1"));
            await().atMost(30, SECONDS).until(() -> gate.held.getCount() == 0); // that batch is in flight
            roundsBefore = cluster.node(leader).metrics().region(id).readIndexRounds();
            besidePut = client.put(beside, bytes("b1"));
            gets.add(client.get(held));
            gets.add(client.get(beside));
            gets.add(client.get(never));
        } finally {
            gate.release.countDown(); // else the node cannot stop
        }

        heldPut.get(30, SECONDS);
        besidePut.get(30, SECONDS);
        assertThat(gets.get(0).get(30, SECONDS)).isEqualTo(bytes("v1"));
        assertThat(gets.get(1).get(30, SECONDS)).as("a put of the same batch is applied before its gets").isEqualTo(bytes("b1"));
        assertThat(gets.get(2).get(30, SECONDS)).isNull();
        assertThat(cluster.node(leader).metrics().region(id).readIndexRounds()).as("ReadIndex rounds of the region's leader").isEqualTo(roundsBefore);
    }

    /**
     * With a write batch in flight and no write waiting behind it, a get waits in the client's write queue for that
     * batch to return (a write may yet come for it to ride on), and then, no write having come, leaves on its own as a
     * ReadRequest: a ReadIndex round, after the put in flight was applied.
     */
    @Test
    void when_aWriteBatchIsInFlight_then_aGetWaitsForItInTheClient_andThenLeavesOnItsOwn() throws Exception {
        startGated();
        KvClient client = cluster.client(ClientConfig.of(cluster.endpoints()));
        RegionInfo region = client.admin().regions().join().get(3);
        int id = region.id();
        byte[] held = key(region, "held").toByteArray();
        client.put(held, bytes("v0")).get(30, SECONDS);
        int leader = cluster.leaderOf(id);
        Region onLeader = cluster.node(leader).host().region(id);
        GatedApply gate = gates.get(leader);

        CompletableFuture<Void> heldPut;
        CompletableFuture<byte[]> get;
        long roundsBefore;
        try {
            gate.hold(id);
            heldPut = client.put(held, bytes("v1"));
            await().atMost(30, SECONDS).until(() -> gate.held.getCount() == 0);
            roundsBefore = cluster.node(leader).metrics().region(id).readIndexRounds();
            CompletableFuture<byte[]> waiting = client.get(held);
            get = waiting;
            // while the write batch is in flight the get stays in the client: it never reaches the leader
            await().during(1, SECONDS).atMost(10, SECONDS)
                    .until(() -> onLeader.queuedReads() == 0 && !waiting.isDone());
        } finally {
            gate.release.countDown();
        }

        heldPut.get(30, SECONDS);
        assertThat(get.get(30, SECONDS)).as("sent after the put's batch returned").isEqualTo(bytes("v1"));
        // it took a ReadIndex round of its own (more than one only if it was retried)
        assertThat(cluster.node(leader).metrics().region(id).readIndexRounds()).as("ReadIndex rounds of the region's leader")
                .isGreaterThan(roundsBefore);
    }
}
