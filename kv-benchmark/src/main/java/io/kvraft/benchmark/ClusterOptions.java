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
            description = "Without --servers or --config, start a local 3-node cluster from DIR/server-1.yaml,"
                    + " server-2.yaml and server-3.yaml (default: ${DEFAULT-VALUE}).")
    Path confDir;

    @Option(names = "--server-jvm-arg", paramLabel = "ARG",
            description = "An extra JVM argument for the local cluster's servers (repeatable), e.g. -Xmx2g.")
    List<String> serverJvmArgs = new ArrayList<>();

    boolean embedded() {
        return config == null && servers.isEmpty();
    }
}
