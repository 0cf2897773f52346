package io.kvraft.benchmark.nemesis;

import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.client.admin.RegionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The nemesis's split event against a made-up client: where it splits, and how it counts the outcomes (a split
 * refused or failed is counted, never thrown).
 */
@Timeout(30)
class SplitEventTest {

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static RegionInfo region(int id, String start, String end) {
        return new RegionInfo(id, b(start), b(end), 1, List.of(), "", 0, 0, "", 0, false, 0, List.of());
    }

    /** Regions 1 [, m) with keys a..d, and 2 [m, ) with the single key x. */
    private static final List<RegionInfo> REGIONS = List.of(region(1, "", "m"), region(2, "m", ""));
    private static final List<byte[]> KEYS = List.of(b("a"), b("b"), b("c"), b("d"), b("x"));

    /** A client whose splits answer, in turn, with what {@code answers} holds; it records what was asked. */
    private static class FakeAdmin implements SplitEvent.Admin {
        final Deque<Supplier<CompletableFuture<List<RegionInfo>>>> answers = new ArrayDeque<>();
        final List<Integer> regionIds = new ArrayList<>();
        final List<byte[]> atKeys = new ArrayList<>();
        CompletableFuture<List<RegionInfo>> regions = CompletableFuture.completedFuture(REGIONS);

        @Override
        public CompletableFuture<List<RegionInfo>> regions() {
            return regions;
        }

        @Override
        public CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey) {
            regionIds.add(regionId);
            atKeys.add(atKey);
            return answers.removeFirst().get();
        }

        void done() {
            answers.add(() -> CompletableFuture.completedFuture(List.of(region(1, "", "c"), region(65537, "c", "m"))));
        }

        void fail(ErrorCode code, boolean unsent) {
            answers.add(() -> CompletableFuture.failedFuture(new KvException(code, "made up", "", unsent)));
        }
    }

    @Test
    void when_aRegionHoldsSeveralRegisterKeys_then_itIsSplitAtOneOfThemSoBothHalvesKeepSome() {
        FakeAdmin admin = new FakeAdmin();
        SplitEvent splits = new SplitEvent(admin, KEYS, new Random(3));
        for (int i = 0; i < 20; i++) {
            admin.done();
            String line = splits.run();
            assertThat(line).contains("done, new region 65537");
        }
        for (int i = 0; i < 20; i++) {
            if (admin.regionIds.get(i) == 1) {
                // strictly inside: b, c or d (never a, the first, which would leave the left half without keys)
                assertThat(new String(admin.atKeys.get(i), StandardCharsets.UTF_8)).isIn("b", "c", "d");
            } else {
                assertThat(admin.atKeys.get(i)).as("region 2 holds one register key: split at its middle").isNull();
            }
        }
        assertThat(admin.regionIds).as("the region with several keys is preferred").containsOnly(1);
        assertThat(splits.done()).isEqualTo(20);
        assertThat(splits.summary()).isEqualTo("20 asked: 20 done, 0 refused, 0 failed, 0 unknown");
    }

    @Test
    void when_noRegionHoldsTwoKeys_then_itSplitsAtTheMiddle() {
        FakeAdmin admin = new FakeAdmin();
        admin.done();
        SplitEvent splits = new SplitEvent(admin, List.of(b("x")), new Random(1));
        assertThat(splits.run()).contains("split region 2 [\"m\", +inf) (epoch 1, 1 register keys) at its middle: done");
        assertThat(admin.atKeys).containsExactly((byte[]) null);
    }

    @Test
    void when_splitsAreRefusedOrFail_then_eachOutcomeIsCountedByCode() {
        FakeAdmin admin = new FakeAdmin();
        admin.done();
        admin.fail(ErrorCode.BUSY, false);
        admin.fail(ErrorCode.STALE_EPOCH, false);
        admin.fail(ErrorCode.INVALID_ARGUMENT, false);
        admin.fail(ErrorCode.NO_LEADER, false);
        admin.fail(ErrorCode.UNAVAILABLE, true);   // never sent: not taken
        admin.fail(ErrorCode.UNAVAILABLE, false);  // lost after sending: may have split
        admin.fail(ErrorCode.TIMEOUT, false);
        SplitEvent splits = new SplitEvent(admin, KEYS, new Random(7));
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            lines.add(splits.run());
        }
        assertThat(lines.get(1)).contains(": refused (BUSY: made up)");
        assertThat(lines.get(7)).contains(": unknown (TIMEOUT: made up)");
        assertThat(splits.done()).isEqualTo(1);
        assertThat(splits.summary()).isEqualTo("8 asked: 1 done, 3 refused (BUSY 1, INVALID_ARGUMENT 1, STALE_EPOCH 1),"
                + " 2 failed (NO_LEADER 1, UNAVAILABLE 1), 2 unknown (TIMEOUT 1, UNAVAILABLE 1)");
    }

    @Test
    void when_theRegionListCannotBeHad_then_nothingIsAskedAndItCountsAsFailed() {
        FakeAdmin admin = new FakeAdmin();
        admin.regions = CompletableFuture.failedFuture(new KvException(ErrorCode.UNAVAILABLE, "down"));
        SplitEvent splits = new SplitEvent(admin, KEYS, new Random(1));
        assertThat(splits.run()).contains("no region list").contains("nothing asked");
        assertThat(admin.regionIds).isEmpty();
        assertThat(splits.summary()).isEqualTo("1 asked: 0 done, 0 refused, 1 failed (UNAVAILABLE 1), 0 unknown");
    }

    @Test
    void when_theNemesisTakesItsSplitTurn_then_itIsAnEventWithTheSplitsLine() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.done();
        admin.fail(ErrorCode.BUSY, false);
        SplitEvent splits = new SplitEvent(admin, KEYS, new Random(1));
        Nemesis nemesis = new Nemesis(null, null, List.of(), List.of(Nemesis.Fault.SPLIT), 500, new Random(1),
                new PrintStream(OutputStream.nullOutputStream()), System.nanoTime(), splits);
        assertThat(nemesis.cycle(0, false)).isEqualTo(Nemesis.Fault.SPLIT);
        assertThat(nemesis.cycle(1, true)).isEqualTo(Nemesis.Fault.SPLIT);
        assertThat(nemesis.counts()).containsEntry(Nemesis.Fault.SPLIT, 2);
        assertThat(nemesis.events.get(0).detail()).contains("split region 1", "done");
        assertThat(nemesis.events.get(1).detail()).contains("refused (BUSY");
        assertThat(nemesis.splits().summary()).startsWith("2 asked: 1 done, 1 refused (BUSY 1)");
    }

    @Test
    void when_splitsRunDuringFaults_then_eachFaultSplitsWhileInForce(@TempDir Path dir) throws Exception {
        Path clock = Files.writeString(dir.resolve("clock-1"), "+0\n");
        List<Path> clocks = List.of(clock, Files.writeString(dir.resolve("clock-2"), "+0\n"),
                Files.writeString(dir.resolve("clock-3"), "+0\n"));
        List<String> clocksAtSplit = new ArrayList<>();
        FakeAdmin admin = new FakeAdmin() {
            @Override
            public CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey) {
                try {
                    StringBuilder b = new StringBuilder();
                    for (Path c : clocks) {
                        b.append(Files.readString(c).strip()).append(' ');
                    }
                    clocksAtSplit.add(b.toString().strip());
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                return super.split(regionId, atKey);
            }
        };
        admin.done();
        admin.fail(ErrorCode.TIMEOUT, false);
        SplitEvent splits = new SplitEvent(admin, KEYS, new Random(1));
        Nemesis nemesis = new Nemesis(null, null, clocks, List.of(Nemesis.Fault.CLOCK), 400, new Random(1),
                new PrintStream(OutputStream.nullOutputStream()), System.nanoTime(), splits).splitDuringFaults(true);
        nemesis.cycle(0, false);
        nemesis.cycle(1, true);
        // each split ran while one node's clock was off, and both faults were healed after
        assertThat(clocksAtSplit).hasSize(2).allSatisfy(c -> assertThat(c).doesNotMatch("\\+0 \\+0 \\+0"));
        for (Path c : clocks) {
            assertThat(Files.readString(c)).isEqualTo("+0\n");
        }
        assertThat(nemesis.counts()).containsExactly(java.util.Map.entry(Nemesis.Fault.CLOCK, 2));
        assertThat(nemesis.events.get(0).detail()).contains("jumps", "; during it: split region 1", ": done");
        assertThat(nemesis.events.get(1).detail()).contains("; during it: split region 1", ": unknown (TIMEOUT");
        assertThat(splits.summary()).isEqualTo("2 asked: 1 done, 0 refused, 0 failed, 1 unknown (TIMEOUT 1)");
    }

    @Test
    void when_splitsDuringFaultsAreOff_then_aFaultSplitsNothing(@TempDir Path dir) throws Exception {
        List<Path> clocks = List.of(Files.writeString(dir.resolve("c1"), "+0\n"), Files.writeString(dir.resolve("c2"), "+0\n"),
                Files.writeString(dir.resolve("c3"), "+0\n"));
        FakeAdmin admin = new FakeAdmin();
        SplitEvent splits = new SplitEvent(admin, KEYS, new Random(1));
        Nemesis nemesis = new Nemesis(null, null, clocks, List.of(Nemesis.Fault.CLOCK), 200, new Random(1),
                new PrintStream(OutputStream.nullOutputStream()), System.nanoTime(), splits);
        nemesis.cycle(0, false);
        assertThat(admin.regionIds).isEmpty();
        assertThat(nemesis.events.get(0).detail()).doesNotContain("during it");
    }

    @Test
    void when_aWriteFailsOnAStaleRoute_then_itWasNotApplied() {
        for (ErrorCode c : List.of(ErrorCode.KEY_OUT_OF_RANGE, ErrorCode.STALE_EPOCH, ErrorCode.REGION_NOT_FOUND)) {
            KvException e = new KvException(c, "split under it");
            assertThat(RegisterWorkload.isRouteError(c)).isTrue();
            assertThat(RegisterWorkload.mayHaveApplied(e)).as(c.name()).isFalse();
        }
        assertThat(RegisterWorkload.mayHaveApplied(new KvException(ErrorCode.TIMEOUT, "t"))).isTrue();
        assertThat(RegisterWorkload.mayHaveApplied(new KvException(ErrorCode.UNAVAILABLE, "u", "", true))).isFalse();
        assertThat(RegisterWorkload.isRouteError(ErrorCode.TIMEOUT)).isFalse();
        assertThat(Arrays.asList(Nemesis.Fault.NAMES.split(", "))).contains("split");
    }
}
