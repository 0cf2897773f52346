package io.kvraft.benchmark;

import io.kvraft.client.KvClient;
import io.kvraft.server.launch.LocalClusterConfigs;
import io.kvraft.server.launch.ProcessCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The crash drill from the README, through the CLI: a benchmark records its acknowledged puts, all
 * three server processes are killed with SIGKILL at once and restarted, and {@code verify} finds every
 * recorded write. A record that was never written is reported missing. One engine (RocksDB) is enough here: both
 * engines' survival of a kill of every node is {@code DurableRestartTest}'s (kv-server), and CI's split drill runs
 * this CLI path on MemoryDB.
 */
class AckedDrillTest {

    @TempDir
    Path dir;

    private static int cli(List<String> args, ByteArrayOutputStream out) {
        try (PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8)) {
            Function<io.kvraft.client.config.ClientConfig, KvClient> connector = io.kvraft.client.KvClients::connect;
            return BenchmarkMain.execute(args.toArray(String[]::new), ps, ps, connector);
        }
    }

    @Test
    void when_allNodesAreKilledAndRestarted_then_verifyFindsEveryAcknowledgedWrite() throws Exception {
        List<Path> configs = LocalClusterConfigs.write(dir.resolve("conf"), 3, "rocksdb", 1000, "");
        Path acked = dir.resolve("acked.txt");
        try (ProcessCluster cluster = ProcessCluster.start(configs, dir.resolve("data"), List.of("-Xmx256m", "-XX:+UseSerialGC"),
                Duration.ofSeconds(120))) {
            String servers = String.join(",", cluster.servers());
            ByteArrayOutputStream run = new ByteArrayOutputStream();
            // the drill is about the writes that were acknowledged: on a loaded machine some others time out, so the
            // run's error rate is not held to the benchmark's 0.1% (--max-error-rate 1); it must still record writes
            int code = cli(List.of("--servers", servers, "--duration", "4", "--warmup", "1", "--threads", "2",
                    "--inflight", "32", "--keys", "1000", "--read-ratio", "0.1", "--max-error-rate", "1",
                    "--record-acked", acked.toString()), run);
            assertThat(code).as(run.toString(StandardCharsets.UTF_8)).isZero();
            long recorded = Files.lines(acked).count();
            assertThat(recorded).as(run.toString(StandardCharsets.UTF_8)).isPositive();

            for (int i = 0; i < 3; i++) {
                cluster.kill(i);
            }
            for (int i = 0; i < 3; i++) {
                cluster.startNode(i);
            }
            cluster.awaitReady(Duration.ofSeconds(120));

            ByteArrayOutputStream verify = new ByteArrayOutputStream();
            code = cli(List.of("verify", "--acked", acked.toString(), "--servers", servers), verify);
            String text = verify.toString(StandardCharsets.UTF_8);
            assertThat(code).as(text).isZero();
            assertThat(text).contains("checked " + String.format("%,d", recorded) + " acknowledged writes")
                    .contains(": 0 missing, 0 wrong, 0 unreadable");

            // a write the cluster never saw is reported, and fails the drill
            Files.writeString(acked, "00ffee0000000000000000000000beef 0102\n", StandardOpenOption.APPEND);
            ByteArrayOutputStream again = new ByteArrayOutputStream();
            assertThat(cli(List.of("verify", "--acked", acked.toString(), "--servers", servers), again)).isEqualTo(1);
            assertThat(again.toString(StandardCharsets.UTF_8)).contains("1 missing").contains("missing 00ffee");
        }
    }

    @Test
    void when_theFileIsMalformed_then_verifySaysWhichLine() throws Exception {
        Path f = dir.resolve("bad.txt");
        Files.writeString(f, "0a0b 0c\nnot hex at all\n0a 0b\n");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertThat(cli(List.of("verify", "--acked", f.toString(), "--servers", "127.0.0.1:1"), out)).isEqualTo(2);
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("line 2 is malformed");
    }

    @Test
    void when_theLastLineWasTornByACrash_then_itIsSkipped() throws Exception {
        Path f = dir.resolve("torn.txt");
        Files.writeString(f, "0a0b 0c\n0d0e 0");
        assertThat(VerifyCommand.read(f)).hasSize(1);
    }
}
