package io.kvraft.benchmark;

import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** picocli mixin: which cluster to drive. */
public final class ClusterOptions {

    @Option(names = "--servers", split = ",", paramLabel = "HOST:PORT",
            description = "Drive this running cluster (seed servers, comma-separated) instead of starting one.")
    List<String> servers = new ArrayList<>();

    @Option(names = "--config", paramLabel = "FILE",
            description = "Client YAML (e.g. conf/client.yaml): drive the running cluster it names; --servers, when"
                    + " also given, replaces its servers.")
    Path config;

    @Option(names = "--conf-dir", defaultValue = "conf", paramLabel = "DIR",
            description = "Without --servers or --config, start a local cluster of one node per DIR/server-N.yaml"
                    + " (server-1.yaml, server-2.yaml, ...; conf/ has 3, conf/five-nodes/ 5 with 3 replicas per region),"
                    + " with DIR/client.yaml for the client when present (default: ${DEFAULT-VALUE}).")
    Path confDir;

    @Option(names = "--scenario", paramLabel = "NAME",
            description = "Run one of the reference scenarios on a local cluster: s1 (MemoryDB, batching, pipeline),"
                    + " s2 (RocksDB, batching, pipeline), s3 (MemoryDB, no batching: one RPC and one log entry per"
                    + " put), s4 (as s3, no pipeline: a leader keeps 2 AppendEntries outstanding per follower, not 257),"
                    + " s3b (as s3, but the leader still coalesces requests into"
                    + " log entries), e (s1's servers for the scan-heavy YCSB E workload: add its options with"
                    + " @conf/scenarios/e-memory-scan/benchmark.args); the same as --conf-dir <conf-dir>/scenarios/<s1-...>.")
    String scenario;

    @Option(names = "--server-jvm-arg", paramLabel = "ARG",
            description = "An extra JVM argument for the local cluster's servers (repeatable), e.g. -Xmx2g; added"
                    + " after the defaults -Xms256m -Xmx768m -XX:+UseParallelGC (an -Xmx, -Xms or -XX:+Use...GC of yours"
                    + " replaces the default one); -Dkv.fault.appendEntriesDelayMicros=1000 gives replication a 1 ms"
                    + " round trip. The report of a benchmark run (not of a sweep) lists them.")
    List<String> serverJvmArgs = new ArrayList<>();

    /** The directory of the local cluster's YAML files: --conf-dir, or the scenario's directory under it. */
    Path effectiveConfDir() {
        if (scenario == null) {
            return confDir;
        }
        Path root = confDir.resolve("scenarios");
        try (var dirs = java.nio.file.Files.list(root)) {
            List<Path> match = dirs.filter(d -> d.getFileName().toString().startsWith(scenario.toLowerCase() + "-")
                    || d.getFileName().toString().equals(scenario)).toList();
            if (match.size() != 1) {
                throw new UsageException("--scenario " + scenario + ": expected one of s1, s2, s3, s4, s3b, e (directories in "
                        + root + ")");
            }
            return match.get(0);
        } catch (java.io.IOException e) {
            throw new UsageException("--scenario: cannot list " + root + ": " + e.getMessage());
        }
    }

    boolean embedded() {
        return config == null && servers.isEmpty();
    }
}
