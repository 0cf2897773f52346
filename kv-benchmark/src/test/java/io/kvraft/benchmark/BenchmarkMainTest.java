package io.kvraft.benchmark;

import io.kvraft.client.KvClient;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.ErrorCode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

class BenchmarkMainTest {

    @TempDir
    Path tmp;

    record Outcome(int code, String out, String err) {
    }

    private static Outcome cli(Function<ClientConfig, KvClient> connector, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = BenchmarkMain.execute(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), connector);
        return new Outcome(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static String[] quickRun(String... more) {
        List<String> a = new ArrayList<>(List.of("--servers", "127.0.0.1:7001,127.0.0.1:7002", "--duration", "0.6",
                "--warmup", "0.2", "--threads", "2", "--inflight", "4", "--keys", "500", "--seed", "5"));
        a.addAll(List.of(more));
        return a.toArray(new String[0]);
    }

    @Test
    void runPrintsTheReportAndWritesResultFiles() {
        FakeKvClient fake = new FakeKvClient();
        List<ClientConfig> seen = new ArrayList<>();
        Outcome o = cli(c -> {
            seen.add(c);
            return fake;
        }, quickRun("--out", tmp.toString(), "--client-id", "bench/1", "--read-mode", "leader_lease",
                "--batching", "false"));
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).contains("benchmark_timer").contains("put_benchmark_timer").contains("get_benchmark_timer")
                .contains("-- HdrHistogram latency (ms)").contains("-- Errors by code");
        assertThat(o.err()).contains("preload: 500 keys").contains("ops/s");
        assertThat(fake.batchPutKeys.get()).isEqualTo(500);
        assertThat(fake.isClosed()).isTrue();
        assertThat(seen.get(0).servers()).containsExactly("127.0.0.1:7001", "127.0.0.1:7002");
        assertThat(seen.get(0).readMode()).isEqualTo("leader_lease");
        assertThat(seen.get(0).batching().enabled()).isFalse();
        assertThat(tmp.resolve("result-bench_1.json")).exists();
        assertThat(tmp.resolve("histogram-bench_1.hlog")).exists();
        ResultJson r = ResultFiles.readJson(tmp.resolve("result-bench_1.json"));
        assertThat(r.config().readMode()).isEqualTo("leader_lease");
        assertThat(r.config().batching()).isFalse();
        assertThat(r.config().seed()).isEqualTo(5);
        assertThat(r.clientId()).isEqualTo("bench/1");
    }

    @Test
    void when_readModeIsGiven_then_itOverridesTheClientYamlAndTheReportSaysSo() throws Exception {
        Path yaml = tmp.resolve("client.yaml");
        Files.writeString(yaml, "servers: [\"127.0.0.1:7001\"]\nreadMode: leader_lease\n");
        FakeKvClient fake = new FakeKvClient();
        List<ClientConfig> seen = new ArrayList<>();
        List<String> args = new ArrayList<>(List.of("--config", yaml.toString(), "--read-mode", "stale",
                "--workload", "e", "--scan-length", "3"));
        args.addAll(List.of(quickRun()).subList(2, quickRun().length)); // without --servers
        Outcome o = cli(c -> {
            seen.add(c);
            return fake;
        }, args.toArray(String[]::new));
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(seen.get(0).readMode()).isEqualTo("stale");
        assertThat(fake.readModesAsked).containsExactly(io.kvraft.client.ReadMode.STALE);
        assertThat(fake.scanLimits).isNotEmpty().allMatch(n -> n == 3);
        assertThat(o.out()).contains("client: read mode stale, batching on; workload e (put 0.05, scan 0.95),"
                + " 3 keys per scan at most");
        assertThat(o.out()).contains("workload=e mix=(put 0.05, scan 0.95) scan-length=3").contains("read-mode=stale");

        // without the option the YAML's mode runs
        FakeKvClient fromYaml = new FakeKvClient();
        List<String> plain = new ArrayList<>(List.of("--config", yaml.toString()));
        plain.addAll(List.of(quickRun()).subList(2, quickRun().length));
        Outcome p = cli(c -> fromYaml, plain.toArray(String[]::new));
        assertThat(p.code()).as(p.err()).isZero();
        assertThat(fromYaml.readModesAsked).containsExactly(io.kvraft.client.ReadMode.LEADER_LEASE);
        assertThat(p.out()).contains("client: read mode leader_lease");
    }

    /** As {@link #quickRun} without --keys: the coordination workloads have their own default. */
    private static String[] coordRun(String... more) {
        List<String> a = new ArrayList<>(List.of(quickRun(more)));
        int i = a.indexOf("--keys");
        a.subList(i, i + 2).clear();
        return a.toArray(new String[0]);
    }

    @Test
    void when_theSequenceWorkloadRuns_then_itCallsGetSequenceWithTheStepPreloadsNothingAndReportsASequenceRow() {
        FakeKvClient fake = new FakeKvClient();
        Outcome o = cli(c -> fake, coordRun("--workload", "sequence", "--sequence-step", "50", "--keys", "3",
                "--out", tmp.toString(), "--client-id", "seq"));
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(fake.batchPutKeys.get()).as("no preload").isZero();
        assertThat(fake.puts.get() + fake.gets.get()).isZero();
        assertThat(fake.sequenceSteps).isNotEmpty().allMatch(step -> step == 50);
        assertThat(fake.sequences).hasSizeLessThanOrEqualTo(3);
        assertThat(o.out()).contains("sequence_benchmark_timer").contains("workload sequence (getSequence step 50)")
                .doesNotContainPattern("(?m)^put ");
        String row = o.out().lines().filter(l -> l.startsWith("sequence ")).findFirst().orElseThrow();
        long reported = Long.parseLong(row.trim().split("\\s+")[7]); // the latency table's count column
        assertThat(reported).isPositive().isLessThanOrEqualTo(fake.sequenceSteps.size());
        ResultJson r = ResultFiles.readJson(tmp.resolve("result-seq.json"));
        assertThat(r.op("sequence").count()).isEqualTo(reported);
        assertThat(r.config().sequenceStep()).isEqualTo(50);
    }

    @Test
    void when_theAllocatorWorkloadRuns_then_idsComeFromBlocksOfTheStepAndTheReportGivesIdsPerSecond() {
        FakeKvClient fake = new FakeKvClient();
        Outcome o = cli(c -> fake, coordRun("--workload", "allocator", "--sequence-step", "1000"));
        assertThat(o.code()).as(o.err()).isZero();
        String row = o.out().lines().filter(l -> l.startsWith("alloc ")).findFirst().orElseThrow();
        long ids = Long.parseLong(row.trim().split("\\s+")[7]);
        assertThat(ids).isPositive();
        // one key, blocks of 1000: every id handed out (warm-up too) came from a block fetched
        assertThat(fake.sequenceSteps).allMatch(step -> step == 1000);
        assertThat(fake.sequenceSteps.size() * 1000L).isGreaterThanOrEqualTo(ids);
        assertThat(o.out()).containsPattern("allocator: \\d+ ids/s from SequenceAllocator.next\\(\\) \\(blocks of 1000, 1"
                + " sequence key\\(s\\), 2 thread\\(s\\)\\)");
    }

    @Test
    void when_recordAckedIsGivenWithACoordinationWorkload_then_usageError() {
        Outcome o = cli(c -> {
            throw new AssertionError("must not connect");
        }, quickRun("--workload", "lock", "--record-acked", tmp.resolve("acked").toString()));
        assertThat(o.code()).isEqualTo(BenchmarkMain.EXIT_USAGE);
        assertThat(o.err().strip()).isEqualTo("--record-acked records puts: it does not apply to --workload lock");
    }

    @Test
    void errorRateOverTheLimitExitsWithOneAndOneLine() {
        Outcome o = cli(c -> new FakeKvClient(0, 10, ErrorCode.TIMEOUT), quickRun("--max-error-rate", "0.05"));
        assertThat(o.code()).isEqualTo(1);
        List<String> failed = o.err().lines().filter(l -> l.contains("FAILED")).toList();
        assertThat(failed).hasSize(1);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile(
                "error rate ([0-9.]+) \\(\\d+ errors of \\d+ operations\\) exceeds --max-error-rate 0.05$")
                .matcher(failed.get(0));
        assertThat(m.find()).as(failed.get(0)).isTrue();
        assertThat(Double.parseDouble(m.group(1))).isCloseTo(0.1, org.assertj.core.api.Assertions.within(0.005));
        assertThat(o.out()).containsPattern("TIMEOUT\\s+\\d+");
    }

    @Test
    void errorRateUnderTheLimitExitsWithZero() {
        Outcome o = cli(c -> new FakeKvClient(0, 1000, ErrorCode.BUSY), quickRun("--max-error-rate", "0.01"));
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).containsPattern("BUSY\\s+\\d+");
    }

    @Test
    void badUsageExitsWithTwo() {
        Function<ClientConfig, KvClient> none = c -> {
            throw new AssertionError("must not connect");
        };
        Outcome threads = cli(none, "--servers", "h:1", "--threads", "0");
        assertThat(threads.code()).isEqualTo(2);
        assertThat(threads.err().strip()).isEqualTo("--threads must be at least 1, got 0");

        Outcome keySize = cli(none, "--servers", "h:1", "--key-size", "4");
        assertThat(keySize.code()).isEqualTo(2);
        assertThat(keySize.err()).contains("--key-size must be at least 8");

        assertThat(cli(none, "--no-such-option").code()).isEqualTo(2);
        assertThat(cli(none, "--threads", "many").code()).isEqualTo(2);
        assertThat(cli(none, "--key-distribution", "gauss").code()).isEqualTo(2);
        assertThat(cli(none, "--batching", "maybe").code()).isEqualTo(2);
        Outcome mode = cli(none, "--servers", "h:1", "--read-mode", "eventual");
        assertThat(mode.code()).isEqualTo(2);
        assertThat(mode.err().strip())
                .isEqualTo("--read-mode must be one of read_index, leader_lease, follower, stale; got 'eventual'");

        Outcome servers = cli(none, "--servers", "nohostport");
        assertThat(servers.code()).isEqualTo(2);
        assertThat(servers.err().strip()).startsWith("--servers: expected host:port");

        assertThat(cli(none, "sweep", "--servers", "h:1").code()).isEqualTo(2); // needs a ladder
        assertThat(cli(none, "sweep", "--servers", "h:1", "--threads-ladder", "1,0").code()).isEqualTo(2);
    }

    @Test
    void badClientConfigExitsWithTwoAndItsOneLineMessage() throws Exception {
        Function<ClientConfig, KvClient> none = c -> {
            throw new AssertionError("must not connect");
        };
        Outcome missing = cli(none, "--config", tmp.resolve("nope.yaml").toString());
        assertThat(missing.code()).isEqualTo(2);
        assertThat(missing.err().strip()).isEqualTo(tmp.resolve("nope.yaml") + ": no such file");

        Path bad = tmp.resolve("client.yaml");
        Files.writeString(bad, "servers: [\"127.0.0.1:1\"]\nbogus: 1\n");
        Outcome unknown = cli(none, "--config", bad.toString());
        assertThat(unknown.code()).isEqualTo(2);
        assertThat(unknown.err().strip()).doesNotContain("\n").contains("unknown key 'bogus'");
    }

    @Test
    void missingServerConfigsForTheLocalClusterExitWithTwo() {
        Outcome o = cli(c -> {
            throw new AssertionError("must not connect");
        }, "--conf-dir", tmp.resolve("noconf").toString(), "--duration", "1");
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err()).contains("server-1.yaml: no such file");
    }

    @Test
    void helpShowsDefaults() {
        // picocli reports a description it cannot format (a bare '%') on System.err, not on the command's streams
        java.io.PrintStream systemErr = System.err;
        ByteArrayOutputStream tracer = new ByteArrayOutputStream();
        Outcome o;
        try {
            System.setErr(new java.io.PrintStream(tracer, true, StandardCharsets.UTF_8));
            o = cli(c -> null, "--help");
            cli(c -> null, "sweep", "--help");
            cli(c -> null, "nemesis", "--help");
        } finally {
            System.setErr(systemErr);
        }
        assertThat(tracer.toString(StandardCharsets.UTF_8)).doesNotContain("picocli WARN");
        assertThat(o.out()).contains("90% put");
        assertThat(o.code()).isZero();
        assertThat(o.out().replaceAll("\\s+", " ")).contains("--threads=N").contains("(default: 8)").contains("(default: 512)")
                .contains("(default: 30)").contains("(default: 0.001)").contains("uniform, zipfian, region-start, hot-region")
                .contains("merge").contains("sweep");
    }

    @Test
    void regionStartDistributionUsesTheClustersRegions() {
        FakeKvClient fake = new FakeKvClient();
        fake.setRegions(List.of(new byte[0], new byte[]{0x40}, new byte[]{(byte) 0x80}, new byte[]{(byte) 0xC0}));
        Outcome o = cli(c -> fake, quickRun("--key-distribution", "region-start", "--key-size", "4"));
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(fake.batchPutKeys.get()).isEqualTo(4);
        assertThat(fake.map).hasSize(4);
    }
}
