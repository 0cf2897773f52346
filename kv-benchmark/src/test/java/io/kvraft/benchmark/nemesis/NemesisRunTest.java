package io.kvraft.benchmark.nemesis;

import io.kvraft.benchmark.BenchmarkMain;
import io.kvraft.client.KvClients;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The linearizability check on a real cluster, in both read modes: a short nemesis run (three server
 * processes, a pause then a kill, which move region leaders) whose every key's history must linearize, with
 * every acknowledged write read back; and a run whose events include region splits, which must end with more
 * regions than it started with and the same region map on every node. Network and clock faults need root or
 * libfaketime: CI's smoke run ({@code bench/nemesis-smoke.sh}) has those.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class NemesisRunTest {

    /**
     * What the runs give the cluster after the last heal: recovery within a minute is the nemesis's own bar, but on a
     * loaded machine (a second suite and the benchmark beside it) a node restarted by the last kill once had every
     * region led only 50 s after it, and the run failed on time alone; here the behaviour is what is checked.
     */
    private static final String RECOVERY = "3m";

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
                        "--server-jvm-arg=-Xmx256m", "--server-jvm-arg=-Xms64m", "--recovery-timeout", RECOVERY, "--out", out.toString()},
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

    @Test
    void when_regionsSplitBetweenKills_then_theHistoryStaysLinearizableAndTheNodesAgreeOnMoreRegions() throws Exception {
        Path out = tmp.resolve("out-split");
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        // faults every 5 s, held 2 s, for 20 s: split, kill, split, then a kill as the last (when time is left)
        int code = BenchmarkMain.execute(new String[]{"nemesis", "--duration", "20s", "--faults", "split,kill",
                        "--interval", "5s", "--hold", "2s", "--threads", "4", "--rate", "100", "--keys-per-region", "4",
                        "--server-jvm-arg=-Xmx256m", "--server-jvm-arg=-Xms64m", "--recovery-timeout", RECOVERY, "--out", out.toString()},
                new PrintStream(stdout, true, StandardCharsets.UTF_8), new PrintStream(stderr, true, StandardCharsets.UTF_8),
                KvClients::connect);
        String report = stdout.toString(StandardCharsets.UTF_8);
        String why = report + "\n" + stderr.toString(StandardCharsets.UTF_8);
        // the last kill fits in only when the earlier faults healed in time: on a slow machine it is left out
        assertThat(report).as(why).containsPattern("faults +[34] injected: kill [12], split 2")
                .containsPattern("splits +2 asked: [12] done")
                .containsPattern("regions 24 at the start, 2[5-9] at the end")
                .containsPattern("region map +3 nodes agree on 2[5-9] regions tiling the key space")
                .contains(" 0 violations, 0 undecided", ": 0 lost or wrong, 0 unreadable", "0 unread")
                .contains("result          PASS");
        assertThat(code).as(why).isEqualTo(BenchmarkMain.EXIT_OK);
        assertThat(Files.readString(out.resolve("faults.txt"))).contains("split region");
    }
}
