package io.kvraft.server;

import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.region.LeaderBalancer;
import io.kvraft.server.region.Region;
import io.kvraft.server.region.RegionHost;
import io.kvraft.server.rpc.KvHandlers;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.MemoryStore;
import io.kvraft.server.store.RocksStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * One node: its store, its region groups on one RPC port, the KV handlers and the leader balancer.
 * {@code start} returns once the node listens; regions elect in the background.
 */
public final class KvServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(KvServer.class);

    private final ServerConfig config;
    private final KvStore store;
    private final ScheduledExecutorService housekeeping;
    private final RegionHost host;
    private final KvHandlers handlers;
    private volatile boolean closed;

    private KvServer(ServerConfig config) throws IOException {
        this.config = config;
        Path dataDir = Path.of(config.dataDir());
        DataDir.prepare(dataDir, config.store().engine());
        this.store = openStore(config, dataDir);
        this.housekeeping = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kv-housekeeping");
            t.setDaemon(true);
            return t;
        });
        try {
            this.host = new RegionHost(config, store, housekeeping);
        } catch (RuntimeException e) {
            housekeeping.shutdownNow();
            store.close();
            throw e;
        }
        this.handlers = new KvHandlers(host, store, config.limits());
        host.registerHandlers(handlers::register);
    }

    public static KvServer start(ServerConfig config) throws IOException {
        KvServer server = new KvServer(config);
        try {
            server.host.start();
        } catch (RuntimeException e) {
            server.close();
            throw e;
        }
        if (config.balance().enabled()) {
            long ms = config.balance().intervalMs();
            server.housekeeping.scheduleWithFixedDelay(new LeaderBalancer(server.host), ms, ms, TimeUnit.MILLISECONDS);
        }
        LOG.info("node {} started: engine {}, {} regions, data in {}", config.endpoint(), config.store().engine(),
                server.host.regions().size(), config.dataDir());
        return server;
    }

    private static KvStore openStore(ServerConfig config, Path dataDir) throws IOException {
        var s = config.store();
        return switch (s.engine()) {
            case "memory" -> new MemoryStore();
            case "rocksdb" -> RocksStore.open(dataDir.resolve("store"), s.blockCacheBytes(), s.writeBufferBytes(),
                    s.compression());
            default -> throw new IllegalArgumentException("unknown engine " + s.engine());
        };
    }

    public ServerConfig config() {
        return config;
    }

    public RegionHost host() {
        return host;
    }

    public KvStore store() {
        return store;
    }

    /** Regions this node currently leads. */
    public long leaderCount() {
        return host.regions().stream().filter(Region::isLeader).count();
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        handlers.beginShutdown();
        housekeeping.shutdownNow();
        host.close();
        try {
            store.close();
        } catch (IOException e) {
            LOG.warn("closing store: {}", e.toString());
        }
        LOG.info("node {} stopped", config.endpoint());
    }
}
