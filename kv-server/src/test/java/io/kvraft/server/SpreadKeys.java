package io.kvraft.server;

import java.nio.charset.StandardCharsets;

/** Test keys spread over the whole key space by their first two bytes (a multiplicative hash), so every region gets some. */
final class SpreadKeys {

    private SpreadKeys() {
    }

    /** Key {@code i}: two hashed bytes, then "k" and i. */
    static byte[] key(int i) {
        int h = (int) ((i * 2654435761L) & 0xffff);
        byte[] tail = String.format("k%05d", i).getBytes(StandardCharsets.US_ASCII);
        byte[] k = new byte[2 + tail.length];
        k[0] = (byte) (h >>> 8);
        k[1] = (byte) h;
        System.arraycopy(tail, 0, k, 2, tail.length);
        return k;
    }
}
