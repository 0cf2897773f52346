package io.kvraft.server.launch;

import io.kvraft.server.BoltWheel;
import io.kvraft.server.IdleMemory;
import io.kvraft.server.JraftDefaults;
import io.kvraft.server.KvServer;

import io.kvraft.common.config.ConfigException;
import io.kvraft.server.config.ServerConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/** {@code java -jar kv-server.jar --config conf/server-1.yaml}: runs one node until SIGTERM. */
@Command(name = "kv-server", mixinStandardHelpOptions = true, version = "kv-server 0.1.0",
        description = "Runs one node of the replicated key-value store: every region's Raft group on one port.",
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
                "0:stopped by SIGTERM or SIGINT (leaders handed over, requests finished, store closed)",
                "1:forced stop: a second SIGTERM, or the shutdown took longer than shutdown.timeoutMs",
                "2:bad command line or config file (missing, unreadable, malformed or invalid)",
                "3:cannot start: data directory (not writable, made for the other engine, unreadable state, a Raft log or RocksDB store"
                        + " whose table files fail their checksums) or port in use;"
                        + " also the JVM's own exit when the heap runs out, with -XX:+ExitOnOutOfMemoryError",
                "4:refused by the cluster: removed, or the data directory is another cluster's",
                "5:a region's or the cluster map's Raft log (or snapshot, or Raft meta), or the store, could not be written or synced, or a log entry could not be read: the node stops rather"
                        + " than serve on a disk that lost writes; restarted, it recovers from its log and its peers"},
        footer = "%nEvery failure to start is one line on stderr, starting with 'kv-server:'.")
public final class ServerMain implements Callable<Integer> {

    @Option(names = "--config", required = true, paramLabel = "FILE", description = "the node's YAML, e.g. conf/server-1.yaml")
    Path config;

    @Option(names = "--data-dir", paramLabel = "DIR", description = "overrides dataDir of the YAML")
    Path dataDir;

    public static void main(String[] args) {
        JraftDefaults.apply();
        IdleMemory.apply();
        boltWheelKept = BoltWheel.apply();
        io.kvraft.common.rpc.BoltLogging.init();
        int code = new CommandLine(new ServerMain()).execute(args);
        if (code != 0) {
            System.exit(code);
        }
    }

    /** Why bolt keeps its 10 ms timeout wheel in this JVM, or null when the node gave it {@link BoltWheel}'s. */
    private static String boltWheelKept;

    static final int EXIT_BAD_CONFIG = 2;
    static final int EXIT_CANNOT_START = 3;
    /** The cluster refused the node: it was removed, or its data directory is another cluster's. */
    static final int EXIT_REFUSED = 4;
    /** A region's or the cluster map's group stopped for its storage (a Raft log that could not sync): fail-stop. */
    static final int EXIT_STORAGE_FAILED = 5;

    @Override
    public Integer call() throws Exception {
        ServerConfig cfg;
        try {
            cfg = ServerConfig.load(config);
            if (dataDir != null) {
                cfg = cfg.withDataDir(dataDir.toString());
            }
        } catch (ConfigException e) {
            System.err.println("kv-server: " + e.getMessage());
            return EXIT_BAD_CONFIG;
        } catch (RuntimeException e) {
            System.err.println("kv-server: " + config + ": " + oneLine(e));
            return EXIT_BAD_CONFIG;
        }
        LogLevels.apply(cfg.logging().level());
        org.slf4j.LoggerFactory.getLogger(ServerMain.class).info("config {} loaded: node {}, peers {}, {} regions, engine {}, log level {}", config, cfg.endpoint(),
                cfg.cluster().peers(), cfg.cluster().regionCount(), cfg.store().engine(), cfg.logging().level());
        if (boltWheelKept != null) {
            org.slf4j.LoggerFactory.getLogger(ServerMain.class).info("bolt's timeout wheel keeps its 10 ms tick: {}", boltWheelKept);
        }
        GracefulShutdown shutdown = GracefulShutdown.install(cfg.shutdown().timeoutMs());
        KvServer server;
        try {
            server = KvServer.start(cfg);
        } catch (Exception | LinkageError e) {
            // bad disk state, a taken port, a missing native library: one line, never a stack trace
            System.err.println("kv-server: cannot start node " + cfg.endpoint() + ": " + oneLine(e));
            return EXIT_CANNOT_START;
        }
        shutdown.attach(server::shutdownGracefully);
        server.onStorageFailed(why -> {
            // fail-stop: a log whose fsync failed may have lost what it said it wrote (a later fsync does not bring
            // those pages back); no close, which would write through it again: the restart replays what is durable
            System.err.println("kv-server: node " + server.config().endpoint() + " stops: " + why);
            org.slf4j.LoggerFactory.getLogger(ServerMain.class).error("node {} stops (exit {}): {}",
                    server.config().endpoint(), EXIT_STORAGE_FAILED, why);
            Runtime.getRuntime().halt(EXIT_STORAGE_FAILED);
        });
        server.onRefused(why -> {
            // removed for good, or a data directory of another cluster: say so and stop, not serve a stale copy
            System.err.println("kv-server: node " + server.config().endpoint() + " refused by the cluster: " + why);
            server.close();
            Runtime.getRuntime().halt(EXIT_REFUSED);
        });
        new CountDownLatch(1).await(); // the shutdown thread ends the process
        return 0;
    }

    /**
     * The message of {@code e} on one line, with its causes' messages where they add something (wrappers
     * such as UncheckedIOException often say only "cannot create X" and keep the reason in the cause).
     */
    static String oneLine(Throwable e) {
        StringBuilder sb = new StringBuilder();
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable t = e; t != null && seen.add(t) && seen.size() <= 4; t = t.getCause()) {
            String m = t.getMessage();
            if (t.getCause() != null && t.getCause().toString().equals(m)) {
                continue; // a wrapper made of its cause, e.g. UncheckedIOException(IOException): the cause says it better
            }
            if (m == null || m.isBlank()) {
                m = t.getClass().getSimpleName();
            } else if (t instanceof java.nio.file.FileSystemException || m.equals(t.getClass().getName())) {
                m = t.getClass().getSimpleName() + ": " + m;
            }
            m = m.lines().map(String::strip).filter(l -> !l.isEmpty()).findFirst().orElse(m);
            if (sb.indexOf(m) >= 0) {
                continue; // wrappers that repeat their cause's message
            }
            if (sb.length() > 0) {
                sb.append(": ");
            }
            sb.append(m);
        }
        return sb.toString();
    }
}
