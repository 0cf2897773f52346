package io.kvraft.server.range;

import io.kvraft.server.config.RaftConfig;
import com.google.protobuf.ByteString;
import io.kvraft.client.CasEntry;
import io.kvraft.client.KeyValue;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.KvIterator;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.client.ReadMode;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.proto.KvProto.ScanRequest;
import io.kvraft.common.proto.KvProto.ScanResponse;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.InProcessCluster;
import io.kvraft.server.KvServer;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.LimitsConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.TreeMap;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The range and read-modify-write API against three servers with 24 regions in this JVM: scans and
 * iterators across region boundaries, range deletes, the atomic ops, read modes, and bad input through
 * the real RPC port. The servers' scan pages are held to 64 bytes so that pages end by bytes too.
 */
@Timeout(value = 180, unit = SECONDS)
class RangeApiClusterTest {

    @TempDir
    static Path dir;

    /** Small enough for an append to reach it. */
    static final int MAX_VALUE_BYTES = 128;

    static InProcessCluster cluster;
    static KvClient client;
    static List<RegionInfo> regions;

    @BeforeAll
    static void start() throws Exception {
        cluster = InProcessCluster.start(3, 24, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withLimits(new LimitsConfig(null, MAX_VALUE_BYTES, null, 64)));
        cluster.awaitBalanced(60);
        client = cluster.client();
        regions = client.admin().regions().join().stream().sorted(Comparator.comparing(r -> r.startKey(),
                Arrays::compareUnsigned)).toList();
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @BeforeEach
    void empty() {
        sync(client.deleteRange(null, null));
    }

    /** Three keys in each region: at its start key (the first region: 0x00), just after it, and just before its end. */
    static TreeMap<byte[], byte[]> keysAcrossRegions() {
        TreeMap<byte[], byte[]> keys = new TreeMap<>(Arrays::compareUnsigned);
        for (RegionInfo r : regions) {
            byte[] start = r.startKey().length == 0 ? new byte[] {0} : r.startKey();
            keys.put(start, value(start));
            byte[] after = Arrays.copyOf(start, start.length + 1);
            after[start.length] = 7;
            keys.put(after, value(after));
            byte[] end = r.endKey();
            byte[] before = end.length == 0 ? new byte[] {(byte) 0xff, (byte) 0xff} : end.clone();
            if (end.length > 0) { // end - 1 (with borrow), then 0xff: just below the end key, still in this region
                int i = before.length - 1;
                while (before[i] == 0) {
                    before[i--] = (byte) 0xff;
                }
                before[i]--;
                before = Arrays.copyOf(before, before.length + 1);
                before[before.length - 1] = (byte) 0xff;
            }
            keys.put(before, value(before));
        }
        return keys;
    }

    static byte[] value(byte[] key) {
        // about 40 bytes: two pairs fill a 64-byte page
        return ("v-" + HexFormat.of().formatHex(key) + "-".repeat(32)).getBytes(StandardCharsets.UTF_8);
    }

    static void putAll(TreeMap<byte[], byte[]> keys) {
        List<KeyValue> entries = new ArrayList<>();
        keys.forEach((k, v) -> entries.add(new KeyValue(k, v)));
        sync(client.batchPut(entries));
    }

    static List<String> hexKeys(List<KeyValue> pairs) {
        return pairs.stream().map(kv -> HexFormat.of().formatHex(kv.key())).toList();
    }

    static List<String> hexKeys(Iterable<byte[]> keys) {
        List<String> out = new ArrayList<>();
        keys.forEach(k -> out.add(HexFormat.of().formatHex(k)));
        return out;
    }

    @Test
    void when_wholeKeySpaceScanned_then_everyKeyComesOnceInOrderAcrossAllRegions() {
        TreeMap<byte[], byte[]> keys = keysAcrossRegions();
        putAll(keys);

        List<KeyValue> all = sync(client.scan(null, null, Integer.MAX_VALUE, false));

        assertThat(hexKeys(all)).containsExactlyElementsOf(hexKeys(keys.keySet()));
        for (KeyValue kv : all) {
            assertThat(kv.value()).isEqualTo(keys.get(kv.key()));
        }
        assertThat(hexKeys(sync(client.reverseScan(null, null, Integer.MAX_VALUE, false))))
                .containsExactlyElementsOf(hexKeys(keys.descendingKeySet()));
    }

    @Test
    void when_boundedScanCrossesRegionBoundaries_then_itHonoursStartEndAndLimit() {
        TreeMap<byte[], byte[]> keys = keysAcrossRegions();
        putAll(keys);
        byte[] start = regions.get(3).startKey();  // inclusive, and a key
        byte[] end = regions.get(9).startKey();    // exclusive, and a key

        List<KeyValue> part = sync(client.scan(start, end, 1000, false));
        List<KeyValue> firstFive = sync(client.scan(start, end, 5, true));
        List<KeyValue> lastFour = sync(client.reverseScan(start, end, 4, false));

        assertThat(hexKeys(part)).containsExactlyElementsOf(hexKeys(keys.subMap(start, true, end, false).keySet()));
        assertThat(part).hasSize(18);
        assertThat(hexKeys(firstFive)).containsExactlyElementsOf(hexKeys(part.subList(0, 5)));
        assertThat(firstFive).allSatisfy(kv -> assertThat(kv.value()).isNull());
        assertThat(hexKeys(lastFour)).containsExactlyElementsOf(
                hexKeys(keys.subMap(start, true, end, false).descendingKeySet()).subList(0, 4));
    }

    @Test
    void when_iterated_then_pagesAreFetchedLazilyAndCoverTheRangeInBothDirections() {
        TreeMap<byte[], byte[]> keys = keysAcrossRegions();
        putAll(keys);

        KvIterator forward = client.iterator(null, null, 2);
        List<byte[]> seen = new ArrayList<>();
        forward.forEachRemaining(kv -> seen.add(kv.key()));
        KvIterator backward = client.reverseIterator(null, null, 1000);
        List<byte[]> seenBackward = new ArrayList<>();
        backward.forEachRemaining(kv -> seenBackward.add(kv.key()));

        assertThat(hexKeys(seen)).containsExactlyElementsOf(hexKeys(keys.keySet()));
        assertThat(hexKeys(seenBackward)).containsExactlyElementsOf(hexKeys(keys.descendingKeySet()));
        // three pairs per region: pages of 2 by count forward, of 2 by the 64-byte budget backward
        assertThat(forward.pages()).isGreaterThanOrEqualTo(48);
        assertThat(backward.pages()).isGreaterThanOrEqualTo(48);
    }

    @Test
    void when_iteratorStartsOnAWrite_then_itSeesKeysAheadOfTheCursorAndNotBehindIt() {
        TreeMap<byte[], byte[]> keys = keysAcrossRegions();
        putAll(keys);
        KvIterator it = client.iterator(null, null, 2);
        KeyValue first = it.next();
        sync(client.put(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff}, new byte[] {1})); // ahead
        sync(client.delete(keys.firstKey())); // behind: already returned

        List<byte[]> rest = new ArrayList<>();
        it.forEachRemaining(kv -> rest.add(kv.key()));

        assertThat(first.key()).isEqualTo(keys.firstKey());
        assertThat(rest).hasSize(keys.size()); // all but the first, plus the new one
        assertThat(rest.get(rest.size() - 1)).isEqualTo(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff});
    }

    @Test
    void when_rangeDeletedAcrossRegions_then_exactlyItsKeysAreGone() {
        TreeMap<byte[], byte[]> keys = keysAcrossRegions();
        putAll(keys);
        byte[] start = keys.higherKey(regions.get(2).startKey()); // mid-region
        byte[] end = regions.get(20).startKey();

        sync(client.deleteRange(start, end));

        TreeMap<byte[], byte[]> expected = new TreeMap<>(keys);
        expected.subMap(start, true, end, false).clear();
        assertThat(hexKeys(sync(client.scan(null, null, 10_000, true)))).containsExactlyElementsOf(hexKeys(expected.keySet()));
        for (byte[] k : keys.subMap(start, true, end, false).keySet()) {
            assertThat(sync(client.get(k))).isNull();
        }
    }

    @Test
    void when_wholeKeySpaceDeleted_then_scanIsEmpty() {
        putAll(keysAcrossRegions());

        sync(client.deleteRange(new byte[0], new byte[0]));

        assertThat(sync(client.scan(null, null, 10, true))).isEmpty();
    }

    @Test
    void when_readModifyWriteOpsRun_then_eachReturnsWhatItFound() {
        byte[] k = {0x42, 1};

        assertThat(sync(client.containsKey(k))).isFalse();
        assertThat(sync(client.putIfAbsent(k, bytes("first")))).isNull();
        assertThat(sync(client.putIfAbsent(k, bytes("second")))).isEqualTo(bytes("first"));
        assertThat(sync(client.get(k))).isEqualTo(bytes("first"));
        assertThat(sync(client.getAndPut(k, bytes("third")))).isEqualTo(bytes("first"));
        assertThat(sync(client.getAndPut(new byte[] {0x42, 2}, bytes("x")))).isNull();
        assertThat(sync(client.get(k))).isEqualTo(bytes("third"));
        assertThat(sync(client.containsKey(k))).isTrue();

        sync(client.deleteBatch(List.of(k, new byte[] {0x42, 2}, new byte[] {(byte) 0xf0})));

        assertThat(sync(client.containsKey(k))).isFalse();
        assertThat(sync(client.get(new byte[] {0x42, 2}))).isNull();
    }

    @Test
    void when_appendedTo_then_theValueGrowsByEachPartUntilTheLimitRefusesOneWhole() {
        byte[] k = {0x42, 5};

        sync(client.append(k, bytes("a")));
        sync(client.append(k, bytes("bc")));
        assertThat(sync(client.get(k))).as("an absent key takes the first part as it is").isEqualTo(bytes("abc"));

        byte[] tooMuch = new byte[MAX_VALUE_BYTES - 2];
        assertThatThrownBy(() -> sync(client.append(k, tooMuch))).isInstanceOfSatisfying(KvException.class, e -> {
            assertThat(e.code()).isEqualTo(io.kvraft.common.ErrorCode.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains("limits.maxValueBytes");
        });
        assertThat(sync(client.get(k))).as("a refused append changes nothing").isEqualTo(bytes("abc"));
        sync(client.append(k, new byte[MAX_VALUE_BYTES - 3]));
        assertThat(sync(client.get(k))).hasSize(MAX_VALUE_BYTES);

        assertCode(() -> sync(client.append(new byte[0], bytes("x"))), ErrorCode.INVALID_ARGUMENT);
        assertCode(() -> sync(client.append(new byte[] {0x42, 6}, new byte[MAX_VALUE_BYTES + 1])),
                ErrorCode.INVALID_ARGUMENT);
        assertThat(sync(client.get(new byte[] {0x42, 6}))).isNull();
    }

    @Test
    void when_compareAndPutAllInOneRegion_then_allOrNothingTakesEffect() {
        byte[] a = {0x42, 1};
        byte[] b = {0x42, 2};
        sync(client.put(a, bytes("a0")));

        boolean wrongExpectation = sync(client.compareAndPutAll(List.of(
                new CasEntry(a, bytes("a0"), bytes("a1")), new CasEntry(b, bytes("not there"), bytes("b1")))));
        assertThat(wrongExpectation).isFalse();
        assertThat(sync(client.get(a))).isEqualTo(bytes("a0"));
        assertThat(sync(client.get(b))).isNull();

        boolean right = sync(client.compareAndPutAll(List.of(
                new CasEntry(a, bytes("a0"), bytes("a1")), new CasEntry(b, null, bytes("b1")))));
        assertThat(right).isTrue();
        assertThat(sync(client.get(a))).isEqualTo(bytes("a1"));
        assertThat(sync(client.get(b))).isEqualTo(bytes("b1"));
    }

    @Test
    void when_compareAndPutAllSpansRegions_then_itIsRefusedNamingTheKeysAndNothingChanges() {
        byte[] here = {0x42, 1};
        byte[] there = {(byte) 0xf0, 1};

        assertThatThrownBy(() -> sync(client.compareAndPutAll(List.of(
                new CasEntry(here, null, bytes("x")), new CasEntry(there, null, bytes("y"))))))
                .isInstanceOfSatisfying(KvException.class, e -> {
                    assertThat(e.code().toWire()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                    assertThat(e.getMessage()).contains("0xf001");
                });
        assertThat(sync(client.get(here))).isNull();
    }

    @Test
    void when_readsUseFollowerMode_then_everyNodeServesSomeAndAllSeeTheLatestWrite() {
        KvClient followerReads = client.withReadMode(ReadMode.FOLLOWER);
        byte[] k = {0x42, 9};
        long[] before = readOps();

        for (int i = 0; i < 30; i++) {
            byte[] v = bytes("v" + i);
            sync(client.put(k, v));
            assertThat(sync(followerReads.get(k))).as("a follower read after the put was acknowledged").isEqualTo(v);
        }

        long[] after = readOps();
        for (int n = 0; n < after.length; n++) {
            assertThat(after[n]).as("reads served by node %d", n).isGreaterThan(before[n]);
        }
        assertThat(followerReads.readMode()).isEqualTo(ReadMode.FOLLOWER);
        assertThat(client.readMode()).isEqualTo(ReadMode.READ_INDEX);
    }

    @Test
    void when_readsUseStaleMode_then_theyConvergeOnEveryReplicaWithoutALeaderRound() {
        KvClient staleReads = client.withReadMode(ReadMode.STALE);
        TreeMap<byte[], byte[]> keys = keysAcrossRegions();
        putAll(keys);

        await().atMost(30, SECONDS).untilAsserted(() -> {
            for (int i = 0; i < 3; i++) { // every replica in turn
                assertThat(hexKeys(sync(staleReads.scan(null, null, 10_000, true))))
                        .containsExactlyElementsOf(hexKeys(keys.keySet()));
            }
        });
        assertThat(sync(staleReads.get(keys.firstKey()))).isEqualTo(keys.firstEntry().getValue());
    }

    @Test
    void when_rangeOrLimitIsBad_then_invalidArgumentAndNoRequest() {
        byte[] low = {1};
        byte[] high = {2};

        assertCode(() -> sync(client.scan(high, low, 10, false)), ErrorCode.INVALID_ARGUMENT);
        assertCode(() -> sync(client.scan(low, high, 0, false)), ErrorCode.INVALID_ARGUMENT);
        assertCode(() -> sync(client.deleteRange(high, low)), ErrorCode.INVALID_ARGUMENT);
        assertCode(() -> client.iterator(low, high, 0), ErrorCode.INVALID_ARGUMENT);
        assertThat(sync(client.scan(low, low, 10, false))).isEmpty();
    }

    @Test
    void when_rawRequestsAreBad_then_typedErrorsAndTheNodeKeepsServing() {
        RegionInfo r = regions.get(5);
        RegionInfo led = cluster.client().admin().regions().join().stream().filter(x -> x.id() == r.id()).findFirst().orElseThrow();
        try (Transport transport = new Transport()) {
            String leader = led.leader();
            ScanRequest.Builder ok = ScanRequest.newBuilder().setRegionId(r.id()).setRegionEpoch(r.epoch())
                    .setStartKey(ByteString.copyFrom(r.startKey())).setEndKey(ByteString.copyFrom(r.endKey())).setLimit(10);

            assertThat(scanError(transport, leader, ok.clone().setLimit(0))).isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(scanError(transport, leader, ok.clone().setStartKey(ByteString.copyFrom(r.endKey())).setEndKey(ByteString.copyFrom(r.startKey()))))
                    .isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(scanError(transport, leader, ok.clone().setEndKey(ByteString.EMPTY)))
                    .as("a range past the region's end").isEqualTo(ErrorCode.KEY_OUT_OF_RANGE);
            assertThat(scanError(transport, leader, ok.clone().setRegionId(9999))).isEqualTo(ErrorCode.REGION_NOT_FOUND);
            assertThat(scanError(transport, leader, ok.clone().setRegionEpoch(r.epoch() + 1))).isEqualTo(ErrorCode.STALE_EPOCH);
            assertThat(scanError(transport, leader, ok.clone().setModeValue(42))).isEqualTo(ErrorCode.INVALID_ARGUMENT);
            String follower = r.peers().stream().filter(p -> !p.equals(leader)).findFirst().orElseThrow();
            assertThat(scanError(transport, follower, ok.clone())).isIn(ErrorCode.NOT_LEADER, ErrorCode.NO_LEADER);

            WriteRequest.Builder w = WriteRequest.newBuilder().setRegionId(r.id()).setRegionEpoch(r.epoch());
            assertThat(writeError(transport, leader, w.clone().addOps(WriteOp.newBuilder().setTypeValue(77)
                    .setKey(ByteString.copyFrom(r.startKey()))))).as("unknown op type").isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(writeError(transport, leader, w.clone().addOps(WriteOp.newBuilder().setType(WriteOpType.DELETE_RANGE)
                    .setKey(ByteString.copyFrom(r.startKey())).setEndKey(ByteString.EMPTY)))).isEqualTo(ErrorCode.KEY_OUT_OF_RANGE);
            byte[] k = Arrays.copyOf(r.startKey(), r.startKey().length + 1);
            WriteOp cas = WriteOp.newBuilder().setType(WriteOpType.COMPARE_AND_PUT).setKey(ByteString.copyFrom(k))
                    .setExpectAbsent(true).build();
            assertThat(writeError(transport, leader, w.clone().addOps(cas.toBuilder().setGroupSize(3)).addOps(cas)))
                    .as("a group longer than the request").isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(writeError(transport, leader, w.clone().addOps(cas.toBuilder().setGroupSize(2)).addOps(cas)))
                    .as("a group naming a key twice").isEqualTo(ErrorCode.INVALID_ARGUMENT);

            ScanResponse good = transport.<ScanResponse>call(leader, ok.build(), 5000).join();
            assertThat(good.hasError() && good.getError().getCode() != ErrorCode.OK).isFalse();
        }
        byte[] k = {0x42, 3};
        sync(client.put(k, bytes("still serving")));
        assertThat(sync(client.get(k))).isEqualTo(bytes("still serving"));
    }

    private static ErrorCode scanError(Transport t, String target, ScanRequest.Builder req) {
        ScanResponse resp = t.<ScanResponse>call(target, req.build(), 5000).join();
        return resp.getError().getCode();
    }

    private static ErrorCode writeError(Transport t, String target, WriteRequest.Builder req) {
        WriteResponse resp = t.<WriteResponse>call(target, req.build(), 5000).join();
        return resp.getError().getCode();
    }

    private static long[] readOps() {
        long[] ops = new long[cluster.size()];
        for (int i = 0; i < ops.length; i++) {
            KvServer s = cluster.node(i);
            ops[i] = s.host().readOps();
        }
        return ops;
    }

    private static void assertCode(org.assertj.core.api.ThrowableAssert.ThrowingCallable call, ErrorCode code) {
        assertThatThrownBy(call).isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code().toWire()).isEqualTo(code));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
