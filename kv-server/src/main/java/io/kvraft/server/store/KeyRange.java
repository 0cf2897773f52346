package io.kvraft.server.store;

import java.util.Arrays;

/**
 * A half-open key range [start, end) under unsigned-byte order. An empty start is minus infinity,
 * an empty end is plus infinity.
 */
public record KeyRange(byte[] start, byte[] end) {

    public static final KeyRange ALL = new KeyRange(new byte[0], new byte[0]);

    public KeyRange {
        start = start == null ? new byte[0] : start;
        end = end == null ? new byte[0] : end;
    }

    public boolean contains(byte[] key) {
        return Arrays.compareUnsigned(key, start) >= 0 && (end.length == 0 || Arrays.compareUnsigned(key, end) < 0);
    }

    /** As {@link #contains(byte[])}, without copying the key out of its ByteString. */
    public boolean contains(com.google.protobuf.ByteString key) {
        return compare(key, start) >= 0 && (end.length == 0 || compare(key, end) < 0);
    }

    /** Unsigned-byte order of a ByteString against a byte array. */
    private static int compare(com.google.protobuf.ByteString a, byte[] b) {
        int n = Math.min(a.size(), b.length);
        for (int i = 0; i < n; i++) {
            int c = Integer.compare(a.byteAt(i) & 0xff, b[i] & 0xff);
            if (c != 0) {
                return c;
            }
        }
        return Integer.compare(a.size(), b.length);
    }

    /** True when {@code key} lies strictly inside the range: in it and not its start (a point a range can be split at). */
    public boolean splitsAt(byte[] key) {
        return key.length > 0 && Arrays.compareUnsigned(key, start) > 0
                && (end.length == 0 || Arrays.compareUnsigned(key, end) < 0);
    }

    /** True when every key of {@code inner} is in this range (an empty inner range is in every range). */
    public boolean covers(KeyRange inner) {
        if (inner.isEmpty()) {
            return true;
        }
        boolean startInside = Arrays.compareUnsigned(inner.start, start) >= 0;
        boolean endInside = end.length == 0
                || (inner.end.length > 0 && Arrays.compareUnsigned(inner.end, end) <= 0);
        return startInside && endInside;
    }

    /** True when no key lies in the range: the end is at or below the start. */
    public boolean isEmpty() {
        return end.length > 0 && Arrays.compareUnsigned(start, end) >= 0;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KeyRange r && Arrays.equals(start, r.start) && Arrays.equals(end, r.end);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(start) + Arrays.hashCode(end);
    }

    @Override
    public String toString() {
        return "[" + hex(start) + ", " + (end.length == 0 ? "+inf" : hex(end)) + ")";
    }

    private static String hex(byte[] b) {
        if (b.length == 0) {
            return "-inf";
        }
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x));
        }
        return sb.toString();
    }
}
