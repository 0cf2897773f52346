package io.kvraft.server.launch;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.rpc.Transport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The forced end of a graceful shutdown, on a node process: with both peers frozen (SIGSTOP), the node's writes
 * cannot commit and its leaders cannot be handed over, so its shutdown cannot finish soon; a second SIGTERM halts it
 * at once with exit code 1 and says why in the log. The shutdown timeout's halt is {@code ShutdownSignalsTest}'s:
 * each step of a shutdown is bounded, so a real one outlasts its timeout only by chance.
 */
class ForcedExitTest {

    private static final List<String> JVM = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dlogback.configurationFile=logback.xml");

    @TempDir
    Path dir;

    @Test
    void when_aSecondSigtermArrivesDuringAStuckShutdown_then_theNodeHaltsWithExit1() throws Exception {
        // a shutdown timeout far beyond the test's deadlines: an exit can only come from the second signal
        try (ProcessCluster cluster = startWithShutdownTimeout(3_600_000); Transport writes = new Transport()) {
            Path log = dir.resolve("data").resolve("node1.log");
            freezePeersWithWritesInFlight(cluster, writes);
            try {
                cluster.signalTerm(0);
                await().atMost(120, SECONDS).until(() -> Files.readString(log).contains("SIGTERM: shutting down"));
                cluster.signalTerm(0);
                assertThat(cluster.awaitExit(0, Duration.ofSeconds(120))).isEqualTo(1);
                assertThat(Files.readString(log)).contains("second SIGTERM: halting now")
                        .doesNotContain("shutdown did not finish within");
            } catch (AssertionError | RuntimeException e) {
                describe(cluster, log);
                throw e;
            } finally {
                cluster.resume(1);
                cluster.resume(2);
            }
        }
    }

    /** On a failure: whether node 1 still runs, the last lines of its log and of the nodes' GC logs, to tell a stuck JVM from a lost signal. */
    private void describe(ProcessCluster cluster, Path log) {
        System.err.println("node 1 running: " + cluster.isRunning(0));
        List<Path> logs = new java.util.ArrayList<>(List.of(log));
        try (var gcLogs = Files.list(dir)) {
            gcLogs.filter(p -> p.getFileName().toString().startsWith("gc-")).sorted().forEach(logs::add);
        } catch (java.io.IOException e) {
            System.err.println("cannot list " + dir + ": " + e);
        }
        for (Path p : logs) {
            try {
                List<String> lines = Files.readAllLines(p);
                System.err.println("--- last lines of " + p);
                lines.subList(Math.max(0, lines.size() - 60), lines.size()).forEach(System.err::println);
            } catch (java.io.IOException e) {
                System.err.println("cannot read " + p + ": " + e);
            }
        }
    }

    private ProcessCluster startWithShutdownTimeout(int timeoutMs) {
        List<Path> configs = LocalClusterConfigs.write(dir.resolve("conf"), 3, "memory", 1000, """
                shutdown:
                  timeoutMs: %d
                """.formatted(timeoutMs));
        List<String> jvm = new java.util.ArrayList<>(JVM);
        jvm.add("-Xlog:gc:file=" + dir.resolve("gc-%p.log"));
        return ProcessCluster.start(configs, dir.resolve("data"), jvm, Duration.ofSeconds(120));
    }

    /**
     * SIGSTOP nodes 2 and 3, then send node 1 writes for the regions it leads over {@code t}, which the caller keeps
     * open: they cannot commit, and the shutdown's drain waits for them.
     */
    private static void freezePeersWithWritesInFlight(ProcessCluster cluster, Transport t) {
        String node = cluster.servers().get(0);
        RegionsResponse regions = t.<RegionsResponse>call(node, RegionsRequest.getDefaultInstance(), 5000).join();
        cluster.pause(1);
        cluster.pause(2);
        for (RegionInfo r : regions.getRegionsList()) {
            if (r.getRole().equals("LEADER")) {
                byte[] key = r.getStartKey().concat(ByteString.copyFromUtf8("\0stuck")).toByteArray();
                t.call(node, WriteRequest.newBuilder().setRegionId(r.getId()).setRegionEpoch(r.getEpoch())
                        .addOps(WriteOp.newBuilder().setType(WriteOpType.PUT).setKey(ByteString.copyFrom(key))
                                .setValue(ByteString.copyFromUtf8("v"))).build(), 120_000);
            }
        }
    }
}
