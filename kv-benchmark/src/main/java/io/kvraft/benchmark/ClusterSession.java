package io.kvraft.benchmark;

import io.kvraft.client.KvClient;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.launch.ProcessCluster;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * The client, and the local cluster when the benchmark started one. Closing (explicitly or by the
 * shutdown hook on Ctrl-C) closes the client, stops the servers and deletes their data, once.
 */
public final class ClusterSession implements AutoCloseable {

    static final Duration READY_TIMEOUT = Duration.ofSeconds(60);
    /** The local cluster's node files in a conf dir: server-1.yaml, server-2.yaml, ... as many as follow on. */
    static List<Path> serverFiles(Path confDir) {
        List<Path> files = new java.util.ArrayList<>();
        for (int i = 1; Files.isRegularFile(confDir.resolve("server-" + i + ".yaml")); i++) {
            files.add(confDir.resolve("server-" + i + ".yaml"));
        }
        return files;
    }

    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread hook = new Thread(this::closeNow, "kv-benchmark-shutdown");
    private final PrintStream log;
    private volatile ProcessCluster cluster;
    private volatile Path dataRoot;
    private volatile Path confDir;
    private volatile List<String> serverJvmArgs = List.of();
    private volatile KvClient client;
    private ClientConfig clientConfig;

    private ClusterSession(PrintStream log) {
        this.log = log;
    }

    /**
     * Starts the local cluster if the options name no running one, then connects.
     *
     * @throws UsageException                                  bad --servers or missing server YAMLs
     * @throws io.kvraft.common.config.ConfigException         a bad client YAML
     */
    public static ClusterSession open(ClusterOptions c, String readMode, Boolean batching,
                                      Function<ClientConfig, KvClient> connector, PrintStream log) {
        ClusterSession s = new ClusterSession(log);
        Runtime.getRuntime().addShutdownHook(s.hook);
        try {
            ClientConfig config;
            if (c.embedded()) {
                Path confDir = c.effectiveConfDir();
                List<Path> files = serverFiles(confDir);
                if (files.isEmpty()) {
                    throw new UsageException(confDir.resolve("server-1.yaml") + ": no such file (--conf-dir names the"
                            + " directory of server-1.yaml, server-2.yaml, ... one per node; or give --servers or --config"
                            + " to drive a running cluster)");
                }
                s.confDir = confDir;
                s.dataRoot = Files.createTempDirectory("kv-benchmark-");
                log.println("starting a local " + files.size() + "-node cluster from " + confDir + " (data in "
                        + s.dataRoot + ")");
                s.serverJvmArgs = List.copyOf(c.serverJvmArgs);
                s.cluster = ProcessCluster.start(files, s.dataRoot, s.serverJvmArgs, READY_TIMEOUT);
                log.println("local cluster ready: " + String.join(",", s.cluster.servers()));
                Path clientYaml = confDir.resolve("client.yaml");
                config = Files.isRegularFile(clientYaml)
                        ? ClientConfig.load(clientYaml).withServers(s.cluster.servers())
                        : ClientConfig.of(s.cluster.servers());
            } else if (c.config != null) {
                config = ClientConfig.load(c.config);
                if (!c.servers.isEmpty()) {
                    config = config.withServers(parseServers(c.servers));
                }
            } else {
                config = ClientConfig.of(parseServers(c.servers));
            }
            if (readMode != null) {
                config = config.withReadMode(readMode);
            }
            if (batching != null) {
                config = config.withBatching(config.batching().withEnabled(batching));
            }
            s.clientConfig = config;
            s.client = connector.apply(config);
            return s;
        } catch (IOException e) {
            s.close();
            throw new IllegalStateException("cannot create the data directory: " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            s.close();
            throw e;
        }
    }

    private static List<String> parseServers(List<String> servers) {
        try {
            return ClientConfig.of(servers).servers();
        } catch (IllegalArgumentException e) {
            throw new UsageException("--servers: " + e.getMessage());
        }
    }

    /** PIDs of the local cluster's servers; empty when driving a running cluster. */
    public List<Long> localPids() {
        return cluster == null ? List.of() : cluster.pids();
    }

    /**
     * Regions each local server leads now, in node order, as each node tells of its own replicas (0 for one that
     * does not answer in 2 s); empty when driving a running cluster.
     */
    public List<Integer> localLeaderCounts() {
        ProcessCluster pc = cluster;
        if (pc == null) {
            return List.of();
        }
        Map<Integer, Integer> counts = pc.leaderCounts();
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < pc.pids().size(); i++) {
            out.add(counts.getOrDefault(i, 0));
        }
        return out;
    }

    /**
     * The local cluster's settings that a result depends on, one line per distinct set (usually one), each
     * naming the conf dir and the nodes it applies to, then the JVM arguments added with --server-jvm-arg (a
     * system property such as the simulated AppendEntries delay changes results too); empty when driving a
     * running cluster.
     */
    public List<String> localSettings() {
        return cluster == null ? List.of() : settingsLines(confDir, cluster.configs(), serverJvmArgs);
    }

    /**
     * One line per distinct {@link ServerConfig#summary()}, naming the nodes it applies to when they differ,
     * and one for the JVM arguments added to every node's, when there are any.
     */
    static List<String> settingsLines(Path confDir, List<ServerConfig> configs, List<String> addedJvmArgs) {
        Map<String, List<Integer>> nodesBySummary = new LinkedHashMap<>();
        for (int i = 0; i < configs.size(); i++) {
            nodesBySummary.computeIfAbsent(configs.get(i).summary(), k -> new ArrayList<>()).add(i + 1);
        }
        List<String> lines = new ArrayList<>();
        nodesBySummary.forEach((summary, nodes) -> lines.add("settings (" + confDir
                + (nodesBySummary.size() == 1 ? "" : ", node " + nodes) + "): " + summary));
        if (!addedJvmArgs.isEmpty()) {
            lines.add("server JVM args added: " + String.join(" ", addedJvmArgs));
        }
        return lines;
    }

    public KvClient client() {
        return client;
    }

    /** The client's effective configuration. */
    public ClientConfig clientConfig() {
        return clientConfig;
    }

    @Override
    public void close() {
        closeNow();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException | IllegalArgumentException ignored) {
            // shutting down already, or never added
        }
    }

    private void closeNow() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        KvClient c = client;
        if (c != null) {
            try {
                c.close();
            } catch (RuntimeException e) {
                log.println("closing the client: " + e);
            }
        }
        ProcessCluster pc = cluster;
        if (pc != null) {
            try {
                pc.close();
                log.println("local cluster stopped");
            } catch (RuntimeException e) {
                log.println("stopping the local cluster: " + e);
            }
        }
        Path d = dataRoot;
        if (d != null) {
            deleteQuietly(d);
        }
    }

    /** Deletes a directory tree, best effort (a temp directory). */
    public static void deleteQuietly(Path root) {
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException exc) throws IOException {
                    Files.deleteIfExists(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException ignored) {
            // best effort: it is a temp directory
        }
    }
}
