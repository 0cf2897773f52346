package io.kvraft.benchmark;

import java.util.SplittableRandom;

/**
 * One thread's stream of operations: put or get by the read ratio, the key by the key space, and
 * fresh random value bytes. Not thread-safe; each load thread owns one.
 */
public final class Workload {

    private final KeySpace keySpace;
    private final double readRatio;
    private final int valueSize;
    private final SplittableRandom random;

    public Workload(KeySpace keySpace, double readRatio, int valueSize, SplittableRandom random) {
        this.keySpace = keySpace;
        this.readRatio = readRatio;
        this.valueSize = valueSize;
        this.random = random;
    }

    /** True for a get, false for a put. */
    public boolean nextIsRead() {
        return readRatio > 0 && (readRatio >= 1 || random.nextDouble() < readRatio);
    }

    public byte[] nextKey() {
        return keySpace.next(random);
    }

    public byte[] nextValue() {
        return randomBytes(random, valueSize);
    }

    static byte[] randomBytes(SplittableRandom random, int size) {
        byte[] v = new byte[size];
        int i = 0;
        while (i < size) {
            long r = random.nextLong();
            for (int b = 0; b < 8 && i < size; b++, i++) {
                v[i] = (byte) r;
                r >>>= 8;
            }
        }
        return v;
    }
}
