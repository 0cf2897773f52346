package io.kvraft.benchmark.nemesis;

import io.kvraft.benchmark.BenchmarkMain;
import io.kvraft.client.KvClients;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The linearizability check on a real cluster, in both read modes: a short nemesis run (three server
 * processes, a pause then a kill, which move region leaders) whose every key's history must linearize, with
 * every acknowledged write read back. Network and clock faults need root or libfaketime: CI's smoke run
 * ({@code bench/nemesis-smoke.sh}) has those.
 */
class NemesisRunTest {

    @TempDir
    Path tmp;

    @ParameterizedTest(name = "readMode {0}")
    @ValueSource(strings = {"read_index", "leader_lease"})
    void when_leadersFailOver_then_theHistoryIsLinearizableAndNoAcknowledgedWriteIsLost(String readMode) throws Exception {
        Path out = tmp.resolve("out");
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        int code = BenchmarkMain.execute(new String[]{"nemesis", "--duration", "20s", "--faults", "pause,kill",
                        "--read-mode", readMode, "--threads", "4", "--rate", "100", "--keys-per-region", "4",
                        "--server-jvm-arg=-Xmx256m", "--server-jvm-arg=-Xms64m", "--out", out.toString()},
                new PrintStream(stdout, true, StandardCharsets.UTF_8), new PrintStream(stderr, true, StandardCharsets.UTF_8),
                KvClients::connect);
        String report = stdout.toString(StandardCharsets.UTF_8);
        String why = report + "\n" + stderr.toString(StandardCharsets.UTF_8);
        assertThat(stderr.toString(StandardCharsets.UTF_8)).contains("reads " + readMode);
        assertThat(report).as(why).containsPattern("faults +2 injected: kill 1, pause 1")
                .contains(" 0 violations, 0 undecided", ": 0 lost or wrong, 0 unreadable", "0 unread")
                .containsPattern("operations +[1-9][0-9,]* ok")
                .contains("result          PASS");
        assertThat(code).as(why).isEqualTo(BenchmarkMain.EXIT_OK);
        assertThat(Files.readString(out.resolve("history.txt"))).isNotBlank();
    }
}
