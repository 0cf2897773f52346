package io.kvraft.benchmark.nemesis;

import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.client.admin.RegionInfo;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The nemesis's merge event against a made-up client: which two regions it merges, and how it counts the outcomes
 * (a merge refused, failed or rolled back is counted, never thrown).
 */
@Timeout(30)
class MergeEventTest {

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static RegionInfo region(int id, String start, String end) {
        return new RegionInfo(id, b(start), b(end), 1, List.of(), "", 0, 0, "", 0, false, 0, List.of());
    }

    /** Regions 1 [, c) with keys a, b; 2 [c, m) with c..f; 3 [m, ) with the single key x; listed out of order. */
    private static final List<RegionInfo> REGIONS = List.of(region(3, "m", ""), region(1, "", "c"), region(2, "c", "m"));
    private static final List<byte[]> KEYS = List.of(b("a"), b("b"), b("c"), b("d"), b("e"), b("f"), b("x"));

    /** A client whose merges answer, in turn, with what {@code answers} holds; it records what was asked. */
    private static class FakeAdmin implements MergeEvent.Admin {
        final Deque<Supplier<CompletableFuture<RegionInfo>>> answers = new ArrayDeque<>();
        final List<String> asked = new ArrayList<>();
        CompletableFuture<List<RegionInfo>> regions = CompletableFuture.completedFuture(REGIONS);

        @Override
        public CompletableFuture<List<RegionInfo>> regions() {
            return regions;
        }

        @Override
        public CompletableFuture<RegionInfo> merge(int leftId, int rightId) {
            asked.add(leftId + "<-" + rightId);
            return answers.removeFirst().get();
        }

        void done() {
            answers.add(() -> CompletableFuture.completedFuture(new RegionInfo(2, b("c"), b(""), 2, List.of(), "", 0, 0, "", 0, false,
                    0, List.of())));
        }

        void fail(ErrorCode code, String message, boolean unsent) {
            answers.add(() -> CompletableFuture.failedFuture(new KvException(code, message, "", unsent)));
        }
    }

    @Test
    void when_regionsAreAdjacent_then_theRightOneIsMergedIntoTheLeft_preferringTheSideWithFewestKeys() {
        FakeAdmin admin = new FakeAdmin();
        MergeEvent merges = new MergeEvent(admin, KEYS, new Random(3));
        for (int i = 0; i < 10; i++) {
            admin.done();
            assertThat(merges.run()).isEqualTo("merge region 3 [\"m\", +inf) (epoch 1, 1 register keys) into region 2"
                    + " [\"c\", \"m\") (epoch 1, 4 register keys): done, now region 2 [\"c\", +inf), epoch 2");
        }
        // 1 and 2 are adjacent too, but their smaller side holds 2 register keys; 3 holds 1
        assertThat(admin.asked).hasSize(10).containsOnly("2<-3");
        assertThat(merges.done()).isEqualTo(10);
        assertThat(merges.summary()).isEqualTo("10 asked: 10 done, 0 refused, 0 failed, 0 rolled back, 0 unknown");
    }

    @Test
    void when_pairsHoldAsFewKeys_then_eitherIsMerged_butNeverTheLastRegionIntoTheFirst() {
        FakeAdmin admin = new FakeAdmin();
        MergeEvent merges = new MergeEvent(admin, List.of(b("a"), b("d"), b("x")), new Random(5));
        for (int i = 0; i < 30; i++) {
            admin.done();
            merges.run();
        }
        // the last region ends at the empty key (+inf) and the first starts at it: they are not adjacent
        assertThat(admin.asked).containsOnly("1<-2", "2<-3").contains("1<-2", "2<-3");
    }

    @Test
    void when_mergesAreRefusedFailOrRollBack_then_eachOutcomeIsCountedByCode() {
        FakeAdmin admin = new FakeAdmin();
        admin.done();
        admin.fail(ErrorCode.BUSY, "region 3 is in a merge already", false);
        admin.fail(ErrorCode.STALE_EPOCH, "region 3 changed before the merge applied", false);
        admin.fail(ErrorCode.INVALID_ARGUMENT, "not adjacent", false);
        admin.fail(ErrorCode.REGION_NOT_FOUND, "no region 3", false);
        admin.fail(ErrorCode.NOT_LEADER, "made up", false);
        admin.fail(ErrorCode.NO_LEADER, "made up", false);
        admin.fail(ErrorCode.SHUTTING_DOWN, "made up", false);
        admin.fail(ErrorCode.UNAVAILABLE, "connection refused", true);   // never sent: not taken
        admin.fail(ErrorCode.UNAVAILABLE, "merge of region 3 into region 2 rolled back: the replica of region 3 on"
                + " 127.0.0.1:7003 did not hold its final data within merge.timeoutMs 30000 ms", false);
        admin.fail(ErrorCode.UNAVAILABLE, "merge of region 3 into region 2 not finished (the commit was not taken:"
                + " made up) and this node no longer leads region 2; its new leader finishes or rolls it back", false);
        // whatever its why says, a merge not finished may still be finished
        admin.fail(ErrorCode.UNAVAILABLE, "merge of region 3 into region 2 not finished (the commit was not taken:"
                + " an earlier one rolled back); its leader finishes or rolls it back within merge.timeoutMs", false);
        admin.fail(ErrorCode.UNAVAILABLE, "connection lost", false);  // lost after sending: may have merged
        admin.fail(ErrorCode.TIMEOUT, "made up", false);
        MergeEvent merges = new MergeEvent(admin, KEYS, new Random(7));
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < 14; i++) {
            lines.add(merges.run());
        }
        assertThat(lines.get(1)).endsWith(": refused (BUSY: region 3 is in a merge already)");
        assertThat(lines.get(9)).endsWith(": rolled back (UNAVAILABLE: merge of region 3 into region 2 rolled back:"
                + " the replica of region 3 on 127.0.0.1:7003 did not hold its final data within merge.timeoutMs 30000 ms)");
        assertThat(lines.get(10)).contains(": unknown (UNAVAILABLE: merge of region 3 into region 2 not finished");
        assertThat(lines.get(11)).contains(": unknown (UNAVAILABLE: merge of region 3 into region 2 not finished");
        assertThat(lines.get(13)).endsWith(": unknown (TIMEOUT: made up)");
        assertThat(merges.done()).isEqualTo(1);
        assertThat(merges.attempts).extracting(MergeEvent.Attempt::outcome).containsExactly(MergeEvent.Outcome.DONE,
                MergeEvent.Outcome.REFUSED, MergeEvent.Outcome.REFUSED, MergeEvent.Outcome.REFUSED,
                MergeEvent.Outcome.REFUSED, MergeEvent.Outcome.FAILED, MergeEvent.Outcome.FAILED,
                MergeEvent.Outcome.FAILED, MergeEvent.Outcome.FAILED, MergeEvent.Outcome.ROLLED_BACK,
                MergeEvent.Outcome.UNKNOWN, MergeEvent.Outcome.UNKNOWN, MergeEvent.Outcome.UNKNOWN,
                MergeEvent.Outcome.UNKNOWN);
        assertThat(merges.summary()).isEqualTo("14 asked: 1 done,"
                + " 4 refused (BUSY 1, INVALID_ARGUMENT 1, REGION_NOT_FOUND 1, STALE_EPOCH 1),"
                + " 4 failed (NOT_LEADER 1, NO_LEADER 1, SHUTTING_DOWN 1, UNAVAILABLE 1), 1 rolled back (UNAVAILABLE 1),"
                + " 4 unknown (TIMEOUT 1, UNAVAILABLE 3)");
    }

    @Test
    void when_thereIsOneRegion_then_nothingIsAskedNorCounted() {
        FakeAdmin admin = new FakeAdmin();
        admin.regions = CompletableFuture.completedFuture(List.of(region(1, "", "")));
        MergeEvent merges = new MergeEvent(admin, KEYS, new Random(1));
        assertThat(merges.run()).isEqualTo("merge: 1 region in the list, nothing to merge, nothing asked");
        assertThat(admin.asked).isEmpty();
        assertThat(merges.summary()).isEqualTo("0 asked: 0 done, 0 refused, 0 failed, 0 rolled back, 0 unknown");
    }

    @Test
    void when_theRegionListCannotBeHad_then_nothingIsAskedAndItCountsAsFailed() {
        FakeAdmin admin = new FakeAdmin();
        admin.regions = CompletableFuture.failedFuture(new KvException(ErrorCode.UNAVAILABLE, "down"));
        MergeEvent merges = new MergeEvent(admin, KEYS, new Random(1));
        assertThat(merges.run()).contains("no region list").contains("nothing asked");
        assertThat(admin.asked).isEmpty();
        assertThat(merges.summary())
                .isEqualTo("1 asked: 0 done, 0 refused, 1 failed (UNAVAILABLE 1), 0 rolled back, 0 unknown");
    }

    @Test
    void when_theNemesisTakesItsMergeTurn_then_itIsAnEventAtNoNodeWithTheMergeLine() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.done();
        admin.fail(ErrorCode.BUSY, "made up", false);
        MergeEvent merges = new MergeEvent(admin, KEYS, new Random(1));
        Nemesis nemesis = new Nemesis(null, null, List.of(), List.of(Nemesis.Fault.MERGE), 500, new Random(1),
                new PrintStream(OutputStream.nullOutputStream()), System.nanoTime(), null, merges);
        assertThat(nemesis.cycle(0, false)).isEqualTo(Nemesis.Fault.MERGE);
        assertThat(nemesis.cycle(1, true)).isEqualTo(Nemesis.Fault.MERGE);
        assertThat(nemesis.counts()).containsExactly(Map.entry(Nemesis.Fault.MERGE, 2));
        assertThat(nemesis.events).extracting(Nemesis.Event::node).containsExactly(-1, -1);
        assertThat(nemesis.events.get(0).detail()).contains("merge region 3", "into region 2", ": done");
        assertThat(nemesis.events.get(1).detail()).contains(": refused (BUSY");
        assertThat(nemesis.merges().summary()).startsWith("2 asked: 1 done, 1 refused (BUSY 1)");
        assertThat(Nemesis.Fault.parse(" merge ")).isEqualTo(Nemesis.Fault.MERGE);
        assertThat(Nemesis.Fault.NAMES).contains("split, merge, ");
    }

    @Test
    void when_mergeEventsAreWantedWithoutAMergeEvent_then_theNemesisRefusesToStart() {
        assertThatThrownBy(() -> new Nemesis(null, null, List.of(), List.of(Nemesis.Fault.MERGE), 500, new Random(1),
                new PrintStream(OutputStream.nullOutputStream()), 0, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("MergeEvent");
    }

    @Test
    void when_theRunMerged_then_theReportHasAMergesLine_withTheRegionCountOnce() {
        FakeAdmin admin = new FakeAdmin();
        admin.done();
        MergeEvent merges = new MergeEvent(admin, KEYS, new Random(1));
        merges.run();
        RegionMapCheck.Result map = new RegionMapCheck.Result(List.of(), 3, 23, 0.1);
        String mergesOnly = report(new Nemesis(null, null, List.of(), List.of(Nemesis.Fault.MERGE), 500, new Random(1),
                new PrintStream(OutputStream.nullOutputStream()), 0, null, merges), map).text();
        assertThat(mergesOnly).contains("merges          1 asked: 1 done, 0 refused, 0 failed, 0 rolled back, 0 unknown;"
                + " regions 24 at the start, 23 at the end").doesNotContain("splits   ");

        SplitEvent splits = new SplitEvent(new SplitEvent.Admin() {
            @Override
            public CompletableFuture<List<RegionInfo>> regions() {
                return CompletableFuture.completedFuture(REGIONS);
            }

            @Override
            public CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey) {
                return CompletableFuture.failedFuture(new KvException(ErrorCode.BUSY, "made up"));
            }
        }, KEYS, new Random(1));
        splits.run();
        String both = report(new Nemesis(null, null, List.of(), List.of(Nemesis.Fault.SPLIT, Nemesis.Fault.MERGE), 500,
                new Random(1), new PrintStream(OutputStream.nullOutputStream()), 0, splits, merges), map).text();
        assertThat(both).contains("splits          1 asked: 0 done, 1 refused (BUSY 1), 0 failed, 0 unknown;"
                        + " regions 24 at the start, 23 at the end\n"
                        + "merges          1 asked: 1 done, 0 refused, 0 failed, 0 rolled back, 0 unknown\n");
    }

    private static Report report(Nemesis nemesis, RegionMapCheck.Result map) {
        RegisterWorkload load = new RegisterWorkload(null, List.of(new byte[]{1}), List.of(), 1, 1, 1, 0);
        return new Report("60s", "memory", List.of(Nemesis.Fault.MERGE), 20, load, nemesis,
                HistoryCheck.check(new ArrayList<>(), RegisterCheckerTest.NO_BUDGET), new long[]{0, 0, 0}, 0,
                new Recovery(1, 1, true, 60), Map.of(), new Histogram(3), new Histogram(3), 0, 24, map);
    }
}
