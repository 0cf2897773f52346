package io.kvraft.benchmark;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class SweepTest {

    @TempDir
    Path tmp;

    @Test
    void threadsLadderPrintsOneRowPerStepAndThePeak() throws Exception {
        FakeKvClient fake = new FakeKvClient(200, 0, io.kvraft.common.ErrorCode.OK);
        WorkloadOptions base = WorkloadOptions.builder().inflight(2).keys(200).clientId("s").seed(1).build();
        Sweep.Plan plan = new Sweep.Plan(Sweep.Kind.THREADS, List.of(1.0, 2.0, 4.0), 0.3, 0.1);
        Sweep.Result r = Sweep.run(plan, base, fake, null);
        fake.close();

        assertThat(r.steps()).extracting(Sweep.Step::threads).containsExactly(1, 2, 4);
        assertThat(r.steps()).allSatisfy(s -> assertThat(s.count()).isPositive());
        Sweep.Step peak = r.steps().stream().max(java.util.Comparator.comparingDouble(Sweep.Step::opsPerSec)).orElseThrow();
        assertThat(r.peakStep()).isEqualTo(peak.step());

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Sweep.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), r);
        List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines.get(0)).startsWith("-- latency by thread (ms)");
        assertThat(lines.get(1).split("\\s+")).containsExactly("threads", "target", "ops/s", "p50", "p95", "p99",
                "p99.9", "p99.99", "max", "errors");
        assertThat(lines.get(2)).startsWith("1 ").contains("closed");
        assertThat(lines.get(4)).startsWith("4 ");
        assertThat(lines.get(lines.size() - 1)).matches("peak throughput: \\d+ ops/s at step threads=\\d");

        Sweep.write(tmp, r);
        String html = Files.readString(tmp.resolve(Sweep.HTML_FILE));
        assertThat(html).contains("<svg").contains("<polyline").contains("threads=4").doesNotContain("<script")
                .doesNotContain("src=", "href=", "@import", "url(").contains("peak throughput");
        Sweep.Result back = ResultFiles.MAPPER.readValue(tmp.resolve(Sweep.JSON_FILE).toFile(), Sweep.Result.class);
        assertThat(back.steps()).hasSize(3);
        assertThat(back.peakStep()).isEqualTo(r.peakStep());
    }

    @Test
    void rateLadderRunsOpenLoopSteps() {
        FakeKvClient fake = new FakeKvClient();
        WorkloadOptions base = WorkloadOptions.builder().threads(2).inflight(2).keys(100).clientId("s").seed(1).build();
        Sweep.Result r = Sweep.run(new Sweep.Plan(Sweep.Kind.RATE, List.of(200.0, 1000.0), 0.5, 0), base, fake, null);
        assertThat(r.kind()).isEqualTo("rate");
        assertThat(r.steps()).extracting(Sweep.Step::targetOpsPerSec).containsExactly(200.0, 1000.0);
        // every op due in the 0.5 s window is either sent (and counted) or reported unsent
        assertThat(r.steps().get(0).count() + r.steps().get(0).unsent()).isEqualTo(100);
        assertThat(r.steps().get(1).count() + r.steps().get(1).unsent()).isEqualTo(500);
        // which step is faster is the machine's business; the peak is the step that was
        Sweep.Step peak = r.steps().stream().max(java.util.Comparator.comparingDouble(Sweep.Step::opsPerSec)).orElseThrow();
        assertThat(r.peakStep()).isEqualTo(peak.step()).isIn("rate=200", "rate=1000");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Sweep.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), r);
        assertThat(bytes.toString(StandardCharsets.UTF_8)).startsWith("-- latency by ops (ms)").contains(" 1000 ");
    }

    @Test
    void sweepCommandWritesJsonAndHtml() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = BenchmarkMain.execute(new String[]{"sweep", "--servers", "127.0.0.1:7001", "--threads-ladder", "1,2",
                        "--step-duration", "0.3", "--step-warmup", "0", "--keys", "100", "--out", tmp.toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8),
                c -> new FakeKvClient());
        assertThat(code).as(err.toString(StandardCharsets.UTF_8)).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("peak throughput:");
        assertThat(tmp.resolve(Sweep.JSON_FILE)).exists();
        assertThat(tmp.resolve(Sweep.HTML_FILE)).exists();
    }

    @Test
    void when_readModesAreLaddered_then_eachLevelRunsOncePerModeWithServerCpuPerOp() throws Exception {
        FakeKvClient fake = new FakeKvClient(); // completes at once: every op issued in a step completes in it
        // "server CPU": 5 us for every operation the fake received, and 1 s at each step's start (its JIT, say),
        // which the step's figure leaves out: it counts the measured window only
        java.util.function.LongSupplier cpu = () -> fake.ops() * 5_000L + fake.readModesAsked.size() * 1_000_000_000L;
        WorkloadOptions base = WorkloadOptions.builder().inflight(2).keys(100).clientId("m").seed(1)
                .readRatio(0.5).build();
        List<String> modes = List.of("read_index", "follower", "stale");
        Sweep.Plan plan = new Sweep.Plan(Sweep.Kind.THREADS, List.of(1.0, 2.0), 0.5, 0.05, modes);
        Sweep.Result r = Sweep.run(plan, base, fake, KeySpace.of(base), null, NanoClock.SYSTEM, cpu);

        assertThat(r.steps()).extracting(Sweep.Step::step).containsExactly(
                "threads=1 read-mode=read_index", "threads=1 read-mode=follower", "threads=1 read-mode=stale",
                "threads=2 read-mode=read_index", "threads=2 read-mode=follower", "threads=2 read-mode=stale");
        assertThat(r.steps()).extracting(Sweep.Step::readMode).containsExactly(
                "read_index", "follower", "stale", "read_index", "follower", "stale");
        assertThat(fake.readModesAsked).extracting(Enum::name).containsExactly(
                "READ_INDEX", "FOLLOWER", "STALE", "READ_INDEX", "FOLLOWER", "STALE");
        assertThat(r.steps()).allSatisfy(s -> {
            assertThat(s.count()).isPositive();
            assertThat(s.serverCpuUsPerOp()).isCloseTo(5.0, org.assertj.core.api.Assertions.within(0.5));
        });

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Sweep.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), r);
        List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines.get(1).split("\\s+")).containsExactly("threads", "target", "read-mode", "ops/s", "p50", "p95",
                "p99", "p99.9", "p99.99", "max", "errors", "srv-cpu-us/op");
        assertThat(lines.get(3).split("\\s+")).startsWith("1", "closed", "follower").endsWith("0", "5.0");
        assertThat(lines).anyMatch(l -> l.matches("peak with stale reads: \\d+ ops/s at step threads=\\d read-mode=stale"));

        Sweep.write(tmp, r);
        Sweep.Result back = ResultFiles.MAPPER.readValue(tmp.resolve(Sweep.JSON_FILE).toFile(), Sweep.Result.class);
        assertThat(back.readModes()).isEqualTo(modes);
        assertThat(back.steps().get(5).serverCpuUsPerOp()).isEqualTo(r.steps().get(5).serverCpuUsPerOp());
        assertThat(Files.readString(tmp.resolve(Sweep.HTML_FILE))).contains("p99 follower").contains("p99 stale");
    }

    @Test
    void when_readModesAreBad_then_sweepExitsWith2AndOneLine() {
        for (String[] args : List.of(
                new String[]{"sweep", "--servers", "h:1", "--threads-ladder", "1", "--read-modes", "read_index,fast"},
                new String[]{"sweep", "--servers", "h:1", "--threads-ladder", "1", "--read-modes", "stale",
                        "--read-mode", "follower"},
                new String[]{"sweep", "--servers", "h:1", "--threads-ladder", "1", "--read-modes", "stale,stale"})) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int code = BenchmarkMain.execute(args, new PrintStream(new ByteArrayOutputStream()),
                    new PrintStream(err, true, StandardCharsets.UTF_8), c -> {
                        throw new AssertionError("must not connect");
                    });
            String e = err.toString(StandardCharsets.UTF_8).strip();
            assertThat(code).as(e).isEqualTo(2);
            assertThat(e).doesNotContain("\n").startsWith("--read-modes");
        }
    }

    @Test
    void niceCeilRoundsUpToReadableTicks() {
        assertThat(SweepChart.niceCeil(0)).isEqualTo(1);
        assertThat(SweepChart.niceCeil(7)).isEqualTo(10);
        assertThat(SweepChart.niceCeil(1.2)).isEqualTo(2);
        assertThat(SweepChart.niceCeil(43_000)).isEqualTo(50_000);
        assertThat(SweepChart.niceCeil(2000)).isEqualTo(2000);
    }
}
