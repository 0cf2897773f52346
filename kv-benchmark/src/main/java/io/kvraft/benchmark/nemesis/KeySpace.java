package io.kvraft.benchmark.nemesis;

import io.kvraft.client.KeyValue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Where the nemesis's keys go, and the ranges its scans and range deletes take. In every region,
 * right after its start key:
 * <pre>
 *   region i                                              region i+1
 *   | nem-000 .. nem-004  nem-004-fresh-* | nem-005 .. nem-009 | nem-000 .. nem-004  nem-004-fresh-* | ...
 *     head register keys  fresh keys        tail register keys   head register keys
 *                                         |&lt;------------- one zone: no fresh key --------&gt;|
 * </pre>
 * A range delete stays inside one zone, between two fresh-key blocks, so it never removes an acknowledged
 * fresh-key put (the lost-write check stays exact) yet often crosses a region boundary: the tail keys of
 * region i and the head keys of region i+1 share a zone. A scan may span several regions and fresh blocks.
 */
final class KeySpace {

    /** The most pairs a scan asks for; fresh keys inside a scan's range count against it. */
    static final int MAX_SCAN_PAIRS = 256;

    /**
     * One scan or range delete: [start, end) (empty = unbounded), and the register keys in it, by index.
     *
     * @param first first register key index inside the range
     * @param last  last register key index inside the range (first - 1 when none)
     */
    record Range(byte[] start, byte[] end, int first, int last, int limit, boolean reverse) {
    }

    /** {@link #readBy}: the scan stopped at its limit before this key. */
    static final long NOT_COVERED = Long.MIN_VALUE;

    private final List<byte[]> keys;
    private final List<byte[]> freshPrefixes;
    private final int[] zone;

    /** @param keys the register keys, ascending (unsigned); @param freshPrefixes the fresh-key prefixes */
    KeySpace(List<byte[]> keys, List<byte[]> freshPrefixes) {
        this.keys = List.copyOf(keys);
        this.freshPrefixes = List.copyOf(freshPrefixes);
        this.zone = new int[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            if (i > 0 && Arrays.compareUnsigned(keys.get(i - 1), keys.get(i)) >= 0) {
                throw new IllegalArgumentException("register keys must ascend");
            }
            for (byte[] p : freshPrefixes) {
                if (Arrays.compareUnsigned(p, keys.get(i)) < 0) {
                    zone[i]++;
                }
            }
        }
    }

    /** Register and fresh keys for regions starting at {@code regionStarts} (ascending), as in the class comment. */
    static KeySpace place(List<byte[]> regionStarts, int keysPerRegion) {
        int width = String.valueOf(Math.max(0, keysPerRegion - 1)).length();
        int head = keysPerRegion / 2;
        List<byte[]> keys = new ArrayList<>();
        List<byte[]> fresh = new ArrayList<>();
        for (byte[] start : regionStarts) {
            for (int k = 0; k < keysPerRegion; k++) {
                keys.add(concat(start, "\0nem-" + String.format("%0" + width + "d", k)));
            }
            // just after head key head-1 ('-' sorts before the digits when there is no head key)
            fresh.add(concat(start, "\0nem-" + (head == 0 ? "" : String.format("%0" + width + "d", head - 1)) + "-fresh-"));
        }
        return new KeySpace(keys, fresh);
    }

    List<byte[]> keys() {
        return keys;
    }

    List<byte[]> freshPrefixes() {
        return freshPrefixes;
    }

    /** The index of register key {@code key}, or -1 when it is not one. */
    int indexOf(byte[] key) {
        int lo = 0;
        int hi = keys.size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int c = Arrays.compareUnsigned(keys.get(mid), key);
            if (c == 0) {
                return mid;
            } else if (c < 0) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return -1;
    }

    /**
     * A scan: one in 20 over the whole key space, the others from a register key over up to three
     * regions' worth of them; one in four with a small limit so that it stops short; one in three reversed.
     */
    Range scan(Random rnd) {
        int n = keys.size();
        int perZone = Math.max(1, n / (zone[n - 1] + 1));
        int limit = rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(perZone) : MAX_SCAN_PAIRS;
        boolean reverse = rnd.nextInt(3) == 0;
        if (rnd.nextInt(20) == 0) {
            return new Range(new byte[0], new byte[0], 0, n - 1, limit, reverse);
        }
        int a = rnd.nextInt(n);
        int b = Math.min(n - 1, a + rnd.nextInt(3 * perZone + 1));
        return new Range(keys.get(a), successor(keys.get(b)), a, b, limit, reverse);
    }

    /** A range delete: from a register key to one at or after it in the same zone, both included. */
    Range deleteRange(Random rnd) {
        int a = rnd.nextInt(keys.size());
        int end = a;
        while (end + 1 < keys.size() && zone[end + 1] == zone[a]) {
            end++;
        }
        int b = a + rnd.nextInt(end - a + 1);
        return new Range(keys.get(a), successor(keys.get(b)), a, b, 0, false);
    }

    /**
     * What a scan over {@code r} that returned {@code pairs} says about each register key of the range,
     * {@code r.first()} first: its value (decoded as {@link RegisterWorkload#decode}, 0 when the scan
     * passed over it without returning it), or {@link #NOT_COVERED} past the point where the scan hit its
     * limit. Null when the answer is malformed: a key outside the range, keys out of order or repeated,
     * more pairs than the limit.
     */
    long[] readBy(Range r, List<KeyValue> pairs) {
        long[] out = new long[r.last() - r.first() + 1];
        if (pairs.size() > r.limit()) {
            return null;
        }
        byte[] prev = null;
        for (KeyValue kv : pairs) {
            byte[] k = kv.key();
            boolean inRange = (r.start().length == 0 || Arrays.compareUnsigned(k, r.start()) >= 0)
                    && (r.end().length == 0 || Arrays.compareUnsigned(k, r.end()) < 0);
            int order = prev == null ? 1 : Arrays.compareUnsigned(k, prev) * (r.reverse() ? -1 : 1);
            if (!inRange || order <= 0) {
                return null;
            }
            prev = k;
        }
        byte[] stop = pairs.size() == r.limit() ? prev : null; // the limit cut the range at the last key returned
        for (int i = r.first(); i <= r.last(); i++) {
            int c = stop == null ? 0 : Arrays.compareUnsigned(keys.get(i), stop);
            out[i - r.first()] = (r.reverse() ? c < 0 : c > 0) ? NOT_COVERED : 0;
        }
        for (KeyValue kv : pairs) {
            int i = indexOf(kv.key());
            if (i >= 0) {
                out[i - r.first()] = RegisterWorkload.decode(kv.value());
            }
        }
        return out;
    }

    /** The smallest key above {@code key}: the exclusive end that takes {@code key} in and nothing after it. */
    static byte[] successor(byte[] key) {
        return Arrays.copyOf(key, key.length + 1);
    }

    private static byte[] concat(byte[] a, String b) {
        byte[] s = b.getBytes(StandardCharsets.UTF_8);
        byte[] out = Arrays.copyOf(a, a.length + s.length);
        System.arraycopy(s, 0, out, a.length, s.length);
        return out;
    }
}
