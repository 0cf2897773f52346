package io.kvraft.server.launch;

import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.config.ServerConfig;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * A local cluster of real server processes ({@code java ... ServerMain --config FILE}) on loopback,
 * used by the benchmark's embedded default and by process-level tests. Each node logs to
 * {@code dataRoot/nodeN.log}. Close stops every process it started, by PID, even on failure.
 */
public final class ProcessCluster implements AutoCloseable {

    /**
     * JVM options each server gets unless the caller gives its own. ParallelGC costs far less CPU than G1 here. Out of
     * heap a node exits (3) rather than answer on with Raft threads that died of it.
     */
    public static final List<String> DEFAULT_SERVER_JVM_ARGS = List.of("-Xms256m", "-Xmx768m", "-XX:+UseParallelGC",
            "-XX:+ExitOnOutOfMemoryError");

    /**
     * What a JVM of ours started with {@code -cp} needs for jraft, bolt and netty (with {@code -jar} the jar's
     * manifest gives it): the nodes here, the benchmark's lock holders.
     */
    public static final List<String> OPENS = List.of(
            "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.util=ALL-UNNAMED",
            "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED", "-Dio.netty.tryReflectionSetAccessible=true");

    private final List<Path> configFiles;
    private final List<ServerConfig> configs = new ArrayList<>();
    private final Path dataRoot;
    private final List<String> jvmArgs;
    private final Process[] processes;
    private final Launch launch;
    private final Thread shutdownHook = new Thread(this::close, "process-cluster-stop");

    /** Clusters started and not closed yet, so a test harness can say what they were doing when a test hung. */
    private static final java.util.Set<ProcessCluster> OPEN = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * How node i's JVM is launched beyond the defaults: a command prefix (e.g. {@code ip netns exec NS},
     * which execs the JVM so its PID is the one we hold) and extra environment (e.g. a faketime preload).
     */
    public record Launch(IntFunction<List<String>> prefix, IntFunction<Map<String, String>> env) {
        public static final Launch PLAIN = new Launch(i -> List.of(), i -> Map.of());
    }

    private ProcessCluster(List<Path> configFiles, Path dataRoot, List<String> jvmArgs, Launch launch) {
        this.launch = launch;
        this.configFiles = List.copyOf(configFiles);
        this.dataRoot = dataRoot;
        this.jvmArgs = List.copyOf(jvmArgs);
        this.processes = new Process[configFiles.size()];
        for (Path f : configFiles) {
            configs.add(ServerConfig.load(f));
        }
    }

    /**
     * Starts one JVM per server config file, each with its data under {@code dataRoot/nodeN}, and
     * waits up to {@code readyTimeout} until every region has a leader and leaders are balanced.
     * {@code extraJvmArgs} come after {@link #DEFAULT_SERVER_JVM_ARGS} (see {@link #serverJvmArgs}).
     */
    public static ProcessCluster start(List<Path> configFiles, Path dataRoot, List<String> extraJvmArgs,
                                       Duration readyTimeout) {
        return start(configFiles, dataRoot, extraJvmArgs, readyTimeout, Launch.PLAIN);
    }

    /** As above, each node launched as {@code launch} says. */
    public static ProcessCluster start(List<Path> configFiles, Path dataRoot, List<String> extraJvmArgs,
                                       Duration readyTimeout, Launch launch) {
        return start(configFiles, dataRoot, extraJvmArgs, readyTimeout, launch, configFiles.size());
    }

    /**
     * As above, starting only the first {@code started} nodes; the others are spare slots (e.g. a node that joins
     * later with {@code cluster.join}), started by {@link #startNode} when wanted, and stopped by {@link #close} like
     * the rest.
     */
    public static ProcessCluster start(List<Path> configFiles, Path dataRoot, List<String> extraJvmArgs,
                                       Duration readyTimeout, Launch launch, int started) {
        if (started < 1 || started > configFiles.size()) {
            throw new IllegalArgumentException("started: 1 to " + configFiles.size() + ", got " + started);
        }
        ProcessCluster c = new ProcessCluster(configFiles, dataRoot, serverJvmArgs(extraJvmArgs), launch);
        Runtime.getRuntime().addShutdownHook(c.shutdownHook);
        OPEN.add(c);
        try {
            for (int i = 0; i < started; i++) {
                c.startNode(i);
            }
            c.awaitReady(readyTimeout);
            return c;
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /**
     * The defaults, then the extra arguments, so that an extra argument such as a profiler agent adds to the
     * defaults instead of silently dropping the heap limits and the collector. A default is left out where an
     * extra one takes its place: the JVM refuses two collectors, and an initial heap above the maximum.
     */
    static List<String> serverJvmArgs(List<String> extraJvmArgs) {
        boolean collector = extraJvmArgs.stream().anyMatch(a -> a.matches("-XX:\\+Use\\w*GC"));
        boolean maxHeap = extraJvmArgs.stream().anyMatch(a -> a.startsWith("-Xmx"));
        boolean initialHeap = extraJvmArgs.stream().anyMatch(a -> a.startsWith("-Xms"));
        List<String> args = new ArrayList<>();
        for (String a : DEFAULT_SERVER_JVM_ARGS) {
            boolean replaced = (collector && a.matches("-XX:\\+Use\\w*GC"))
                    || (maxHeap && a.startsWith("-Xmx"))
                    || ((maxHeap || initialHeap) && a.startsWith("-Xms"));
            if (!replaced) {
                args.add(a);
            }
        }
        args.addAll(extraJvmArgs);
        return List.copyOf(args);
    }

    /** Node i's data directory ({@code dataRoot/nodeN}), given to it with --data-dir. */
    public Path dataDir(int i) {
        return dataRoot.resolve("node" + (i + 1));
    }

    /** Starts (or restarts) node i with its data dir kept. */
    public void startNode(int i) {
        Path dataDir = dataDir(i);
        List<String> cmd = new ArrayList<>(launch.prefix().apply(i));
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(OPENS);
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), "io.kvraft.server.launch.ServerMain",
                "--config", configFiles.get(i).toString(), "--data-dir", dataDir.toString()));
        try {
            Files.createDirectories(dataRoot);
            ProcessBuilder pb = new ProcessBuilder(cmd);
            pb.environment().putAll(launch.env().apply(i));
            processes[i] = pb
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(dataRoot.resolve("node" + (i + 1) + ".log").toFile()))
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start node " + (i + 1), e);
        }
    }

    /** kill -9 of node i. */
    public void kill(int i) {
        Process p = processes[i];
        if (p != null) {
            p.destroyForcibly();
            waitFor(p, 10);
            processes[i] = null;
        }
    }

    /** Whether node i's process is running (a paused one is). */
    public boolean isRunning(int i) {
        Process p = processes[i];
        return p != null && p.isAlive();
    }

    /** SIGTERM to node i, without waiting; see {@link #awaitExit}. */
    public void signalTerm(int i) {
        signal(i, "TERM");
    }

    /**
     * Waits up to {@code timeout} for node i to exit.
     *
     * @return its exit code, or -1 if it is still running
     */
    public int awaitExit(int i, Duration timeout) {
        Process p = processes[i];
        if (p == null) {
            throw new IllegalStateException("node " + (i + 1) + " was not started");
        }
        if (!waitFor(p, Math.max(1, (int) timeout.toSeconds()))) {
            return -1;
        }
        processes[i] = null;
        return p.exitValue();
    }

    /** SIGSTOP to node i: it stops dead, sockets open, until {@link #resume}. */
    public void pause(int i) {
        signal(i, "STOP");
    }

    /** SIGCONT to node i. */
    public void resume(int i) {
        signal(i, "CONT");
    }

    private void signal(int i, String sig) {
        Process p = processes[i];
        if (p == null) {
            throw new IllegalStateException("node " + (i + 1) + " is not running");
        }
        try {
            Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).redirectErrorStream(true).start();
            if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
                throw new IllegalStateException("kill -" + sig + " " + p.pid() + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run kill", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
    }

    /**
     * Leader count per node index, as each running node reports its own roles; a node that does not
     * answer within 2 s counts 0.
     */
    public Map<Integer, Integer> leaderCounts() {
        Map<Integer, Integer> counts = new HashMap<>();
        try (Transport transport = new Transport(configs.get(0).tls())) {
            for (int i = 0; i < processes.length; i++) {
                counts.put(i, 0);
                if (processes[i] == null) {
                    continue;
                }
                try {
                    RegionsResponse resp = transport.<RegionsResponse>call(configs.get(i).endpoint(),
                            RegionsRequest.getDefaultInstance(), 2000).join();
                    counts.put(i, (int) resp.getRegionsList().stream().filter(r -> r.getRole().equals("LEADER")).count());
                } catch (RuntimeException e) {
                    // not answering: no leaders we can count
                }
            }
        }
        return counts;
    }

    /** Null when every region has a leader in every running node's view (balanced or not), else why not. */
    public String unled() {
        try (Transport transport = new Transport(configs.get(0).tls())) {
            return readiness(transport, false);
        }
    }

    /**
     * SIGTERM to node i, then waits up to {@code timeout} for it to exit.
     *
     * @return its exit code, or -1 if it was still running at the timeout (it is then killed)
     */
    public int terminate(int i, Duration timeout) {
        Process p = processes[i];
        if (p == null) {
            throw new IllegalStateException("node " + (i + 1) + " is not running");
        }
        p.destroy();
        boolean exited = waitFor(p, Math.max(1, (int) timeout.toSeconds()));
        if (!exited) {
            p.destroyForcibly();
            waitFor(p, 10);
        }
        processes[i] = null;
        return exited ? p.exitValue() : -1;
    }

    /** Waits until every region has a leader in every running node's view and leaders are balanced. */
    public void awaitReady(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "no answer yet";
        // a node's keystore identifies this process too when the nodes require mutual TLS
        try (Transport transport = new Transport(configs.get(0).tls())) {
            while (System.nanoTime() < deadline) {
                for (int i = 0; i < processes.length; i++) {
                    if (processes[i] != null && !processes[i].isAlive()) {
                        throw new IllegalStateException("node " + (i + 1) + " exited with code " + processes[i].exitValue()
                                + "; see " + dataRoot.resolve("node" + (i + 1) + ".log"));
                    }
                }
                last = readiness(transport, true);
                if (last == null) {
                    return;
                }
                try {
                    Thread.sleep(100); // polling interval between readiness checks
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for the cluster");
                }
            }
        }
        throw new IllegalStateException("cluster not ready within " + timeout.toSeconds() + " s: " + last);
    }

    /** null when ready, else why not. */
    private String readiness(Transport transport, boolean balanced) {
        Map<String, Integer> leaders = new HashMap<>();
        int running = 0;
        java.util.Set<Integer> regions = new java.util.HashSet<>(); // each node lists the regions it holds
        for (int i = 0; i < processes.length; i++) {
            if (processes[i] == null) {
                continue;
            }
            running++;
            RegionsResponse resp;
            try {
                resp = transport.<RegionsResponse>call(configs.get(i).endpoint(), RegionsRequest.getDefaultInstance(), 2000)
                        .join();
            } catch (RuntimeException e) {
                return "node " + (i + 1) + ": " + KvException.unwrap(e).getMessage();
            }
            if (resp.hasError() && resp.getError().getCode() != ErrorCode.OK) {
                // a new node waiting for the cluster map lists no region yet: not a cluster with nothing to lead
                return "node " + (i + 1) + ": " + resp.getError().getCode() + " " + resp.getError().getDetail();
            }
            for (RegionInfo r : resp.getRegionsList()) {
                regions.add(r.getId());
                if (r.getLeader().isEmpty()) {
                    return "region " + r.getId() + " has no leader in node " + (i + 1) + "'s view";
                }
                if (r.getRole().equals("LEADER")) {
                    leaders.merge(resp.getNode(), 1, Integer::sum);
                }
            }
        }
        int regionCount = regions.size();
        int led = leaders.values().stream().mapToInt(Integer::intValue).sum();
        if (led != regionCount) {
            return led + " of " + regionCount + " regions led";
        }
        if (balanced && configs.get(0).balance().enabled() && running > 0) {
            int share = regionCount / running;
            int most = share + (regionCount % running == 0 ? 0 : 1);
            if (leaders.size() < Math.min(running, regionCount)
                    || leaders.values().stream().anyMatch(c -> c < share || c > most)) {
                return "leaders not balanced yet: " + leaders;
            }
        }
        return null;
    }

    /** The servers' configurations, in config file order. */
    public List<ServerConfig> configs() {
        return List.copyOf(configs);
    }

    /** The servers' client addresses, host:port. */
    public List<String> servers() {
        return configs.stream().map(ServerConfig::endpoint).toList();
    }

    /** PIDs of the running server processes, in config order (-1 for a stopped node). */
    public List<Long> pids() {
        List<Long> pids = new ArrayList<>();
        for (Process p : processes) {
            pids.add(p == null ? -1L : p.pid());
        }
        return pids;
    }

    public Path dataRoot() {
        return dataRoot;
    }

    /** The clusters of this JVM that are started and not closed. */
    public static List<ProcessCluster> open() {
        return List.copyOf(OPEN);
    }

    /** Each node: endpoint, pid and whether it runs, then the last {@code logLines} lines of its log. */
    public String describe(int logLines) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < processes.length; i++) {
            Process p = processes[i];
            b.append("node").append(i + 1).append(' ').append(configs.get(i).endpoint()).append(": ")
                    .append(p == null ? "not started" : "pid " + p.pid() + (p.isAlive() ? " running" : " exited " + p.exitValue()))
                    .append('\n');
            Path log = dataRoot.resolve("node" + (i + 1) + ".log");
            try {
                List<String> lines = java.nio.file.Files.readAllLines(log);
                lines.subList(Math.max(0, lines.size() - logLines), lines.size()).forEach(l -> b.append("  ").append(l).append('\n'));
            } catch (java.io.IOException | java.io.UncheckedIOException e) {
                b.append("  (no log at ").append(log).append(")\n");
            }
        }
        return b.toString();
    }

    /** SIGTERM to every node, then SIGKILL to any still running after 15 s. */
    @Override
    public synchronized void close() {
        OPEN.remove(this);
        for (Process p : processes) {
            if (p != null) {
                p.destroy();
            }
        }
        for (int i = 0; i < processes.length; i++) {
            Process p = processes[i];
            if (p != null && !waitFor(p, 15)) {
                p.destroyForcibly();
                waitFor(p, 10);
            }
            processes[i] = null;
        }
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException alreadyShuttingDown) {
            // called from the hook itself
        }
    }

    private static boolean waitFor(Process p, int seconds) {
        try {
            return p.waitFor(seconds, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
