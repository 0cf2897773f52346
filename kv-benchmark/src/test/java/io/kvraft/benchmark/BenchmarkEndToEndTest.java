package io.kvraft.benchmark;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.launch.LocalClusterConfigs;
import io.kvraft.server.launch.ProcessCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** A 10-second benchmark against three real server processes; its counts must match the servers' own. */
class BenchmarkEndToEndTest {

    @TempDir
    Path dir;

    static long serverOps(Transport t, List<String> servers) {
        long total = 0;
        for (String s : servers) {
            RegionsResponse r = t.<RegionsResponse>call(s, RegionsRequest.getDefaultInstance(), 5000).join();
            total += r.getWriteOps() + r.getReadOps();
        }
        return total;
    }

    @Test
    void when_benchmarkRuns_then_itsCountsMatchTheServersCounters() throws Exception {
        // the production election timeout: with 1 s a loaded machine makes leaders step down mid-run, and a write
        // left unknown then breaks the count this test compares (the preload failed so at load average 40)
        List<Path> configs = LocalClusterConfigs.write(dir.resolve("conf"), 3, "memory", 5000, "");
        List<String> jvm = List.of("-Xmx256m", "-XX:+UseSerialGC");
        try (ProcessCluster cluster = ProcessCluster.start(configs, dir.resolve("data"), jvm, Duration.ofSeconds(120));
             KvClient client = KvClients.connect(ClientConfig.of(cluster.servers()));
             Transport transport = new Transport()) {
            long before = serverOps(transport, cluster.servers());
            WorkloadOptions options = WorkloadOptions.builder().threads(2).inflight(16).durationSeconds(10)
                    .warmupSeconds(2).keys(5_000).keyDistribution(KeyDistribution.UNIFORM).rate(0)
                    .clientId("e2e").seed(1).build();
            ByteArrayOutputStream report = new ByteArrayOutputStream();
            Path out = dir.resolve("out");
            RunResult result;
            try (PrintStream ps = new PrintStream(report, true, StandardCharsets.UTF_8)) {
                result = BenchmarkRun.run(options, client, ps, null, out);
            }
            long after = serverOps(transport, cluster.servers());

            assertThat(result.errorCount()).isZero();
            assertThat(result.ops()).isPositive();
            assertThat(result.gets()).isPositive();
            // every operation the benchmark sent, preload and warm-up included, was answered by a leader once
            assertThat(after - before).isEqualTo(5_000 + result.warmupOps() + result.ops());
            String text = report.toString(StandardCharsets.UTF_8);
            assertThat(text).contains("benchmark_timer", "put_benchmark_timer", "get_benchmark_timer",
                    "HdrHistogram", String.valueOf(result.ops()));
            assertThat(Files.list(out).map(p -> p.getFileName().toString()).toList())
                    .contains("result-e2e.json", "histogram-e2e.hlog");
        }
    }
}
