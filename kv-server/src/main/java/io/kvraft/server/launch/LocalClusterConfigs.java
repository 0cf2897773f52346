package io.kvraft.server.launch;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes server YAML files for a local cluster on free loopback ports, for tests that start real
 * server processes. The files are ordinary configs, like those in conf/.
 */
public final class LocalClusterConfigs {

    private LocalClusterConfigs() {
    }

    /**
     * Writes {@code dir/server-N.yaml} for {@code nodes} nodes with 24 regions.
     *
     * @param extraYaml appended to every file at top level (e.g. a {@code limits:} section), may be empty
     */
    public static List<Path> write(Path dir, int nodes, String engine, int electionTimeoutMs, String extraYaml) {
        return write(dir, nodes, engine, "electionTimeoutMs: " + electionTimeoutMs, "intervalMs: 300", extraYaml);
    }

    /**
     * As above, with the keys of the {@code raft:} and {@code balance:} sections given as YAML lines
     * (one {@code key: value} per line, not indented).
     */
    public static List<Path> write(Path dir, int nodes, String engine, String raftKeys, String balanceKeys,
                                   String extraYaml) {
        List<String> peers = new ArrayList<>();
        for (int port : freePorts(nodes)) {
            peers.add("127.0.0.1:" + port);
        }
        return write(dir, peers, engine, raftKeys, balanceKeys, extraYaml);
    }

    /** As above, for nodes at the given {@code host:port} endpoints (e.g. addresses in network namespaces). */
    public static List<Path> write(Path dir, List<String> peers, String engine, String raftKeys, String balanceKeys,
                                   String extraYaml) {
        int nodes = peers.size();
        List<Path> files = new ArrayList<>();
        try {
            Files.createDirectories(dir);
            for (int i = 0; i < nodes; i++) {
                Path f = dir.resolve("server-" + (i + 1) + ".yaml");
                Files.writeString(f, """
                        endpoint: %s
                        dataDir: %s
                        cluster:
                          peers: [%s]
                          regionCount: 24
                        store:
                          engine: %s
                          blockCacheBytes: 8388608
                          writeBufferBytes: 4194304
                        raft:
                        %s
                        balance:
                        %s
                        """.formatted(peers.get(i), dir.resolve("data-" + (i + 1)), String.join(", ", peers), engine,
                        indent(raftKeys), indent(balanceKeys)) + extraYaml);
                files.add(f);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    private static String indent(String keys) {
        return keys.strip().lines().map(l -> "  " + l.strip()).collect(java.util.stream.Collectors.joining("\n"));
    }

    /**
     * {@code count} distinct ports that were free a moment ago: one port at a time, the system may hand out a port
     * it has just handed out again once the probing socket is closed.
     */
    public static List<Integer> freePorts(int count) {
        java.util.LinkedHashSet<Integer> ports = new java.util.LinkedHashSet<>();
        while (ports.size() < count) {
            ports.add(freePort());
        }
        return List.copyOf(ports);
    }

    /** A port that was free a moment ago. */
    public static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
