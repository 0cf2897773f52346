package io.kvraft.benchmark;

import io.kvraft.common.ErrorCode;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class MergeTest {

    @TempDir
    Path tmp;

    @Test
    void mergeAddsHistogramsInsteadOfAveragingPercentiles() {
        SplittableRandom rnd = new SplittableRandom(42);
        // client a: fast (100..1000 us); client b: slow tail (mostly 1..2 ms, 5% at 50..80 ms)
        long[] aPuts = new long[20_000];
        long[] aGets = new long[2_000];
        long[] bPuts = new long[10_000];
        long[] bGets = new long[1_000];
        for (int i = 0; i < aPuts.length; i++) {
            aPuts[i] = 100 + rnd.nextInt(900);
        }
        for (int i = 0; i < aGets.length; i++) {
            aGets[i] = 50 + rnd.nextInt(200);
        }
        for (int i = 0; i < bPuts.length; i++) {
            bPuts[i] = i % 20 == 0 ? 50_000 + rnd.nextInt(30_000) : 1000 + rnd.nextInt(1000);
        }
        for (int i = 0; i < bGets.length; i++) {
            bGets[i] = 300 + rnd.nextInt(300);
        }
        RunResult a = TestData.result("client-a", aPuts, aGets, Map.of(ErrorCode.TIMEOUT, 3), 10);
        RunResult b = TestData.result("client-b", bPuts, bGets, Map.of(ErrorCode.TIMEOUT, 1, ErrorCode.BUSY, 2), 5);
        Path dirA = tmp.resolve("a");
        Path dirB = tmp.resolve("b");
        ResultFiles.write(dirA, a);
        ResultFiles.write(dirB, b);
        assertThat(dirA.resolve("result-client-a.json")).exists();
        assertThat(dirA.resolve("histogram-client-a.hlog")).exists();

        Merge.Merged m = Merge.merge(List.of(dirA, dirB));

        Histogram raw = Results.newHistogram();
        for (long[] set : new long[][]{aPuts, aGets, bPuts, bGets}) {
            for (long v : set) {
                raw.recordValue(v);
            }
        }
        ResultJson r = m.result();
        assertThat(r.clients()).isEqualTo(2);
        assertThat(r.op("total").count()).isEqualTo(33_000);
        assertThat(r.op("put").count()).isEqualTo(30_000);
        assertThat(r.op("get").count()).isEqualTo(3_000);
        assertThat(m.total().getTotalCount()).isEqualTo(raw.getTotalCount());
        for (double p : new double[]{50, 90, 99, 99.9, 99.99, 100}) {
            assertThat(m.total().getValueAtPercentile(p)).as("p%s", p).isEqualTo(raw.getValueAtPercentile(p));
        }
        assertThat(r.op("total").p99Ms()).isEqualTo(raw.getValueAtPercentile(99) / 1000.0);
        double averaged = (ResultFiles.toJson(a).op("total").p99Ms() + ResultFiles.toJson(b).op("total").p99Ms()) / 2;
        assertThat(r.op("total").p99Ms()).isNotCloseTo(averaged, within(1.0));
        // rates are summed: a 2200 ops / 10 s, b 11000 ops / 5 s
        assertThat(r.op("total").opsPerSec()).isCloseTo(2200 + 2200, within(0.01));
        assertThat(r.op("put").opsPerSec()).isCloseTo(2000 + 2000, within(0.01));
        assertThat(r.errors()).containsExactlyInAnyOrderEntriesOf(Map.of("TIMEOUT", 4L, "BUSY", 2L));
        assertThat(r.errorCount()).isEqualTo(6);
    }

    @Test
    void mergeCommandPrintsTableErrorsAndClientsAndWritesJson() throws Exception {
        ResultFiles.write(tmp.resolve("x"), TestData.result("x", TestData.range(1, 500), TestData.range(1, 50), Map.of(), 2));
        ResultFiles.write(tmp.resolve("y"), TestData.result("y", TestData.range(1, 500), TestData.range(1, 50), Map.of(), 2));
        ResultFiles.write(tmp.resolve("y"), TestData.result("z", TestData.range(1, 500), TestData.range(1, 50), Map.of(), 2));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = BenchmarkMain.execute(new String[]{"merge", tmp.resolve("x").toString(), tmp.resolve("y").toString(),
                        tmp.resolve("x").toString(), "--out", tmp.resolve("m").toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8),
                c -> {
                    throw new AssertionError("merge needs no client");
                });
        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(code).as(err.toString(StandardCharsets.UTF_8)).isZero();
        assertThat(text).contains("-- HdrHistogram latency (ms)").contains("-- Errors by code").contains("clients: 3");
        assertThat(text).containsPattern("total\\s+[0-9.]+\\s+[0-9.]+\\s+[0-9.]+\\s+[0-9.]+\\s+[0-9.]+\\s+[0-9.]+\\s+1650\\s");
        ResultJson merged = ResultFiles.readJson(tmp.resolve("m").resolve(Merge.MERGED_JSON));
        assertThat(merged.clients()).isEqualTo(3);
        assertThat(merged.clientIds()).containsExactlyInAnyOrder("x", "y", "z");
        assertThat(merged.op("total").count()).isEqualTo(1650);
    }

    @Test
    void resultJsonRoundTrips() {
        RunResult r = TestData.result("round", TestData.range(1, 100), TestData.range(1, 10), Map.of(ErrorCode.BUSY, 1), 1);
        Path dir = tmp.resolve("rt");
        Path json = ResultFiles.write(dir, r);
        ResultJson back = ResultFiles.readJson(json);
        assertThat(back).isEqualTo(ResultFiles.toJson(r));
        assertThat(back.config().clientId()).isEqualTo("round");
        assertThat(back.op("put").count()).isEqualTo(100);
        assertThat(back.op("put").errors()).isEqualTo(1);
        Map<String, Histogram> tags = ResultFiles.readHlog(ResultFiles.hlogFile(dir, "round"));
        assertThat(tags.keySet()).containsExactly("get", "put");
        assertThat(tags.get("put").getTotalCount()).isEqualTo(100);
    }

    @Test
    void mergeRefusesDirectoriesWithoutResultsOrWithoutHlogs() throws Exception {
        Files.createDirectories(tmp.resolve("empty"));
        assertThatThrownBy(() -> Merge.merge(List.of(tmp.resolve("empty"))))
                .isInstanceOf(UsageException.class).hasMessageContaining("no result-*.json");
        Path d = tmp.resolve("nohlog");
        ResultFiles.write(d, TestData.result("n", TestData.range(1, 10), new long[0], Map.of(), 1));
        Files.delete(ResultFiles.hlogFile(d, "n"));
        assertThatThrownBy(() -> Merge.merge(List.of(d)))
                .isInstanceOf(UsageException.class).hasMessageContaining("histogram-n.hlog");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = BenchmarkMain.execute(new String[]{"merge", tmp.resolve("missing").toString()},
                new PrintStream(new ByteArrayOutputStream()), new PrintStream(err, true, StandardCharsets.UTF_8), c -> null);
        assertThat(code).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8).strip()).doesNotContain("\n").contains("no such directory");
    }

    @Test
    void perTypeFiguresSurviveTheJsonRoundTripAndMergeAddsThemUp() throws Exception {
        // a: 10 s, 100 gets (50 hits), 40 scans of 25 keys; b: 5 s, 20 gets (10 hits), 30 scans of 10 keys
        RunResult a = TestData.result("a", TestData.range(1, 50), TestData.range(1, 100), TestData.range(500, 539), 25,
                Map.of(), 10);
        RunResult b = TestData.result("b", TestData.range(1, 50), TestData.range(1, 20), TestData.range(2000, 2029), 10,
                Map.of(), 5);
        Path json = ResultFiles.write(tmp.resolve("a"), a);
        ResultFiles.write(tmp.resolve("b"), b);

        ResultJson back = ResultFiles.readJson(json);
        assertThat(back).isEqualTo(ResultFiles.toJson(a));
        assertThat(back.op("get").hits()).isEqualTo(50);
        assertThat(back.op("get").misses()).isEqualTo(50);
        assertThat(back.op("scan").count()).isEqualTo(40);
        assertThat(back.op("scan").keys()).isEqualTo(1000);
        assertThat(back.op("scan").keysPerSec()).isEqualTo(100.0);
        assertThat(back.op("scan").keysPerScan()).isEqualTo(25.0);
        assertThat(back.op("put").hits()).isNull();
        assertThat(back.op("put").keys()).isNull();
        assertThat(Files.readString(json)).doesNotContain("\"keys\" : null").contains("\"keysPerScan\" : 25.0");
        assertThat(ResultFiles.readHlog(ResultFiles.hlogFile(tmp.resolve("a"), "a")).get("scan").getTotalCount())
                .isEqualTo(40);

        Merge.Merged m = Merge.merge(List.of(tmp.resolve("a"), tmp.resolve("b")));
        ResultJson r = m.result();
        assertThat(r.op("get").hits()).isEqualTo(60);
        assertThat(r.op("get").misses()).isEqualTo(60);
        assertThat(r.op("scan").count()).isEqualTo(70);
        assertThat(r.op("scan").keys()).isEqualTo(1000 + 300);
        assertThat(r.op("scan").keysPerSec()).isCloseTo(100 + 60, within(0.01));
        assertThat(r.op("scan").keysPerScan()).isCloseTo(1300 / 70.0, within(0.01));
        assertThat(r.op("scan").opsPerSec()).isCloseTo(4 + 6, within(0.01));
        assertThat(m.scan().getMaxValue()).isEqualTo(m.scan().highestEquivalentValue(2029));
        assertThat(r.op("total").count()).isEqualTo(100 + 120 + 70);

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Merge.print(new PrintStream(out, true, StandardCharsets.UTF_8), m, 0.001);
        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(text).contains("-- Operations by type (ms)");
        assertThat(text).containsPattern("(?m)^get\\s+120\\s.*\\s60\\s+60\\s+---\\s+---$");
        assertThat(text).containsPattern("(?m)^scan\\s+70\\s.*\\s160\\.00\\s+18\\.57$");
    }

    @Test
    void resultsWithoutScansOrHitsStillMerge() {
        // files written before scans existed have neither a scan entry nor hits: merge keeps them absent
        RunResult a = TestData.result("old", TestData.range(1, 10), TestData.range(1, 10), Map.of(), 1);
        ResultJson json = ResultFiles.toJson(a);
        java.util.Map<String, ResultJson.OpStats> ops = new java.util.LinkedHashMap<>(json.ops());
        ResultJson.OpStats g = ops.get("get");
        ops.put("get", ResultJson.OpStats.of(a.getHistogram(), g.errors(), g.opsPerSec()));
        ResultJson old = new ResultJson(json.clientId(), 1, json.clientIds(), json.startTime(), json.endTime(),
                json.durationSeconds(), json.config(), ops, json.errors(), json.errorCount(), json.errorRate(),
                json.warmupOps(), json.unfinished(), json.unsent(), null);
        Merge.Merged m = Merge.merge(List.of(new ResultFiles.ClientData(tmp, old, a.putHistogram(), a.getHistogram(),
                Results.newHistogram())));
        assertThat(m.result().op("get").hits()).isNull();
        assertThat(m.result().op("scan")).isNull();
        assertThat(m.result().op("total").count()).isEqualTo(20);
    }

    /** A lock run of {@code n} acquires and releases, latencies 1..n ms, over 2 s. */
    private static RunResult lockRun(String clientId, int n) {
        long sec = 1_000_000_000L;
        WorkloadOptions options = WorkloadOptions.builder().workload("lock").clientId(clientId).durationSeconds(2)
                .warmupSeconds(0).build();
        Results r = new Results(0, 0, 2 * sec, 1_700_000_000_000L, clientId);
        for (int i = 1; i <= n; i++) {
            r.record(OpType.ACQUIRE, 0, i * 1_000_000L, null, 0);
            r.record(OpType.RELEASE, 0, i * 1_000_000L, null, 0);
        }
        r.tick(sec);
        r.close();
        r.tick(2 * sec + 1);
        return r.toResult(options, 0, 0, -1);
    }

    @Test
    void when_lockRunsAreMerged_then_acquireAndReleaseRowsAddUpAndCountInTheTotal() {
        ResultFiles.write(tmp.resolve("a"), lockRun("a", 100));
        ResultFiles.write(tmp.resolve("b"), lockRun("b", 300));

        Merge.Merged m = Merge.merge(List.of(tmp.resolve("a"), tmp.resolve("b")));

        ResultJson r = m.result();
        assertThat(r.op("acquire").count()).isEqualTo(400);
        assertThat(r.op("release").count()).isEqualTo(400);
        assertThat(r.op("acquire").opsPerSec()).isCloseTo(200, within(1e-6)); // 100/2 s + 300/2 s
        assertThat(r.op("total").count()).isEqualTo(800);
        // percentiles of the union, not averaged: p90 of 1..100 and 1..300 ms together is the 360th of 400, 260 ms
        // (the mean of the two p90s would be 180)
        assertThat(r.op("acquire").p90Ms()).isCloseTo(260, within(1.0));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Merge.print(new PrintStream(out, true, StandardCharsets.UTF_8), m, 0.001);
        assertThat(out.toString(StandardCharsets.UTF_8).lines().filter(l -> l.startsWith("acquire ")
                || l.startsWith("release ")).count()).as("a row each in both tables").isEqualTo(4);
    }
}
