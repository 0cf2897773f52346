package io.kvraft.benchmark;

import java.util.SplittableRandom;

/**
 * One thread's stream of operations: get, scan, append or put by the ratios, the key (a scan's start key) by
 * the key space, and fresh random value bytes. Not thread-safe; each load thread owns one.
 */
public final class Workload {

    private final KeySpace keySpace;
    private final double readRatio;
    private final double scanRatio;
    private final double appendRatio;
    private final int valueSize;
    private final SplittableRandom random;

    /**
     * @param readRatio share of gets
     * @param scanRatio share of scans
     * @param appendRatio share of appends; puts are the rest ({@code readRatio + scanRatio + appendRatio <= 1})
     */
    public Workload(KeySpace keySpace, double readRatio, double scanRatio, double appendRatio, int valueSize,
                    SplittableRandom random) {
        this.keySpace = keySpace;
        this.readRatio = readRatio;
        this.scanRatio = scanRatio;
        this.appendRatio = appendRatio;
        this.valueSize = valueSize;
        this.random = random;
    }

    /** The type of the next operation. A ratio of 0 or 1 is exact; the draw is skipped then. */
    public OpType nextOp() {
        if (readRatio >= 1) {
            return OpType.GET;
        }
        if (scanRatio >= 1) {
            return OpType.SCAN;
        }
        if (appendRatio >= 1) {
            return OpType.APPEND;
        }
        if (readRatio <= 0 && scanRatio <= 0 && appendRatio <= 0) {
            return OpType.PUT;
        }
        double u = random.nextDouble();
        return u < readRatio ? OpType.GET : u < readRatio + scanRatio ? OpType.SCAN
                : u < readRatio + scanRatio + appendRatio ? OpType.APPEND : OpType.PUT;
    }

    /** The key of a get or put, or the start key of a scan. */
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
