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

    /**
     * A port that was free a moment ago: one the system picks (from its ephemeral range), or, with the system property
     * {@value #PORTS_PROPERTY} set to {@code FROM-TO}, the next free one of that range. Test JVMs that run side by side
     * each get a range of their own below the ephemeral one (the build sets it per fork): a port one JVM picked
     * cannot then be taken by the other's pick, nor by an outgoing connection, before the server binds it.
     */
    public static int freePort() {
        int[] range = portRange();
        if (range == null) {
            return bindable(0);
        }
        for (int tries = 0; tries <= range[1] - range[0]; tries++) {
            int port = range[0] + Math.floorMod(NEXT_PORT.getAndIncrement(), range[1] - range[0] + 1);
            try {
                return bindable(port);
            } catch (UncheckedIOException taken) {
                // in use (a server of an earlier test still closing, or another program): the next one
            }
        }
        throw new IllegalStateException("no free port in " + System.getProperty(PORTS_PROPERTY) + " (" + PORTS_PROPERTY + ")");
    }

    /** The system property that names the range {@link #freePort} takes ports from, {@code FROM-TO}. */
    public static final String PORTS_PROPERTY = "kv.test.ports";
    private static final java.util.concurrent.atomic.AtomicInteger NEXT_PORT = new java.util.concurrent.atomic.AtomicInteger();

    private static int[] portRange() {
        String value = System.getProperty(PORTS_PROPERTY, "").strip();
        if (value.isEmpty()) {
            return null;
        }
        String[] parts = value.split("-");
        try {
            int from = Integer.parseInt(parts[0].strip());
            int to = Integer.parseInt(parts[1].strip());
            if (parts.length == 2 && from >= 1024 && from <= to && to <= 65535) {
                return new int[]{from, to};
            }
        } catch (RuntimeException bad) {
            // told below
        }
        throw new IllegalArgumentException(PORTS_PROPERTY + " must be FROM-TO (1024 <= FROM <= TO <= 65535), got '" + value + "'");
    }

    private static int bindable(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new java.net.InetSocketAddress("127.0.0.1", port));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
