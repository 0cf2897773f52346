package io.kvraft.benchmark;

import java.util.Arrays;

/**
 * The benchmark's keys. The cluster splits the key space evenly by the first two bytes (unsigned),
 * so key {@code i} starts with the 8 bytes of a SplitMix64 mix of {@code i}, which spreads
 * consecutive indexes over the whole byte range, followed by the big-endian {@code i} and zeros up
 * to the key size. The mix is a bijection, so any key size of at least 8 keeps keys distinct.
 */
public final class KeyGenerator {

    /** The smallest key size for the uniform and zipfian distributions. */
    public static final int MIN_MIXED_KEY_SIZE = 8;

    private KeyGenerator() {
    }

    /** SplitMix64 of {@code i}: the golden-gamma step then Stafford's variant-13 finalizer. A bijection on longs. */
    public static long mix64(long i) {
        long z = i + 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Key number {@code i} of {@code keySize} bytes. */
    public static byte[] key(long i, int keySize) {
        byte[] k = new byte[keySize];
        long h = mix64(i);
        int n = Math.min(8, keySize);
        for (int b = 0; b < n; b++) {
            k[b] = (byte) (h >>> (56 - 8 * b));
        }
        int m = Math.min(16, keySize);
        for (int b = 8; b < m; b++) {
            k[b] = (byte) (i >>> (56 - 8 * (b - 8)));
        }
        return k;
    }

    /** {@code raw} padded with zero bytes, or truncated, to {@code size} bytes. */
    public static byte[] fit(byte[] raw, int size) {
        return Arrays.copyOf(raw, size);
    }
}
