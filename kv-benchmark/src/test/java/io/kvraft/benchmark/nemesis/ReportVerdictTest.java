package io.kvraft.benchmark.nemesis;

import io.kvraft.benchmark.BenchmarkMain;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.io.PrintStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The nemesis verdict ({@link Report#exitCode()}, what {@code nemesis} exits with) on injected outcomes:
 * a clean run passes, and each kind of bad outcome alone fails it.
 */
class ReportVerdictTest {

    private static final Recovery RECOVERED = new Recovery(1.5, 2.0, true, 60);
    private static final Recovery NOT_RECOVERED = new Recovery(60, 60, false, 60);

    /** A linearizable history of 20 keys from a simulated atomic register. */
    private static List<Op> cleanHistory() {
        List<Op> h = new ArrayList<>();
        for (int k = 0; k < 20; k++) {
            for (Op o : RegisterCheckerTest.simulate(new Random(k), 100, 4, true)) {
                h.add(new Op(k * 1000L + o.id(), o.kind(), "key-" + k, o.value(), o.expect(), o.invokeNs(),
                        o.completeNs(), o.outcome(), o.casApplied(), o.partOf()));
            }
        }
        return h;
    }

    private static HistoryCheck.Summary check(List<Op> history, long budgetNanos) {
        return HistoryCheck.check(history, budgetNanos);
    }

    private static HistoryCheck.Summary clean() {
        return check(cleanHistory(), RegisterCheckerTest.NO_BUDGET);
    }

    private static final RegionMapCheck.Result SAME_MAPS = new RegionMapCheck.Result(List.of(), 3, 24, 0.1);

    private static Report report(HistoryCheck.Summary check, long[] fresh, int unreadKeys, Recovery rec) {
        return report(check, fresh, unreadKeys, rec, SAME_MAPS);
    }

    private static Report report(HistoryCheck.Summary check, long[] fresh, int unreadKeys, Recovery rec,
                                 RegionMapCheck.Result regionMap) {
        return report(check, fresh, unreadKeys, rec, regionMap,
                new RegisterWorkload(null, List.of(new byte[]{1}), List.of(), 1, 1, 1, 0));
    }

    private static Report report(HistoryCheck.Summary check, long[] fresh, int unreadKeys, Recovery rec,
                                 RegionMapCheck.Result regionMap, RegisterWorkload load) {
        List<Nemesis.Fault> kinds = List.of(Nemesis.Fault.KILL, Nemesis.Fault.PAUSE);
        Nemesis nemesis = new Nemesis(null, null, List.of(), kinds, 4000, new Random(1),
                new PrintStream(OutputStream.nullOutputStream()), 0);
        return new Report("60s", "memory", kinds, 20, load, nemesis, check, fresh, unreadKeys, rec,
                Map.of(Nemesis.Fault.KILL, List.of(2.0)), new Histogram(3), new Histogram(3), 0, 24, regionMap);
    }

    @Test
    void when_nothingWentWrong_then_pass_and_exit0() {
        Report r = report(clean(), new long[]{500, 0, 0}, 0, RECOVERED);
        assertThat(r.exitCode()).isEqualTo(BenchmarkMain.EXIT_OK);
        assertThat(r.text()).contains("0 violations, 0 undecided", "3 nodes agree on 24 regions", "result          PASS");
    }

    @Test
    void when_theNodesRegionMapsDiffer_then_theRunFails_namingTheNode() {
        RegionMapCheck.Result differs = new RegionMapCheck.Result(
                List.of("node 127.0.0.1:7003 differs from node 127.0.0.1:7001: lacks region 65537"), 3, 25, 60);
        Report r = report(clean(), new long[]{500, 0, 0}, 0, RECOVERED, differs);
        assertThat(r.exitCode()).isEqualTo(BenchmarkMain.EXIT_FAILED);
        assertThat(r.text()).contains("region map      DIFFERS after 60 s: node 127.0.0.1:7003 differs", "result          FAIL");
    }

    @Test
    void when_anOperationFailedOnAStaleRoute_then_itIsReportedWithoutFailingTheRun() {
        RegisterWorkload load = new RegisterWorkload(null, List.of(new byte[]{1}), List.of(), 1, 1, 1, 0);
        load.routeErrors.set(2);
        load.routeErrorSamples.add("write invoked at 12.3 s: KEY_OUT_OF_RANGE: key is outside region 7");
        Report r = report(clean(), new long[]{500, 0, 0}, 0, RECOVERED, SAME_MAPS, load);
        assertThat(r.text()).contains("2 failed on a stale route",
                "  stale route   write invoked at 12.3 s: KEY_OUT_OF_RANGE: key is outside region 7", "result          PASS");
        assertThat(r.exitCode()).isEqualTo(BenchmarkMain.EXIT_OK);
    }

    @Test
    void when_aReadSawAnOldValue_then_theViolationFailsTheRun() {
        List<Op> h = cleanHistory();
        h.add(Op.write(1_000_000, "stale", 777, 0, 10));
        h.add(Op.read(1_000_001, "stale", 0, 20, 30)); // the acknowledged write is gone
        Report r = report(check(h, RegisterCheckerTest.NO_BUDGET), new long[]{500, 0, 0}, 0, RECOVERED);
        assertThat(r.exitCode()).isEqualTo(BenchmarkMain.EXIT_FAILED);
        assertThat(r.text()).contains("1 violations", "VIOLATION on key stale", "result          FAIL");
    }

    @Test
    void when_theCheckerRanOutOfBudget_then_theUndecidedKeysFailTheRun() {
        Report r = report(check(cleanHistory(), 0), new long[]{500, 0, 0}, 0, RECOVERED);
        assertThat(r.exitCode()).isEqualTo(BenchmarkMain.EXIT_FAILED);
        assertThat(r.text()).containsPattern("0 violations, [1-9][0-9]* undecided")
                .contains("undecided keys: [key-", "result          FAIL");
    }

    @Test
    void when_anAcknowledgedWriteIsLost_then_theRunFails() {
        Report r = report(clean(), new long[]{500, 1, 0}, 0, RECOVERED);
        assertThat(r.exitCode()).isEqualTo(BenchmarkMain.EXIT_FAILED);
        assertThat(r.text()).contains("500 fresh-key puts read back: 1 lost or wrong", "result          FAIL");
    }

    @Test
    void when_anAcknowledgedWriteCannotBeReadBack_then_theRunFails() {
        Report r = report(clean(), new long[]{500, 0, 3}, 0, RECOVERED);
        assertThat(r.exitCode()).isEqualTo(BenchmarkMain.EXIT_FAILED);
        assertThat(r.text()).contains("3 unreadable", "result          FAIL");
    }

    @Test
    void when_aRegisterKeyIsUnreadAtTheEnd_then_theRunFails() {
        Report r = report(clean(), new long[]{500, 0, 0}, 2, RECOVERED);
        assertThat(r.exitCode()).isEqualTo(BenchmarkMain.EXIT_FAILED);
        assertThat(r.text()).contains("2 unread", "result          FAIL");
    }

    @Test
    void when_theClusterDidNotRecoverAfterTheLastHeal_then_theRunFails() {
        Report r = report(clean(), new long[]{500, 0, 0}, 0, NOT_RECOVERED);
        assertThat(r.exitCode()).isEqualTo(BenchmarkMain.EXIT_FAILED);
        assertThat(r.text()).contains("NOT within 60 s", "result          FAIL");
    }
}
