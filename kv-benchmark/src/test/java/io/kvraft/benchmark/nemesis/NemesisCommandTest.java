package io.kvraft.benchmark.nemesis;

import io.kvraft.benchmark.BenchmarkMain;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.launch.LocalClusterConfigs;
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
            "--faults kill_majority           | unknown fault 'kill_majority'",
            "--faults merge,mrege             | (known: kill, kill-majority, pause, partition, loss, clock, split, merge, drain, join, replace)",
            "--faults kill,join --nodes 5     | --faults: join needs a free slot for its spare node: --nodes 4 or fewer (a run has at most 5 nodes), got 5",
            "--faults join,replace --nodes 6  | --nodes: 3 to 5, got 6",
            "--faults kill,drain              | --faults: drain needs --nodes 4 or more",
            "--faults drain --nodes 3         | --faults: drain needs --nodes 4 or more",
            "--nodes 2                        | --nodes: 3 to 5, got 2",
            "--nodes 6 --faults kill,drain    | --nodes: 3 to 5, got 6",
            "--nodes four                     | Invalid value for option '--nodes'",
            "--nodes 4 --drain-hold 100ms     | --drain-hold: at least 500ms",
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
    void when_noFaultsAreNamed_then_everyKindRunsButTheMembershipEvents_aMergeRightAfterASplit() {
        CommandLine.Model.OptionSpec faults = new CommandLine(new NemesisCommand()).getCommandSpec().findOption("--faults");
        List<String> names = List.of(Nemesis.Fault.NAMES.split(", "));
        assertThat(faults.defaultValue()).isEqualTo("kill,kill-majority,pause,split,merge,partition,loss,clock");
        // drain needs more nodes than the default 3; join and replace are asked for by name (the membership smoke run)
        assertThat(faults.defaultValue().split(",")).containsExactlyInAnyOrderElementsOf(
                names.stream().filter(n -> !List.of("drain", "join", "replace").contains(n)).toList());
        assertThat(String.join(" ", faults.description())).contains(names);
    }

    @Test
    void when_aCycleRunsPastTheNextFaultsStart_then_theScheduleMovesOn_soTheNextStartsAfterTheUsualGap() {
        long s = 1_000_000_000L;
        // faults every 10 s held 4 s: the next one starts 6 s after a heal
        assertThat(NemesisRun.rebase(0, 16 * s, 10 * s, 6 * s)).as("on time").isZero();
        assertThat(NemesisRun.rebase(0, 16 * s, 16 * s, 6 * s)).as("just on time").isZero();
        // a 30 s drain that started at 6 s ends at 36 s, 20 s past the next start: that one moves to 42 s
        long base = NemesisRun.rebase(0, 16 * s, 36 * s, 6 * s);
        assertThat(base).isEqualTo(26 * s);
        assertThat(base + 10 * s * 2 - 4 * s).as("the next fault's start, slot 1 from the new base").isEqualTo(42 * s);
    }

    @Test
    void when_thereAreMoreNodesThanReplicas_then_theServersGetTheFactorAndPlacement() throws Exception {
        NemesisCommand three = new NemesisCommand();
        three.nodes = 3;
        assertThat(three.membershipYaml()).isEmpty();
        NemesisCommand four = new NemesisCommand();
        four.nodes = 4;
        List<String> endpoints = List.of("127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103", "127.0.0.1:7104");
        // as the nemesis writes them: the merge section, then the membership ones
        List<Path> files = LocalClusterConfigs.write(tmp.resolve("conf"), endpoints, "memory", "electionTimeoutMs: 1000",
                "intervalMs: 1000", "merge:\n  timeoutMs: 4000\n" + four.membershipYaml());
        assertThat(files).hasSize(4);
        for (Path f : files) {
            ServerConfig c = ServerConfig.load(f);
            assertThat(c.cluster().peers()).isEqualTo(endpoints);
            assertThat(c.replicationFactor()).isEqualTo(3);
            assertThat(c.placement().enabled()).isTrue();
            assertThat(c.placement().intervalMs()).isEqualTo(1000);
            assertThat(c.merge().timeoutMs()).isEqualTo(4000);
        }
    }

    @Test
    void when_joinOrReplaceIsAmongTheFaults_then_threeNodesGetTheFactorAndPlacementToo() {
        NemesisCommand three = new NemesisCommand();
        three.nodes = 3;
        three.faults = List.of("kill", " replace");
        assertThat(three.membershipYaml()).contains("factor: 3").contains("placement:");
        three.faults = List.of("join");
        assertThat(three.membershipYaml()).contains("factor: 3");
        three.faults = List.of("kill", "pause");
        assertThat(three.membershipYaml()).isEmpty();
    }

    @Test
    void when_theSpareNodesYamlIsWritten_then_itJoinsTheFirstNodesAtItsOwnAddress_withTheirSettings() throws Exception {
        NemesisCommand four = new NemesisCommand();
        four.nodes = 4;
        List<String> endpoints = List.of("127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103", "127.0.0.1:7104");
        List<Path> files = LocalClusterConfigs.write(tmp.resolve("conf"), endpoints, "rocksdb", "electionTimeoutMs: 1000",
                "intervalMs: 1000", "merge:\n  timeoutMs: 4000\n" + four.membershipYaml());
        Path spare = tmp.resolve("conf/server-5.yaml");
        Files.writeString(spare, NemesisCommand.joinYaml(Files.readString(files.get(0)), "127.0.0.1:7105", endpoints));
        ServerConfig c = ServerConfig.load(spare);
        assertThat(c.endpoint()).isEqualTo("127.0.0.1:7105");
        assertThat(c.cluster().joining()).isTrue();
        assertThat(c.cluster().join()).isEqualTo(endpoints);
        assertThat(c.store().engine()).isEqualTo("rocksdb");
        assertThat(c.merge().timeoutMs()).isEqualTo(4000);
        assertThat(c.placement().intervalMs()).isEqualTo(1000);
    }

}
