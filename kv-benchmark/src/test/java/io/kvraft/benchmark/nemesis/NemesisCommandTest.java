package io.kvraft.benchmark.nemesis;

import io.kvraft.benchmark.BenchmarkMain;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Bad options are refused before anything starts: exit 2, one line naming the option. */
class NemesisCommandTest {

    @TempDir
    Path tmp;

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "--faults kill,flood              | unknown fault 'flood'",
            "--faults merge,mrege             | (known: kill, pause, partition, loss, clock, split, merge)",
            "--faults ,                       | name at least one of",
            "--duration 5s                    | at least 10 s",
            "--duration ten                   | Invalid value for option '--duration': 'ten' is not a duration",
            "--hold 4000                      | shorter than --interval",
            "--interval 1s --hold 500ms       | at least 2s",
            "--check-budget 10ms              | --check-budget at least 1s",
            "--engine leveldb                 | memory or rocksdb",
            "--workload locks                 | register or lock",
            "--hold 9000 --interval 5         | shorter than --interval",
            "--threads 0                      | must be positive",
            "--read-mode stale                | stale reads are not linearizable",
            "--raft replicatorPipeline        | KEY=VALUE",
            "--raft replicatorPipeline=       | KEY=VALUE",
            "--raft pipeline=false            | no raft.pipeline in the server YAML",
            "--raft electionTimeoutMs=500     | use --election-timeout-ms",
            "--raft sync=true:false           | a plain value",
            "--raft sync=true --raft sync=false | raft.sync is given twice",
            "--recovery-timeout 10s           | --recovery-timeout: at least 15s",
            "--recovery-timeout soon          | --recovery-timeout",
    })
    void when_optionsAreBad_then_exit2WithTheReason(String args, String message) throws Exception {
        List<String> a = new ArrayList<>(List.of("nemesis", "--out", tmp.resolve("out").toString()));
        a.addAll(List.of(args.trim().split(" +")));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = BenchmarkMain.execute(a.toArray(String[]::new), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), c -> {
                    throw new AssertionError("no client may be made for bad options");
                });
        assertThat(code).isEqualTo(BenchmarkMain.EXIT_USAGE);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains(message);
        assertThat(tmp.resolve("out")).satisfiesAnyOf(p -> assertThat(Files.exists(p)).isFalse(),
                p -> assertThat(Files.list(p)).isEmpty());
    }

    @Test
    void when_helpNamesTheKeysTheNemesisSetsItself_then_theyAreTheOnesItWrites() {
        assertThat(NemesisCommand.OWN_RAFT_KEYS).isEqualTo(String.join(", ", new NemesisCommand().ownRaftKeys().keySet()));
    }

    @Test
    void when_noFaultsAreNamed_then_everyKindRuns_aMergeRightAfterASplit() {
        CommandLine.Model.OptionSpec faults = new CommandLine(new NemesisCommand()).getCommandSpec().findOption("--faults");
        List<String> names = List.of(Nemesis.Fault.NAMES.split(", "));
        assertThat(faults.defaultValue()).isEqualTo("kill,pause,split,merge,partition,loss,clock");
        assertThat(faults.defaultValue().split(",")).containsExactlyInAnyOrderElementsOf(names);
        assertThat(String.join(" ", faults.description())).contains(names);
    }

}
