package io.kvraft.server.store;

import java.util.List;

/**
 * One page of a range scan, in scan order.
 *
 * @param keys   the keys
 * @param values the values, one per key (empty arrays when the scan asked for keys only)
 * @param more   the range holds keys past the last one of this page
 */
public record ScanPage(List<byte[]> keys, List<byte[]> values, boolean more) {

    public ScanPage {
        if (keys.size() != values.size()) {
            throw new IllegalArgumentException(keys.size() + " keys but " + values.size() + " values");
        }
    }

    /** Collects a page: stops at {@code limit} pairs or once {@code maxBytes} of keys and values are in it. */
    public static final class Builder {
        private final int limit;
        private final long maxBytes;
        private final boolean keysOnly;
        private final List<byte[]> keys = new java.util.ArrayList<>();
        private final List<byte[]> values = new java.util.ArrayList<>();
        private long bytes;

        public Builder(int limit, long maxBytes, boolean keysOnly) {
            if (limit < 1 || maxBytes < 1) {
                throw new IllegalArgumentException("a scan page needs a positive limit and byte budget, got "
                        + limit + " and " + maxBytes);
            }
            this.limit = limit;
            this.maxBytes = maxBytes;
            this.keysOnly = keysOnly;
        }

        /** False once the page is full: the pair offered next would be past it. */
        public boolean hasRoom() {
            return keys.size() < limit && bytes < maxBytes;
        }

        /** The most pairs the page may hold. */
        public int limit() {
            return limit;
        }

        public boolean keysOnly() {
            return keysOnly;
        }

        public void add(byte[] key, byte[] value) {
            keys.add(key);
            byte[] v = keysOnly ? EMPTY : value;
            values.add(v);
            bytes += key.length + v.length;
        }

        public ScanPage build(boolean more) {
            return new ScanPage(keys, values, more);
        }

        private static final byte[] EMPTY = new byte[0];
    }
}
