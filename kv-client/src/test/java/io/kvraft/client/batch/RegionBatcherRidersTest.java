package io.kvraft.client.batch;

import com.alipay.remoting.AsyncContext;
import com.alipay.remoting.BizContext;
import com.alipay.remoting.rpc.RpcServer;
import com.alipay.remoting.rpc.protocol.AsyncUserProcessor;
import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.ReadRequest;
import io.kvraft.common.proto.KvProto.ReadResponse;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.proto.KvProto.Value;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.common.rpc.BoltLogging;
import io.kvraft.common.rpc.WireProtocol;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

/**
 * Gets that ride on a write request (batching.readsWithWrites), against a fake node: when the answer sets read_error
 * the writes stand and the gets are asked again, never completed from that answer; when it carries no read values
 * (a server that predates read_keys) the gets go on their own as one READ_INDEX ReadRequest.
 */
@Timeout(60)
class RegionBatcherRidersTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final int REGION = 1;

    private FakeNode node;
    private KvClient client;

    @BeforeAll
    static void boltLogsThroughSlf4j() {
        BoltLogging.init();
    }

    @AfterEach
    void closeClientAndNode() {
        try {
            if (client != null) {
                client.close();
            }
        } finally {
            if (node != null) {
                node.close();
            }
        }
    }

    @Test
    void when_theRidingReadsGetAReadError_then_thePutStandsAndTheGetsAreAskedAgain() {
        // values next to read_error, which a server would not send: taking them would complete the gets wrongly
        node = FakeNode.start(WriteResponse.newBuilder().addSucceeded(true)
                .setReadError(Errors.of(ErrorCode.KEY_OUT_OF_RANGE, "a key split off while the entry waited"))
                .addReadValues(found("stale-a")).addReadValues(found("stale-b")).build());
        node.store("a", "fresh-a");
        node.store("b", "fresh-b");
        client = KvClients.connect(ClientConfig.of(List.of(node.endpoint())));

        Riders riders = putAndGetsRidingOnTheSecondWrite();

        assertThat(riders.put).succeedsWithin(WAIT);
        assertThat(riders.getA.thenApply(RegionBatcherRidersTest::text)).succeedsWithin(WAIT).isEqualTo("fresh-a");
        assertThat(riders.getB.thenApply(RegionBatcherRidersTest::text)).succeedsWithin(WAIT).isEqualTo("fresh-b");
        // asked again on their own (no write was in flight to ride on), each as a READ_INDEX read
        assertThat(node.reads).allSatisfy(r -> assertThat(r.getMode()).isEqualTo(ReadMode.READ_INDEX));
        assertThat(node.reads.stream().flatMap(r -> r.getKeysList().stream()).map(ByteString::toStringUtf8))
                .containsExactlyInAnyOrder("a", "b");
        assertThat(node.writes).as("the applied put is not sent again").hasSize(2);
    }

    @Test
    void when_theServerAnswersNoReadValues_then_theGetsGoAloneAsOneReadIndexRead() {
        node = FakeNode.start(WriteResponse.newBuilder().addSucceeded(true).build());
        node.store("a", "fresh-a");
        node.store("b", "fresh-b");
        client = KvClients.connect(ClientConfig.of(List.of(node.endpoint())));

        Riders riders = putAndGetsRidingOnTheSecondWrite();

        assertThat(riders.put).succeedsWithin(WAIT);
        assertThat(riders.getA.thenApply(RegionBatcherRidersTest::text)).succeedsWithin(WAIT).isEqualTo("fresh-a");
        assertThat(riders.getB.thenApply(RegionBatcherRidersTest::text)).succeedsWithin(WAIT).isEqualTo("fresh-b");
        assertThat(node.reads).singleElement().satisfies(r -> {
            assertThat(r.getRegionId()).isEqualTo(REGION);
            assertThat(r.getMode()).isEqualTo(ReadMode.READ_INDEX);
            assertThat(r.getKeysList()).extracting(ByteString::toStringUtf8).containsExactly("a", "b");
        });
        assertThat(node.writes).hasSize(2);
    }

    private record Riders(CompletableFuture<Void> put, CompletableFuture<byte[]> getA, CompletableFuture<byte[]> getB) {
    }

    /**
     * Holds the answer to a first put while a second put and gets of "a" and "b" queue behind it, then lets it go: the
     * next batch is one WriteRequest with the put and both gets as its read keys (checked here).
     */
    private Riders putAndGetsRidingOnTheSecondWrite() {
        CompletableFuture<Void> first = client.put(bytes("k0"), bytes("v0"));
        await().atMost(WAIT).until(() -> node.writes.size() == 1);
        Riders riders = new Riders(client.put(bytes("k1"), bytes("v1")), client.get(bytes("a")),
                client.get(bytes("b")));
        node.releaseFirstWrite();
        assertThat(first).succeedsWithin(WAIT);
        await().atMost(WAIT).until(() -> node.writes.size() >= 2);
        WriteRequest riding = node.writes.get(1);
        assertThat(riding.getOpsList()).extracting(WriteOp::getType, op -> op.getKey().toStringUtf8())
                .containsExactly(tuple(WriteOpType.PUT, "k1"));
        assertThat(riding.getReadKeysList()).extracting(ByteString::toStringUtf8).containsExactly("a", "b");
        return riders;
    }

    /**
     * One node leading the one region of the whole key space, on bolt as the kv servers are (WireProtocol's
     * serializer, a processor per request class). It answers route lookups, holds the answer to the first
     * WriteRequest until released, answers WriteRequests that carry read keys with the test's answer and other
     * writes as all succeeded, and ReadRequests from its store; it records the WriteRequests and ReadRequests.
     */
    private static final class FakeNode implements AutoCloseable {

        final List<WriteRequest> writes = new CopyOnWriteArrayList<>();
        final List<ReadRequest> reads = new CopyOnWriteArrayList<>();
        private final Map<ByteString, ByteString> stored = new ConcurrentHashMap<>();
        private final CompletableFuture<Void> firstWriteReleased = new CompletableFuture<>();
        private final AtomicBoolean firstWriteSeen = new AtomicBoolean();
        private final WriteResponse ridingAnswer;
        private final RpcServer rpc;

        private FakeNode(WriteResponse ridingAnswer) {
            this.ridingAnswer = ridingAnswer;
            WireProtocol.register();
            rpc = new RpcServer("127.0.0.1", 0, false);
            rpc.registerUserProcessor(processor(RegionsRequest.class, this::regions));
            rpc.registerUserProcessor(processor(WriteRequest.class, this::write));
            rpc.registerUserProcessor(processor(ReadRequest.class, this::read));
        }

        static FakeNode start(WriteResponse ridingAnswer) {
            FakeNode node = new FakeNode(ridingAnswer);
            node.rpc.startup();
            return node;
        }

        String endpoint() {
            return "127.0.0.1:" + rpc.port();
        }

        void store(String key, String value) {
            stored.put(ByteString.copyFromUtf8(key), ByteString.copyFromUtf8(value));
        }

        void releaseFirstWrite() {
            firstWriteReleased.complete(null);
        }

        private void regions(AsyncContext ctx, RegionsRequest req) {
            RegionInfo whole = RegionInfo.newBuilder().setId(REGION).setEpoch(1).addPeers(endpoint())
                    .setLeader(endpoint()).setRole("LEADER").build();
            RegionsResponse.Builder resp = RegionsResponse.newBuilder().setNode(endpoint()).addRegions(whole);
            if (req.getCluster()) {
                resp.setMapLeader(endpoint());
            }
            ctx.sendResponse(resp.build());
        }

        private void write(AsyncContext ctx, WriteRequest req) {
            writes.add(req);
            WriteResponse resp;
            if (req.getReadKeysCount() > 0) {
                resp = ridingAnswer;
            } else {
                WriteResponse.Builder b = WriteResponse.newBuilder();
                req.getOpsList().forEach(op -> b.addSucceeded(true));
                resp = b.build();
            }
            if (firstWriteSeen.compareAndSet(false, true)) {
                firstWriteReleased.thenRun(() -> ctx.sendResponse(resp)); // held without parking a bolt thread
            } else {
                ctx.sendResponse(resp);
            }
        }

        private void read(AsyncContext ctx, ReadRequest req) {
            reads.add(req);
            ReadResponse.Builder resp = ReadResponse.newBuilder();
            for (ByteString key : req.getKeysList()) {
                ByteString v = stored.get(key);
                resp.addValues(v == null ? Value.getDefaultInstance() : found(v.toStringUtf8()));
            }
            ctx.sendResponse(resp.build());
        }

        private static <T extends Message> AsyncUserProcessor<T> processor(Class<T> type,
                                                                           BiConsumer<AsyncContext, T> handler) {
            return new AsyncUserProcessor<>() {
                @Override
                public void handleRequest(BizContext biz, AsyncContext ctx, T request) {
                    handler.accept(ctx, request);
                }

                @Override
                public String interest() {
                    return type.getName();
                }
            };
        }

        @Override
        public void close() {
            releaseFirstWrite();
            rpc.shutdown();
        }
    }

    private static Value found(String value) {
        return Value.newBuilder().setFound(true).setValue(ByteString.copyFromUtf8(value)).build();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
