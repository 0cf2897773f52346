package io.kvraft.server;

import io.kvraft.client.config.ConfigException;
import io.kvraft.server.config.ServerConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/** {@code java -jar kv-server.jar --config conf/server-1.yaml}: runs one node until SIGTERM. */
@Command(name = "kv-server", mixinStandardHelpOptions = true, version = "kv-server 0.1.0",
        description = "Runs one node of the replicated key-value store: every region's Raft group on one port.")
public final class ServerMain implements Callable<Integer> {

    @Option(names = "--config", required = true, paramLabel = "FILE", description = "the node's YAML, e.g. conf/server-1.yaml")
    Path config;

    @Option(names = "--data-dir", paramLabel = "DIR", description = "overrides dataDir of the YAML")
    Path dataDir;

    public static void main(String[] args) {
        io.kvraft.client.rpc.BoltLogging.init();
        int code = new CommandLine(new ServerMain()).execute(args);
        if (code != 0) {
            System.exit(code);
        }
    }

    @Override
    public Integer call() throws Exception {
        ServerConfig cfg;
        try {
            cfg = ServerConfig.load(config);
        } catch (ConfigException e) {
            System.err.println("kv-server: " + e.getMessage());
            return 2;
        }
        if (dataDir != null) {
            cfg = cfg.withDataDir(dataDir.toString());
        }
        KvServer server;
        try {
            server = KvServer.start(cfg);
        } catch (Exception e) {
            System.err.println("kv-server: cannot start node " + cfg.endpoint() + ": " + e.getMessage());
            return 3;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close();
            stopped.countDown();
        }, "kv-shutdown"));
        stopped.await();
        return 0;
    }
}
