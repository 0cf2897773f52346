package io.kvraft.client;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;

/** Keys and key ranges as the client's operations check and print them. */
final class Keys {

    private static final byte[] NONE = new byte[0];

    private Keys() {
    }

    /** A key for an error message: text when it is printable ASCII, else hex. */
    static String printable(byte[] key) {
        for (byte b : key) {
            if (b < 0x20 || b > 0x7e) {
                return "0x" + HexFormat.of().formatHex(key);
            }
        }
        return "'" + new String(key, StandardCharsets.US_ASCII) + "'";
    }

    /** {@code b}, or the empty key (an unbounded end of a range) for null. */
    static byte[] orEmpty(byte[] b) {
        return b == null ? NONE : b;
    }

    /** The smallest key above {@code key}. */
    static byte[] successor(byte[] key) {
        return Arrays.copyOf(key, key.length + 1);
    }

    /** The smallest key above every key that starts with {@code prefix}; empty (+inf) when there is none. */
    static byte[] prefixEnd(byte[] prefix) {
        for (int i = prefix.length - 1; i >= 0; i--) {
            if (prefix[i] != (byte) 0xff) {
                byte[] end = Arrays.copyOf(prefix, i + 1);
                end[i]++;
                return end;
            }
        }
        return new byte[0];
    }

    /** Why [start, end) is not a range (null when it is): start above end. */
    static String checkRange(byte[] start, byte[] end) {
        if (end.length > 0 && Arrays.compareUnsigned(start, end) > 0) {
            return "range start " + printable(start) + " is above its end " + printable(end);
        }
        return null;
    }

    /** Whether [start, end) holds no key (end at or below start; an empty end is +inf). */
    static boolean isEmptyRange(byte[] start, byte[] end) {
        return end.length > 0 && Arrays.compareUnsigned(start, end) >= 0;
    }
}
