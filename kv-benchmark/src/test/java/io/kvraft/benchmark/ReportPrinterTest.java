package io.kvraft.benchmark;

import io.kvraft.common.ErrorCode;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class ReportPrinterTest {

    private static String capture(java.util.function.Consumer<PrintStream> body) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        body.accept(out);
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void dropwizardBlockHasTheReferenceFormat() {
        // 1000 puts of 1..1000 us, 100 gets of 5000 us, over 10 s
        long[] gets = new long[100];
        java.util.Arrays.fill(gets, 5000);
        RunResult r = TestData.result("c1", TestData.range(1, 1000), gets, Map.of(), 10);
        String text = capture(out -> ReportPrinter.printDropwizard(out, r));

        assertThat(text).contains("-- Timers ----------------------------------------------------------------------");
        assertThat(text.split("-- Timers", -1)).as("one block").hasSize(2);
        List<String> lines = text.lines().toList();
        int total = lines.indexOf("benchmark_timer");
        int get = lines.indexOf("get_benchmark_timer");
        int put = lines.indexOf("put_benchmark_timer");
        assertThat(total).isPositive();
        assertThat(get).isGreaterThan(total);
        assertThat(put).isGreaterThan(get);
        String[] fields = {"count = ", "mean rate = ", "1-minute rate = ", "5-minute rate = ", "15-minute rate = ",
                "min = ", "max = ", "mean = ", "stddev = ", "median = ", "75% <= ", "95% <= ", "98% <= ", "99% <= ",
                "99.9% <= "};
        for (int start : new int[]{total, get, put}) {
            for (int i = 0; i < fields.length; i++) {
                assertThat(lines.get(start + 1 + i).trim()).startsWith(fields[i]);
            }
        }
        assertThat(lines.get(total + 1)).isEqualTo("             count = 1100");
        assertThat(lines.get(total + 2)).isEqualTo("         mean rate = 110.00 calls/second");
        assertThat(lines.get(get + 1)).isEqualTo("             count = 100");
        assertThat(lines.get(get + 6)).isEqualTo("               min = 5.00 milliseconds");
        assertThat(lines.get(put + 1)).isEqualTo("             count = 1000");
        assertThat(lines.get(put + 2)).isEqualTo("         mean rate = 100.00 calls/second");
        assertThat(lines.get(put + 6)).isEqualTo("               min = 0.00 milliseconds");
        assertThat(lines.get(put + 7)).isEqualTo("               max = 1.00 milliseconds");
        assertThat(lines.get(put + 10)).isEqualTo("            median = 0.50 milliseconds");
        assertThat(lines.get(put + 14)).isEqualTo("              99% <= 0.99 milliseconds");
        // replayed 1-minute rate: 100/s for 10 s starts at the first 5-second tick's rate
        assertThat(text).contains("1-minute rate = 100.00 calls/second");
    }

    @Test
    void hdrTableHasPercentilesCountsAndRates() {
        RunResult r = TestData.result("c1", TestData.range(1, 1000), TestData.range(2001, 3000), Map.of(), 4);
        String text = capture(out -> ReportPrinter.printLatencyTable(out, List.of(
                new ReportPrinter.Row("put", r.putHistogram(), r.putRate()),
                new ReportPrinter.Row("get", r.getHistogram(), r.getRate()),
                new ReportPrinter.Row("total", r.totalHistogram(), r.opsRate()))));
        List<String> lines = text.lines().toList();
        assertThat(lines.get(0)).startsWith("-- HdrHistogram latency (ms) --");
        assertThat(lines.get(1).split("\\s+")).containsExactly(
                "op", "p50", "p90", "p99", "p99.9", "p99.99", "max", "count", "ops/s");
        assertThat(lines.get(2).split("\\s+")).containsExactly(
                "put", "0.500", "0.900", "0.990", "0.999", "1.000", "1.000", "1000", "250.00");
        assertThat(lines.get(3).split("\\s+")).containsExactly(
                "get", "2.501", "2.901", "2.991", "2.999", "3.001", "3.001", "1000", "250.00");
        assertThat(lines.get(4).split("\\s+")[0]).isEqualTo("total");
        assertThat(lines.get(4).split("\\s+")[7]).isEqualTo("2000");
        assertThat(lines.get(4).split("\\s+")[8]).isEqualTo("500.00");
    }

    @Test
    void errorsAreListedByCode() {
        RunResult r = TestData.result("c1", TestData.range(1, 997), new long[0],
                Map.of(ErrorCode.TIMEOUT, 2, ErrorCode.BUSY, 1), 1);
        String text = capture(out -> ReportPrinter.printErrors(out, r.errors(), r.ops() + r.errorCount(), 0.001));
        assertThat(text).contains("-- Errors by code --");
        assertThat(text).containsPattern("BUSY\\s+1\\n");
        assertThat(text).containsPattern("TIMEOUT\\s+2\\n");
        assertThat(text).containsPattern("total\\s+3\\s+error rate 0.003000 of 1000 operations \\(limit 0.001\\)");
        String none = capture(out -> ReportPrinter.printErrors(out, Map.of(), 10, 0.001));
        assertThat(none).contains("none");
    }

    @Test
    void fullReportHasAllSectionsInOrder() {
        RunResult r = TestData.result("c1", TestData.range(1, 100), TestData.range(1, 10), Map.of(ErrorCode.BUSY, 1), 2);
        String text = capture(out -> ReportPrinter.printRunReport(out, r));
        assertThat(text.indexOf("-- Timers")).isLessThan(text.indexOf("-- HdrHistogram"));
        assertThat(text.indexOf("-- HdrHistogram")).isLessThan(text.indexOf("-- Errors by code"));
        assertThat(text).startsWith("kv-benchmark: threads=8");
    }

    @Test
    void operationsTableHasARowPerTypeThatRanWithHitsMissesAndKeys() {
        // 10 s: 200 puts, 100 gets (50 hits), 40 scans of 25 keys each
        RunResult r = TestData.result("ops", TestData.range(1, 200), TestData.range(1, 100), TestData.range(1000, 1039),
                25, Map.of(), 10);
        String text = capture(out -> ReportPrinter.printRunReport(out, r));
        List<String> lines = text.lines().toList();
        int head = lines.indexOf(ReportPrinter.header("Operations by type (ms)"));
        assertThat(head).as(text).isPositive();
        assertThat(lines.get(head + 1).split("\\s+")).containsExactly("op", "count", "ops/s", "p50", "p99", "p99.9",
                "errors", "hits", "misses", "keys/s", "keys/scan");
        assertThat(lines.get(head + 2).split("\\s+")).startsWith("put", "200", "20.00").endsWith("---", "---", "---", "---");
        assertThat(lines.get(head + 3).split("\\s+")).startsWith("get", "100", "10.00").endsWith("50", "50", "---", "---");
        assertThat(lines.get(head + 4).split("\\s+")).startsWith("scan", "40", "4.00").endsWith("---", "---", "100.00", "25.00");
        assertThat(lines.get(head + 5).split("\\s+")).startsWith("total", "340", "34.00");
        // the reference block keeps its three timers and gains one for scans; the latency table a scan row
        assertThat(lines).contains("benchmark_timer", "get_benchmark_timer", "put_benchmark_timer", "scan_benchmark_timer");
        assertThat(text).containsPattern("(?m)^scan\\s+1\\.0\\d\\d\\s");
    }

    @Test
    void operationsTableLeavesOutTypesThatDidNotRun() {
        RunResult r = TestData.result("noscan", TestData.range(1, 200), TestData.range(1, 100), Map.of(), 10);
        String text = capture(out -> ReportPrinter.printRunReport(out, r));
        assertThat(text).doesNotContainPattern("(?m)^scan\\s").doesNotContain("scan_benchmark_timer");
        assertThat(text).containsPattern("(?m)^get\\s+100\\s");
    }

    /** An adaptive warm-up runs before the measured load: its operations are added to the result, and the report says so. */
    @Test
    void runBlockCountsTheAdaptiveWarmupsOperations() {
        RunResult r = TestData.result("warm", TestData.range(1, 200), TestData.range(1, 100), Map.of(), 10);
        long before = r.warmupOps();
        RunResult warmed = r.plusWarmupOps(1_234_567);
        assertThat(warmed.warmupOps()).isEqualTo(before + 1_234_567);
        assertThat(warmed.ops()).isEqualTo(r.ops());
        assertThat(capture(out -> ReportPrinter.printRunReport(out, warmed)))
                .contains(String.format(java.util.Locale.ROOT, "%,d warm-up operations not counted", before + 1_234_567));
    }
}
