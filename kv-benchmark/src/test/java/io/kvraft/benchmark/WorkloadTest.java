package io.kvraft.benchmark;

import io.kvraft.client.admin.RegionInfo;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class WorkloadTest {

    private static final int DRAWS = 100_000;

    @Test
    void readRatioHoldsOverManyDraws() {
        for (double ratio : new double[]{0.1, 0.5, 0.9}) {
            Workload w = new Workload(KeySpace.uniform(1000, 16), ratio, 0, 0, 16, new SplittableRandom(7));
            int reads = 0;
            for (int i = 0; i < DRAWS; i++) {
                if (w.nextOp() == OpType.GET) {
                    reads++;
                }
            }
            assertThat((double) reads / DRAWS).as("ratio %s", ratio).isCloseTo(ratio, within(0.01));
        }
    }

    @Test
    void readRatioZeroAndOneAreExact() {
        Workload puts = new Workload(KeySpace.uniform(10, 16), 0.0, 0, 0, 16, new SplittableRandom(1));
        Workload gets = new Workload(KeySpace.uniform(10, 16), 1.0, 0, 0, 16, new SplittableRandom(1));
        for (int i = 0; i < 10_000; i++) {
            assertThat(puts.nextOp()).isEqualTo(OpType.PUT);
            assertThat(gets.nextOp()).isEqualTo(OpType.GET);
        }
    }

    @Test
    void keysAndValuesHaveTheConfiguredSizes() {
        for (int keySize : new int[]{8, 12, 16, 40}) {
            for (int valueSize : new int[]{1, 16, 1000}) {
                Workload w = new Workload(KeySpace.uniform(1000, keySize), 0.5, 0, 0, valueSize, new SplittableRandom(3));
                for (int i = 0; i < 100; i++) {
                    assertThat(w.nextKey()).hasSize(keySize);
                    assertThat(w.nextValue()).hasSize(valueSize);
                }
            }
        }
    }

    @Test
    void valuesAreRandomAndDistinct() {
        Workload w = new Workload(KeySpace.uniform(1000, 16), 0, 0, 0, 16, new SplittableRandom(3));
        Set<ByteBuffer> seen = new HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            seen.add(ByteBuffer.wrap(w.nextValue()));
        }
        assertThat(seen).hasSize(10_000);
    }

    @Test
    void keysAreDistinctAndCarryTheIndex() {
        Set<ByteBuffer> seen = new HashSet<>();
        for (long i = 0; i < DRAWS; i++) {
            byte[] k = KeyGenerator.key(i, 16);
            assertThat(seen.add(ByteBuffer.wrap(k))).isTrue();
            assertThat(ByteBuffer.wrap(k, 8, 8).getLong()).isEqualTo(i);
        }
        // 8-byte keys stay distinct: the mix is a bijection
        Set<ByteBuffer> short8 = new HashSet<>();
        for (long i = 0; i < DRAWS; i++) {
            short8.add(ByteBuffer.wrap(KeyGenerator.key(i, 8)));
        }
        assertThat(short8).hasSize(DRAWS);
        assertThat(KeyGenerator.key(5, 24)).endsWith(new byte[8]);
    }

    @Test
    void uniformKeysSpreadEvenlyOverTheFirstTwoBytes() {
        int buckets = 16; // like a cluster of 16 regions split evenly on the first two bytes
        int[] counts = new int[buckets];
        KeySpace keys = KeySpace.uniform(1_000_000, 16);
        SplittableRandom r = new SplittableRandom(11);
        for (int i = 0; i < DRAWS; i++) {
            byte[] k = keys.next(r);
            int prefix = ((k[0] & 0xFF) << 8) | (k[1] & 0xFF);
            counts[prefix * buckets / 65536]++;
        }
        double expected = (double) DRAWS / buckets;
        for (int c : counts) {
            assertThat((double) c).isCloseTo(expected, within(expected * 0.06));
        }
        // and consecutive indexes (the preload order) land all over the range too
        int[] seq = new int[buckets];
        for (long i = 0; i < 16_000; i++) {
            byte[] k = KeyGenerator.key(i, 16);
            seq[(((k[0] & 0xFF) << 8) | (k[1] & 0xFF)) * buckets / 65536]++;
        }
        assertThat(Arrays.stream(seq).min().orElseThrow()).isGreaterThan(850);
    }

    @Test
    void zipfianIsSkewedTowardsKeyZero() {
        int n = 1000;
        ZipfianGenerator zipf = new ZipfianGenerator(n);
        SplittableRandom r = new SplittableRandom(5);
        long[] counts = new long[n];
        for (int i = 0; i < DRAWS; i++) {
            long v = zipf.next(r);
            assertThat(v).isBetween(0L, n - 1L);
            counts[(int) v]++;
        }
        long[] sorted = counts.clone();
        Arrays.sort(sorted);
        long median = Math.max(1, sorted[n / 2]);
        assertThat(counts[0]).isEqualTo(sorted[n - 1]); // rank 1 is key 0
        assertThat(counts[0]).isGreaterThan(50 * median);
        assertThat(counts[0]).isGreaterThan(counts[1]).isGreaterThan(counts[10]);
        // P(rank 1) = 1/zeta(1000, 0.99), about 13%
        assertThat(counts[0] / (double) DRAWS).isCloseTo(1 / ZipfianGenerator.zeta(n, 0.99), within(0.01));
    }

    @Test
    void zipfianKeySpaceReturnsMixedKeysOfTheHotIndex() {
        KeySpace keys = KeySpace.zipfian(1000, 16);
        SplittableRandom r = new SplittableRandom(5);
        Map<ByteBuffer, Integer> freq = new HashMap<>();
        for (int i = 0; i < 20_000; i++) {
            freq.merge(ByteBuffer.wrap(keys.next(r)), 1, Integer::sum);
        }
        ByteBuffer hottest = freq.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
        assertThat(hottest).isEqualTo(ByteBuffer.wrap(KeyGenerator.key(0, 16)));
    }

    @Test
    void zetaTailApproximationMatchesExactSum() {
        // beyond 10M terms the sum is approximated; check the approximation against an exact sum elsewhere
        double exact = 0;
        for (long i = 1; i <= 3_000_000; i++) {
            exact += 1.0 / Math.pow(i, 0.99);
        }
        double a = 1_000_000;
        double approx = 0;
        for (long i = 1; i <= 1_000_000; i++) {
            approx += 1.0 / Math.pow(i, 0.99);
        }
        double n = 3_000_000;
        approx += (Math.pow(n, 0.01) - Math.pow(a, 0.01)) / 0.01 + (Math.pow(n, -0.99) - Math.pow(a, -0.99)) / 2
                + (-0.99 * Math.pow(n, -1.99) + 0.99 * Math.pow(a, -1.99)) / 12;
        assertThat(approx).isCloseTo(exact, within(1e-9 * exact));
        assertThat(new ZipfianGenerator(20_000_000).next(new SplittableRandom(1))).isBetween(0L, 19_999_999L);
    }

    @Test
    void regionStartUsesOnlyTheRegionsStartKeysFittedToKeySize() {
        List<RegionInfo> regions = new ArrayList<>();
        byte[][] starts = {{}, {0x40}, {(byte) 0x80, 0x01}, {(byte) 0xC0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}};
        for (byte[] s : starts) {
            regions.add(new RegionInfo(0, s, new byte[0], 0, List.of(), "", 0, 0, "", 0, false, 0, List.of()));
        }
        KeySpace keys = KeySpace.regionStart(regions, 16);
        Set<ByteBuffer> expected = new HashSet<>();
        for (byte[] s : starts) {
            expected.add(ByteBuffer.wrap(Arrays.copyOf(s, 16)));
        }
        Set<ByteBuffer> seen = new HashSet<>();
        SplittableRandom r = new SplittableRandom(9);
        for (int i = 0; i < 10_000; i++) {
            byte[] k = keys.next(r);
            assertThat(k).hasSize(16);
            seen.add(ByteBuffer.wrap(k));
        }
        assertThat(seen).isEqualTo(expected);
        assertThat(keys.size()).isEqualTo(4);
        assertThat(keys.keyAt(0)).isEqualTo(new byte[16]);
        assertThat(KeySpace.regionStart(regions, 1).keyAt(3)).containsExactly((byte) 0xC0);
    }

    @Test
    void shortKeysAreRefusedForMixedDistributions() {
        assertThatThrownBy(() -> WorkloadOptions.builder().keySize(4).build())
                .isInstanceOf(UsageException.class)
                .hasMessageContaining("--key-size must be at least 8");
        assertThatThrownBy(() -> WorkloadOptions.builder().keySize(7).keyDistribution(KeyDistribution.ZIPFIAN).build())
                .isInstanceOf(UsageException.class);
        assertThat(WorkloadOptions.builder().keySize(4).keyDistribution(KeyDistribution.REGION_START).build().keySize())
                .isEqualTo(4);
    }

    @Test
    void keyDistributionParsesCliSpelling() {
        assertThat(KeyDistribution.parse("region-start")).isEqualTo(KeyDistribution.REGION_START);
        assertThat(KeyDistribution.parse("ZIPFIAN")).isEqualTo(KeyDistribution.ZIPFIAN);
        assertThatThrownBy(() -> KeyDistribution.parse("gauss")).isInstanceOf(UsageException.class);
    }

    /** Shares of put, get, scan over many seeded draws. */
    private static Map<OpType, Double> shares(double readRatio, double scanRatio, long seed) {
        Workload w = new Workload(KeySpace.uniform(1000, 16), readRatio, scanRatio, 0, 16, new SplittableRandom(seed));
        Map<OpType, Integer> n = new java.util.EnumMap<>(OpType.class);
        for (int i = 0; i < DRAWS; i++) {
            n.merge(w.nextOp(), 1, Integer::sum);
        }
        Map<OpType, Double> out = new java.util.EnumMap<>(OpType.class);
        for (OpType t : OpType.values()) {
            out.put(t, n.getOrDefault(t, 0) / (double) DRAWS);
        }
        return out;
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({
            // preset, put, get, scan
            "default, 0.90, 0.10, 0",
            "a,       0.50, 0.50, 0",
            "b,       0.05, 0.95, 0",
            "c,       0,    1,    0",
            "e,       0.05, 0,    0.95"})
    void when_aPresetIsChosen_then_itsMixHoldsOverManyDraws(String name, double put, double get, double scan) {
        WorkloadOptions o = options("--workload", name);
        assertThat(o.workload()).isEqualTo(name);
        Map<OpType, Double> got = shares(o.readRatio(), o.scanRatio(), 11);
        // 100,000 draws: a binomial share's standard deviation is at most 0.0016
        assertThat(got.get(OpType.PUT)).as("put").isCloseTo(put, within(0.01));
        assertThat(got.get(OpType.GET)).as("get").isCloseTo(get, within(0.01));
        assertThat(got.get(OpType.SCAN)).as("scan").isCloseTo(scan, within(0.01));
        if (put == 0 || get == 0 || scan == 0) {
            // a share of 0 is exact, not just small
            assertThat(got.values().stream().filter(v -> v == 0).count()).isPositive();
        }
    }

    @Test
    void when_ratiosAreGiven_then_putsTakeTheRest() {
        WorkloadOptions o = options("--read-ratio", "0.2", "--scan-ratio", "0.3", "--scan-length", "7");
        assertThat(o.workload()).isNull();
        assertThat(o.putRatio()).isCloseTo(0.5, within(1e-9));
        assertThat(o.scanLength()).isEqualTo(7);
        assertThat(o.mix()).isEqualTo("put 0.5, get 0.2, scan 0.3");
        Map<OpType, Double> got = shares(o.readRatio(), o.scanRatio(), 5);
        assertThat(got.get(OpType.GET)).isCloseTo(0.2, within(0.01));
        assertThat(got.get(OpType.SCAN)).isCloseTo(0.3, within(0.01));
        assertThat(got.get(OpType.PUT)).isCloseTo(0.5, within(0.01));
        // nothing given: the reference mix, scans of 100 keys
        WorkloadOptions d = options();
        assertThat(d.readRatio()).isEqualTo(0.1);
        assertThat(d.scanRatio()).isZero();
        assertThat(d.scanLength()).isEqualTo(WorkloadOptions.DEFAULT_SCAN_LENGTH);
    }

    @Test
    void when_scanRatioIsOne_then_everyOperationIsAScan() {
        Workload w = new Workload(KeySpace.uniform(10, 16), 0, 1.0, 0, 16, new SplittableRandom(1));
        for (int i = 0; i < 10_000; i++) {
            assertThat(w.nextOp()).isEqualTo(OpType.SCAN);
        }
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', value = {
            "--workload f                        | --workload must be one of default, a, b, c, e, sequence, allocator, lock; got 'f'",
            "--workload sequence --sequence-step 0 | --sequence-step must be 1 to 1099511627776, got 0",
            "--workload a --sequence-step 10     | --sequence-step applies to --workload sequence and allocator only",
            "--workload sequence --lock-lease 3s | --lock-lease applies to --workload lock only",
            "--workload lock --lock-lease 25h    | --lock-lease must be 1 ms to 1 day, got 90000000 ms",
            "--workload lock --read-ratio 0.5    | --workload lock sets the mix: leave out --read-ratio, --scan-ratio and --append-ratio, or --workload",
            "--read-ratio 0.9 --scan-ratio 0.2   | --read-ratio 0.9, --scan-ratio 0.2 and --append-ratio 0 add up to 1.1, over 1 (puts take the rest)",
            "--append-ratio 0.8 --read-ratio 0.3 | --read-ratio 0.3, --scan-ratio 0 and --append-ratio 0.8 add up to 1.1, over 1 (puts take the rest)",
            "--append-ratio 2                    | --append-ratio must be between 0 and 1, got 2.0",
            "--scan-ratio 1.5                    | --scan-ratio must be between 0 and 1, got 1.5",
            "--scan-length 0                     | --scan-length must be at least 1, got 0",
            "--workload e --read-ratio 0.5       | --workload e sets the mix: leave out --read-ratio, --scan-ratio and --append-ratio, or --workload",
            "--read-mode eventual                | --read-mode must be one of read_index, leader_lease, follower, stale; got 'eventual'"})
    void when_theMixOrReadModeIsBad_then_oneLineAndExitCode2(String args, String message) {
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        List<String> a = new ArrayList<>(List.of("--servers", "127.0.0.1:1"));
        a.addAll(List.of(args.trim().split(" +")));
        int code = BenchmarkMain.execute(a.toArray(String[]::new), new java.io.PrintStream(new java.io.ByteArrayOutputStream()),
                new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8), c -> {
                    throw new AssertionError("must not connect");
                });
        String e = err.toString(java.nio.charset.StandardCharsets.UTF_8).strip();
        assertThat(code).isEqualTo(BenchmarkMain.EXIT_USAGE);
        assertThat(e).doesNotContain("\n").endsWith(message);
    }

    @Test
    void when_theScanScenariosArgsFileIsGiven_then_itMakesTheYcsbEWorkload() {
        java.nio.file.Path args = java.nio.file.Path.of("..", "conf", "scenarios", "e-memory-scan", "benchmark.args");
        WorkloadOptions o = options("@" + args);
        assertThat(o.workload()).isEqualTo("e");
        assertThat(o.scanRatio()).isEqualTo(0.95);
        assertThat(o.putRatio()).isCloseTo(0.05, within(1e-9));
        assertThat(o.scanLength()).isEqualTo(100);
        assertThat(o.keyDistribution()).isEqualTo(KeyDistribution.ZIPFIAN);
    }

    @Test
    void when_theSequenceWorkloadIsChosen_then_oneSequenceKeyStep1000AndNoPreloadUnlessTold() {
        WorkloadOptions o = options("--workload", "sequence");
        assertThat(o.kind()).isEqualTo(WorkloadPreset.Kind.SEQUENCE);
        assertThat(o.keys()).isEqualTo(1);
        assertThat(o.sequenceStep()).isEqualTo(1000);
        assertThat(o.preloads()).isFalse();
        assertThat(o.mix()).isEqualTo("getSequence step 1000");
        assertThat(o.describe()).contains("workload=sequence mix=(getSequence step 1000)").contains("keys=1 ");

        WorkloadOptions told = options("--workload", "allocator", "--sequence-step", "50000", "--keys", "8");
        assertThat(told.kind()).isEqualTo(WorkloadPreset.Kind.ALLOCATOR);
        assertThat(told.keys()).isEqualTo(8);
        assertThat(told.sequenceStep()).isEqualTo(50_000);
        assertThat(told.mix()).isEqualTo("SequenceAllocator.next, blocks of 50000");
    }

    @Test
    void when_theLockWorkloadIsChosen_then_itsLeaseIsParsedAndTheMixesKeepTheirKeySpace() {
        WorkloadOptions o = options("--workload", "lock", "--lock-lease", "2500ms");
        assertThat(o.kind()).isEqualTo(WorkloadPreset.Kind.LOCK);
        assertThat(o.lockLeaseMs()).isEqualTo(2500);
        assertThat(o.preloads()).isFalse();
        assertThat(o.mix()).isEqualTo("tryLock then unlock, lease 2500 ms");
        assertThat(options("--workload", "lock").lockLeaseMs()).isEqualTo(WorkloadOptions.DEFAULT_LOCK_LEASE_MS);
        WorkloadOptions mix = options("--workload", "a");
        assertThat(mix.kind()).isEqualTo(WorkloadPreset.Kind.MIX);
        assertThat(mix.keys()).isEqualTo(100_000);
        assertThat(mix.preloads()).isTrue();
        assertThat(options().kind()).isEqualTo(WorkloadPreset.Kind.MIX);
    }

    @Test
    void lockKeysAreDistinctPerSlotAndPerClient() {
        WorkloadOptions a = options("--workload", "lock", "--client-id", "a", "--seed", "1");
        WorkloadOptions b = options("--workload", "lock", "--client-id", "b", "--seed", "1");
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (long slot = 0; slot < 4096; slot++) {
            assertThat(seen.add(java.util.HexFormat.of().formatHex(LoadRunner.lockKey(a, slot)))).isTrue();
            assertThat(seen.add(java.util.HexFormat.of().formatHex(LoadRunner.lockKey(b, slot)))).isTrue();
        }
        // spread over the regions: the first bytes differ
        assertThat(seen.stream().map(k -> k.substring(0, 2)).distinct().count()).isGreaterThan(200);
    }

    /** The workload the CLI options make, as a run would get it. */
    private static WorkloadOptions options(String... args) {
        LoadOptions load = new LoadOptions();
        new picocli.CommandLine(new Object() {
            @picocli.CommandLine.Mixin
            LoadOptions options = load;
        }).parseArgs(args);
        return load.toWorkload(1, 0, null, null);
    }

    @Test
    void when_appendsHaveAShare_then_theyComeOutOfThePutsShare() {
        Workload w = new Workload(KeySpace.uniform(1000, 16), 0.1, 0, 0.3, 16, new SplittableRandom(11));
        Map<OpType, Integer> counts = new java.util.EnumMap<>(OpType.class);
        for (int i = 0; i < 100_000; i++) {
            counts.merge(w.nextOp(), 1, Integer::sum);
        }
        assertThat(counts.keySet()).containsExactlyInAnyOrder(OpType.GET, OpType.APPEND, OpType.PUT);
        assertThat(counts.get(OpType.APPEND) / 100_000.0).isCloseTo(0.3, org.assertj.core.data.Offset.offset(0.01));
        assertThat(counts.get(OpType.PUT) / 100_000.0).isCloseTo(0.6, org.assertj.core.data.Offset.offset(0.01));
        Workload all = new Workload(KeySpace.uniform(10, 16), 0, 0, 1.0, 16, new SplittableRandom(1));
        assertThat(all.nextOp()).isEqualTo(OpType.APPEND);
    }

    @Test
    void when_theSharesPassOne_then_theMixIsRefusedNamingThem() {
        assertThatThrownBy(() -> WorkloadOptions.builder().readRatio(0.5).scanRatio(0.3).appendRatio(0.3).build())
                .isInstanceOf(UsageException.class).hasMessageContaining("--append-ratio 0.3")
                .hasMessageContaining("over 1");
        assertThat(WorkloadOptions.builder().readRatio(0.1).appendRatio(0.2).build().mix())
                .isEqualTo("put 0.7, get 0.1, append 0.2");
    }
}
