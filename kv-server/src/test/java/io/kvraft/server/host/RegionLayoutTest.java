package io.kvraft.server.host;

import io.kvraft.server.config.ServerConfig;

import io.kvraft.server.config.ClusterConfig;
import io.kvraft.server.host.RegionLayout.RegionSpec;
import io.kvraft.server.store.KeyRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RegionLayoutTest {

    private static final List<String> PEERS = List.of("127.0.0.1:8181", "127.0.0.1:8182", "127.0.0.1:8183");

    private static List<RegionSpec> even(int regionCount) {
        return RegionLayout.of(new ClusterConfig(PEERS, regionCount, null));
    }

    private static List<RegionSpec> split(String... hexKeys) {
        return RegionLayout.of(new ClusterConfig(PEERS, null, List.of(hexKeys)));
    }

    private static byte[] hex(String h) {
        return HexFormat.of().parseHex(h);
    }

    /** The region holding {@code key}; fails unless exactly one region holds it. */
    private static int holderIndex(List<RegionSpec> regions, byte[] key) {
        int[] holders = IntStream.range(0, regions.size()).filter(i -> regions.get(i).range().contains(key)).toArray();
        assertThat(holders).as("regions holding %s", HexFormat.of().formatHex(key)).hasSize(1);
        return holders[0];
    }

    private static void assertTilesTheKeySpace(List<RegionSpec> regions) {
        assertThat(regions.get(0).range().start()).as("first start is minus infinity").isEmpty();
        assertThat(regions.get(regions.size() - 1).range().end()).as("last end is plus infinity").isEmpty();
        for (int i = 0; i + 1 < regions.size(); i++) {
            KeyRange here = regions.get(i).range();
            KeyRange next = regions.get(i + 1).range();
            assertThat(here.end()).as("region %d end", i + 1).isNotEmpty().isEqualTo(next.start());
            assertThat(Arrays.compareUnsigned(here.start(), here.end())).as("region %d is not empty", i + 1).isNegative();
        }
    }

    @ParameterizedTest(name = "{0} regions")
    @ValueSource(ints = {1, 2, 3, 7, 24, 100, 256, 1000, 65536})
    void when_splitEvenly_then_regionsCoverTheWholeKeySpaceWithoutGapsOrOverlaps(int regionCount) {
        List<RegionSpec> regions = even(regionCount);

        assertThat(regions).hasSize(regionCount);
        assertThat(regions).extracting(RegionSpec::id)
                .containsExactlyElementsOf(IntStream.rangeClosed(1, regionCount).boxed().toList());
        assertTilesTheKeySpace(regions);
    }

    @Test
    void when_thereIsOneRegion_then_itHoldsEverything() {
        assertThat(even(1)).containsExactly(new RegionSpec(1, KeyRange.ALL, PEERS));
    }

    @Test
    void when_24RegionsAreLaidOut_then_idsRunFrom1To24AndBoundariesAreTwoBytePrefixes() {
        List<RegionSpec> regions = even(24);

        assertThat(regions).extracting(RegionSpec::id).containsExactlyElementsOf(IntStream.rangeClosed(1, 24).boxed().toList());
        assertTilesTheKeySpace(regions);
        assertThat(regions.subList(1, 24)).allSatisfy(r -> assertThat(r.range().start()).hasSize(2));
        assertThat(regions.get(1).range().start()).isEqualTo(hex("0aaa"));
        assertThat(regions.get(12).range().start()).isEqualTo(hex("8000"));
    }

    @ParameterizedTest(name = "key {0} -> region {1}")
    @CsvSource({
            "'',           1",
            "00,           1",
            "0aa9ff,       1",
            "0aaa,         2",
            "0aaa00,       2",
            "7fff,         12",
            "80,           12",  // a proper prefix of the split 8000 sorts before it
            "8000,         13",
            "ff,           24",
            "ffffffffffff, 24",
    })
    void when_aKeyIsLookedUpIn24Regions_then_exactlyOneRegionHoldsItUnderUnsignedOrder(String keyHex, int regionId) {
        List<RegionSpec> regions = even(24);

        assertThat(regions.get(holderIndex(regions, hex(keyHex))).id()).isEqualTo(regionId);
    }

    @Test
    void when_uniformlyRandomKeysArePlaced_then_eachOf24RegionsGetsItsShareWithinTenPercent() {
        List<RegionSpec> regions = even(24);
        Random random = new Random(20240601L);
        int keys = 240_000;
        int[] counts = new int[24];
        byte[] key = new byte[16];

        for (int i = 0; i < keys; i++) {
            random.nextBytes(key);
            counts[holderIndex(regions, key)]++;
        }

        double expected = keys / 24.0;
        assertThat(Arrays.stream(counts).sum()).isEqualTo(keys);
        for (int i = 0; i < counts.length; i++) {
            assertThat((double) counts[i]).as("keys in region %d", i + 1).isBetween(expected * 0.9, expected * 1.1);
        }
    }

    @Test
    void when_splitKeysAreGiven_then_theyAreTheBoundaries() {
        List<RegionSpec> regions = split("0aaa", "1555", "80", "ff00");

        assertThat(regions).containsExactly(
                new RegionSpec(1, new KeyRange(new byte[0], hex("0aaa")), PEERS),
                new RegionSpec(2, new KeyRange(hex("0aaa"), hex("1555")), PEERS),
                new RegionSpec(3, new KeyRange(hex("1555"), hex("80")), PEERS),
                new RegionSpec(4, new KeyRange(hex("80"), hex("ff00")), PEERS),
                new RegionSpec(5, new KeyRange(hex("ff00"), new byte[0]), PEERS));
        assertTilesTheKeySpace(regions);
    }

    @ParameterizedTest(name = "key {0} -> region {1}")
    @CsvSource({
            "'',     1",
            "0aa9,   1",
            "0aaa,   2",
            "7fffff, 3",
            "80,     4",
            "fe,     4",
            "ff,     4",
            "ff00,   5",
            "ffff,   5",
    })
    void when_splitKeysAreGiven_then_aKeyEqualToASplitBelongsToTheRegionStartingThere(String keyHex, int regionId) {
        List<RegionSpec> regions = split("0aaa", "1555", "80", "ff00");

        assertThat(regions.get(holderIndex(regions, hex(keyHex))).id()).isEqualTo(regionId);
    }

    @Test
    void when_oneSplitKeyIsGiven_then_thereAreTwoRegions() {
        assertThat(split("40")).containsExactly(
                new RegionSpec(1, new KeyRange(new byte[0], hex("40")), PEERS),
                new RegionSpec(2, new KeyRange(hex("40"), new byte[0]), PEERS));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '~', textBlock = """
            zz       | 'zz' is not hex
            abc      | 'abc' is not hex
            40,40    | strictly ascending at '40'
            80,7f    | strictly ascending at '7f'
            """)
    void when_splitKeysAreParsedDirectly_then_badOnesAreRejected(String keys, String words) {
        assertThatThrownBy(() -> ClusterConfig.parseSplits(List.of(keys.split(","))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(words);
    }

    private static final List<String> FIVE = List.of("10.0.0.1:8181", "10.0.0.2:8181", "10.0.0.3:8181", "10.0.0.4:8181",
            "10.0.0.5:8181");

    @Test
    void when_theFactorIsTheNodeCount_then_everyRegionIsOnEveryNodeInTheConfiguredOrder() {
        assertThat(RegionLayout.of(new ClusterConfig(FIVE, 24, null), 5)).allSatisfy(r ->
                assertThat(r.peers()).isEqualTo(FIVE));
    }

    @ParameterizedTest(name = "{0} regions on 5 nodes, factor {1}")
    @CsvSource({"24, 3", "1, 3", "7, 1", "5, 2", "100, 4"})
    void when_theFactorIsBelowTheNodeCount_then_eachRegionHasThatManyDistinctNodesAndTheNodesHoldEvenShares(
            int regionCount, int factor) {
        List<RegionSpec> regions = RegionLayout.of(new ClusterConfig(FIVE, regionCount, null), factor);

        assertThat(regions).hasSize(regionCount).allSatisfy(r -> {
            assertThat(r.peers()).hasSize(factor).doesNotHaveDuplicates();
            assertThat(FIVE).containsAll(r.peers());
        });
        java.util.Map<String, Long> perNode = new java.util.HashMap<>();
        FIVE.forEach(n -> perNode.put(n, regions.stream().filter(r -> r.peers().contains(n)).count()));
        assertThat(java.util.Collections.max(perNode.values()) - java.util.Collections.min(perNode.values()))
                .as("replicas per node %s", perNode).isLessThanOrEqualTo(1);
        assertTilesTheKeySpace(regions);
    }

    @Test
    void when_theFactorIsAboveTheNodeCount_then_theLayoutIsRefused() {
        assertThatThrownBy(() -> RegionLayout.of(new ClusterConfig(PEERS, 24, null), 4))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("factor 4 for 3 nodes");
    }
}
