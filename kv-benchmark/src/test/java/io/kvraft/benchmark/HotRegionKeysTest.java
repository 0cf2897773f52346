package io.kvraft.benchmark;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Set;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** The hot-region key space: distinct keys, all below the default layout's first split key 0x0aaa. */
class HotRegionKeysTest {

    private static final byte[] FIRST_SPLIT = {0x0a, (byte) 0xaa};

    @Test
    void when_keysAreDrawn_then_allFallInTheLowestRegionAndThePreloadWritesDistinctKeys() {
        KeySpace keys = KeySpace.hotRegion(10_000, 16);
        Set<String> preload = new HashSet<>();
        for (long i = 0; i < keys.size(); i++) {
            byte[] k = keys.keyAt(i);
            assertThat(k).hasSize(16);
            assertThat(Arrays.compareUnsigned(k, FIRST_SPLIT)).as(HexFormat.of().formatHex(k)).isNegative();
            preload.add(HexFormat.of().formatHex(k));
        }
        SplittableRandom random = new SplittableRandom(7);
        for (int i = 0; i < 10_000; i++) {
            assertThat(preload).contains(HexFormat.of().formatHex(keys.next(random)));
        }
        assertThat(preload).hasSize(10_000);
    }

    @Test
    void when_parsed_then_hotRegionIsADistribution() {
        assertThat(KeyDistribution.parse("hot-region")).isEqualTo(KeyDistribution.HOT_REGION);
    }
}
