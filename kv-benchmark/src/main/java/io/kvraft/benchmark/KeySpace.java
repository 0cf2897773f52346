package io.kvraft.benchmark;

import io.kvraft.client.admin.RegionInfo;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The keys a run uses: all of them (for the preload) and the next one to operate on. Implementations
 * are immutable and shared by all threads; randomness comes from the caller.
 */
public interface KeySpace {

    /** How many keys there are. */
    long size();

    /** Key number {@code i}, for the preload. */
    byte[] keyAt(long i);

    /** The key of the next operation. */
    byte[] next(SplittableRandom random);

    /** The key space of a uniform or zipfian run; region-start needs {@link #regionStart}. */
    static KeySpace of(WorkloadOptions options) {
        return switch (options.keyDistribution()) {
            case UNIFORM -> uniform(options.keys(), options.keySize());
            case ZIPFIAN -> zipfian(options.keys(), options.keySize());
            case HOT_REGION -> hotRegion(options.keys(), options.keySize());
            case REGION_START -> throw new IllegalArgumentException("region-start keys come from the regions");
        };
    }

    static KeySpace uniform(long keys, int keySize) {
        return new KeySpace() {
            @Override
            public long size() {
                return keys;
            }

            @Override
            public byte[] keyAt(long i) {
                return KeyGenerator.key(i, keySize);
            }

            @Override
            public byte[] next(SplittableRandom random) {
                return KeyGenerator.key(random.nextLong(keys), keySize);
            }
        };
    }

    /**
     * Uniform keys with their first byte set to 0x00, so every key falls in the region that holds the lowest
     * keys (with the default even split, region 1 up to 0x0aaa): a hot region, for reads that all hit one leader.
     */
    static KeySpace hotRegion(long keys, int keySize) {
        KeySpace uniform = uniform(keys, keySize);
        return new KeySpace() {
            @Override
            public long size() {
                return keys;
            }

            @Override
            public byte[] keyAt(long i) {
                return lowest(uniform.keyAt(i));
            }

            @Override
            public byte[] next(SplittableRandom random) {
                return lowest(uniform.next(random));
            }

            private byte[] lowest(byte[] key) {
                key[0] = 0;
                return key;
            }
        };
    }

    static KeySpace zipfian(long keys, int keySize) {
        ZipfianGenerator zipf = new ZipfianGenerator(keys);
        return new KeySpace() {
            @Override
            public long size() {
                return keys;
            }

            @Override
            public byte[] keyAt(long i) {
                return KeyGenerator.key(i, keySize);
            }

            @Override
            public byte[] next(SplittableRandom random) {
                return KeyGenerator.key(zipf.next(random), keySize);
            }
        };
    }

    /**
     * The reference benchmark's keys: only the regions' start keys, each padded with zero bytes or
     * truncated to {@code keySize} (the first region's empty start key becomes all zeros). The arrays
     * are shared between operations and never modified.
     */
    static KeySpace regionStart(List<RegionInfo> regions, int keySize) {
        if (regions.isEmpty()) {
            throw new IllegalArgumentException("the cluster reported no regions");
        }
        List<byte[]> list = new ArrayList<>(regions.size());
        for (RegionInfo r : regions) {
            list.add(KeyGenerator.fit(r.startKey(), keySize));
        }
        byte[][] keys = list.toArray(new byte[0][]);
        return new KeySpace() {
            @Override
            public long size() {
                return keys.length;
            }

            @Override
            public byte[] keyAt(long i) {
                return keys[(int) i];
            }

            @Override
            public byte[] next(SplittableRandom random) {
                return keys[random.nextInt(keys.length)];
            }
        };
    }
}
