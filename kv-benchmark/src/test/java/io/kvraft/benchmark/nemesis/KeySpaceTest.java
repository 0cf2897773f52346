package io.kvraft.benchmark.nemesis;

import io.kvraft.client.KeyValue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static io.kvraft.benchmark.nemesis.KeySpace.NOT_COVERED;
import static org.assertj.core.api.Assertions.assertThat;

class KeySpaceTest {

    private static final int REGIONS = 24;

    /** Region start keys as the server splits 24 regions: evenly by the first two bytes, the first one empty. */
    private static List<byte[]> regionStarts() {
        List<byte[]> starts = new ArrayList<>();
        starts.add(new byte[0]);
        for (int i = 1; i < REGIONS; i++) {
            int prefix = (int) ((long) i * 65536 / REGIONS);
            starts.add(new byte[]{(byte) (prefix >>> 8), (byte) prefix});
        }
        return starts;
    }

    private static int regionOf(byte[] key) {
        List<byte[]> starts = regionStarts();
        int r = 0;
        while (r + 1 < starts.size() && Arrays.compareUnsigned(starts.get(r + 1), key) <= 0) {
            r++;
        }
        return r;
    }

    private static boolean inRange(byte[] key, byte[] start, byte[] end) {
        return (start.length == 0 || Arrays.compareUnsigned(key, start) >= 0)
                && (end.length == 0 || Arrays.compareUnsigned(key, end) < 0);
    }

    private static byte[] freshKey(byte[] prefix, long id) {
        return ByteBuffer.allocate(prefix.length + 8).put(prefix).putLong(id).array();
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 10, 11})
    void when_keysArePlaced_then_theyAscend_andEachRegionHoldsItsOwnKeysAndFreshPrefix(int perRegion) {
        KeySpace s = KeySpace.place(regionStarts(), perRegion);
        assertThat(s.keys()).hasSize(REGIONS * perRegion);
        for (int i = 0; i < s.keys().size(); i++) {
            assertThat(regionOf(s.keys().get(i))).isEqualTo(i / perRegion);
            assertThat(s.indexOf(s.keys().get(i))).isEqualTo(i);
        }
        for (int r = 0; r < REGIONS; r++) {
            assertThat(regionOf(s.freshPrefixes().get(r))).isEqualTo(r);
            assertThat(s.indexOf(freshKey(s.freshPrefixes().get(r), 1))).isEqualTo(-1);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 10, 11})
    void when_aRangeDeleteIsPicked_then_itHoldsNoFreshKey_andItsRegisterKeysAreFirstToLast(int perRegion) {
        KeySpace s = KeySpace.place(regionStarts(), perRegion);
        Random rnd = new Random(perRegion);
        int crossing = 0;
        for (int n = 0; n < 2000; n++) {
            KeySpace.Range d = s.deleteRange(rnd);
            for (byte[] p : s.freshPrefixes()) {
                assertThat(inRange(freshKey(p, 0), d.start(), d.end())).isFalse();
                assertThat(inRange(freshKey(p, -1), d.start(), d.end())).isFalse();
                assertThat(Arrays.compareUnsigned(d.start(), p) > 0 || Arrays.compareUnsigned(d.end(), p) <= 0)
                        .as("nothing with the fresh prefix lies between").isTrue();
            }
            for (int i = 0; i < s.keys().size(); i++) {
                assertThat(inRange(s.keys().get(i), d.start(), d.end())).isEqualTo(i >= d.first() && i <= d.last());
            }
            if (regionOf(d.start()) != regionOf(s.keys().get(d.last()))) {
                crossing++;
            }
        }
        if (perRegion > 1) {
            assertThat(crossing).as("range deletes across a region boundary").isGreaterThan(400);
        }
    }

    @Test
    void when_scansArePicked_then_theirRegisterKeysAreFirstToLast_andSomeSpanThreeRegions() {
        KeySpace s = KeySpace.place(regionStarts(), 10);
        Random rnd = new Random(7);
        int wide = 0;
        int full = 0;
        int limited = 0;
        int reversed = 0;
        for (int n = 0; n < 2000; n++) {
            KeySpace.Range r = s.scan(rnd);
            for (int i = 0; i < s.keys().size(); i++) {
                assertThat(inRange(s.keys().get(i), r.start(), r.end())).isEqualTo(i >= r.first() && i <= r.last());
            }
            assertThat(r.limit()).isBetween(1, KeySpace.MAX_SCAN_PAIRS);
            wide += regionOf(s.keys().get(r.last())) - regionOf(s.keys().get(r.first())) >= 2 ? 1 : 0;
            full += r.start().length == 0 && r.end().length == 0 ? 1 : 0;
            limited += r.limit() < KeySpace.MAX_SCAN_PAIRS ? 1 : 0;
            reversed += r.reverse() ? 1 : 0;
        }
        assertThat(wide).isGreaterThan(400);
        assertThat(full).isGreaterThan(50);
        assertThat(limited).isGreaterThan(300);
        assertThat(reversed).isGreaterThan(400);
    }

    private static KeyValue kv(byte[] key, long value) {
        return new KeyValue(key, RegisterWorkload.encode(value));
    }

    @Test
    void when_aScanPassesOverAKey_then_itReadsItAbsent_andFreshKeysAreIgnored() {
        KeySpace s = KeySpace.place(regionStarts(), 10);
        List<byte[]> k = s.keys();
        KeySpace.Range r = new KeySpace.Range(k.get(3), KeySpace.successor(k.get(6)), 3, 6, 256, false);
        byte[] fresh = freshKey(s.freshPrefixes().get(0), 9);
        long[] seen = s.readBy(r, List.of(kv(k.get(3), 30), kv(fresh, 99), kv(k.get(5), 50)));
        assertThat(seen).containsExactly(30, 0, 50, 0);
    }

    @Test
    void when_aScanStopsAtItsLimit_then_keysPastTheLastReturnedAreNotCovered() {
        KeySpace s = KeySpace.place(regionStarts(), 10);
        List<byte[]> k = s.keys();
        KeySpace.Range up = new KeySpace.Range(k.get(3), KeySpace.successor(k.get(8)), 3, 8, 2, false);
        assertThat(s.readBy(up, List.of(kv(k.get(3), 30), kv(k.get(5), 50))))
                .containsExactly(30, 0, 50, NOT_COVERED, NOT_COVERED, NOT_COVERED);
        KeySpace.Range down = new KeySpace.Range(k.get(3), KeySpace.successor(k.get(8)), 3, 8, 2, true);
        assertThat(s.readBy(down, List.of(kv(k.get(8), 80), kv(k.get(6), 60))))
                .containsExactly(NOT_COVERED, NOT_COVERED, NOT_COVERED, 60, 0, 80);
        KeySpace.Range all = new KeySpace.Range(new byte[0], new byte[0], 0, k.size() - 1, 1, false);
        long[] seen = s.readBy(all, List.of(kv(freshKey(s.freshPrefixes().get(0), 1), 7)));
        assertThat(Arrays.copyOf(seen, 6)).containsExactly(0, 0, 0, 0, 0, NOT_COVERED);
    }

    @Test
    void when_aScanAnswerBreaksTheContract_then_itIsMalformed() {
        KeySpace s = KeySpace.place(regionStarts(), 10);
        List<byte[]> k = s.keys();
        KeySpace.Range r = new KeySpace.Range(k.get(3), KeySpace.successor(k.get(6)), 3, 6, 3, false);
        assertThat(s.readBy(r, List.of(kv(k.get(2), 1)))).as("before the range").isNull();
        assertThat(s.readBy(r, List.of(kv(k.get(7), 1)))).as("past the range").isNull();
        assertThat(s.readBy(r, List.of(kv(k.get(5), 1), kv(k.get(4), 1)))).as("out of order").isNull();
        assertThat(s.readBy(r, List.of(kv(k.get(4), 1), kv(k.get(4), 1)))).as("repeated").isNull();
        assertThat(s.readBy(r, List.of(kv(k.get(3), 1), kv(k.get(4), 1), kv(k.get(5), 1), kv(k.get(6), 1))))
                .as("past the limit").isNull();
    }
}
