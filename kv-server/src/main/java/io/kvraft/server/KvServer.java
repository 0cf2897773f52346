package io.kvraft.server;

import io.kvraft.server.launch.ServerMain;

import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.metrics.NodeMetrics;
import io.kvraft.server.balance.LeaderBalancer;
import io.kvraft.server.region.Region;
import io.kvraft.server.host.RegionHost;
import io.kvraft.server.host.Uninterruptible;
import io.kvraft.server.rpc.AdminHandlers;
import io.kvraft.server.rpc.DataHandlers;
import io.kvraft.server.rpc.RequestGate;
import io.kvraft.server.store.DiskGuard;
import io.kvraft.server.store.HeapGuard;
import io.kvraft.server.store.WriteRoom;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.MemoryStore;
import io.kvraft.server.store.RocksStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.UnaryOperator;

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
    /** Whether the node takes requests, and how many it has in flight. */
    private final RequestGate gate;
    private final io.kvraft.server.backup.BackupSessions backups;
    private final java.util.concurrent.ExecutorService backupPages;
    private static final int MAX_BACKUP_SESSIONS = 64;
    /** How long the node looks for a region's leader when it asks one (as a client's operationTimeoutMs). */
    private static final long OPERATION_TIMEOUT_MS = 30_000;
    /** How long close() waits for a worker's task (a replica drop clearing its range) before closing under it. */
    private static final long CLOSE_TASK_WAIT_S = 30;
    private final NodeMetrics metrics = new NodeMetrics();
    /** Whether regions may take writes that add data: this node's heap (MemoryDB) and disk, and its peers' word. */
    private final WriteRoom room;
    private volatile boolean closed;
    private volatile ScheduledFuture<?> balancer;
    private final io.kvraft.server.shape.Splitter splitter;
    private final io.kvraft.server.shape.Merger merger;
    private final java.util.concurrent.ExecutorService splitWork;
    /** Replica moves, one at a time: each waits for a snapshot to reach the new replica. */
    private final java.util.concurrent.ExecutorService moveWork;
    private final io.kvraft.server.shape.ReplicaMover mover;
    /** Requests of region leaders anywhere in the cluster: replica moves, region ids for splits. */
    private final RegionLeaderCalls leaderCalls;
    /** Asks peers whether they serve (balancing and hand-off pick only those). */
    private final io.kvraft.common.rpc.Transport peerProbe;
    /** One heartbeat per peer node and interval for all regions this node leads (raft.nodeHeartbeats); or null. */
    private final io.kvraft.server.NodeBeats beats;
    /** The cluster map: membership, node reports and (on its leader) placement. */
    private final io.kvraft.server.meta.MetaService meta;
    /**
     * Told when the cluster refuses this node for good (removed, or another cluster's), on a thread of its own; closes
     * the node by default.
     */
    private volatile java.util.function.Consumer<String> onRefused = why -> close();
    /**
     * Told, on a thread of its own and once, when jraft stopped one of this node's region groups for its storage (a Raft
     * log that could not append or sync); by default that is logged and the node serves on without that replica.
     */
    private volatile java.util.function.Consumer<String> onStorageFailed = this::logStorageFailure;
    private final java.util.concurrent.atomic.AtomicBoolean storageFailed = new java.util.concurrent.atomic.AtomicBoolean();

    private KvServer(ServerConfig config, UnaryOperator<KvStore> storeWrapper) throws IOException {
        this.config = config;
        if (config.tls().enabled()) {
            ServerTls.apply(config.tls()); // before the first bolt server or client of this JVM starts
        }
        Path dataDir = Path.of(config.dataDir());
        DataDir.prepare(dataDir, config.store().engine());
        String storeId = DataDir.storeId(dataDir);
        this.room = new WriteRoom(config.endpoint(),
                config.store().engine().equals("memory") ? HeapGuard.ofJvm(config.store().maxHeapFraction()) : null,
                config.store().minFreeDiskBytes() > 0 ? DiskGuard.of(dataDir, config.store().minFreeDiskBytes()) : null,
                System::nanoTime);
        this.store = storeWrapper.apply(openStore(config, dataDir));
        this.housekeeping = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kv-housekeeping");
            t.setDaemon(true);
            return t;
        });
        this.peerProbe = new io.kvraft.common.rpc.Transport(config.tls());
        try {
            this.host = new RegionHost(config, store, housekeeping, metrics::region);
        } catch (RuntimeException e) {
            peerProbe.close();
            housekeeping.shutdownNow();
            store.close();
            throw e;
        }
        this.gate = new RequestGate(host);
        if (room.disk() != null) {
            room.disk().reserveForCompaction(() -> host.raftLogTableBytes() + store.compactionBytes());
        }
        // jraft's "Corrupted entry at index" does not say which file: the log's own read failure does
        host.onStorageFailed((region, why) -> storageFailed("region " + region.id() + "'s Raft group stopped for its"
                + " storage: " + why + (host.raftLogReadFailure() == null ? "" : "; " + host.raftLogReadFailure())));
        host.registerHandlers(new DataHandlers(host, gate, config.limits(), metrics.kv(), room)::register);
        this.backups = new io.kvraft.server.backup.BackupSessions(System::nanoTime,
                config.backup().sessionIdleMs(), MAX_BACKUP_SESSIONS);
        this.backupPages = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "kv-backup-pages");
            t.setDaemon(true);
            return t;
        });
        host.registerHandlers(new io.kvraft.server.rpc.BackupHandlers(host, gate, config.limits(), storeId, backups,
                backupPages)::register);
        this.beats = config.raft().nodeHeartbeats() ? new io.kvraft.server.NodeBeats(host, peerProbe,
                config.raft().electionTimeoutMs() / config.raft().electionHeartbeatFactor(), room) : null;
        if (beats != null) {
            host.registerHandlers(beats::register);
        }
        this.splitWork = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "kv-split");
            t.setDaemon(true);
            return t;
        });
        this.leaderCalls = new RegionLeaderCalls(host, this::meta, peerProbe, housekeeping, OPERATION_TIMEOUT_MS);
        this.splitter = new io.kvraft.server.shape.Splitter(host, store,
                io.kvraft.server.shape.Splitter.fromSequence(leaderCalls::takeNumber), config.split(),
                config.limits().maxKeyBytes(), System::currentTimeMillis, splitWork);
        this.merger = new io.kvraft.server.shape.Merger(host, config.merge(), peerProbe, splitWork,
                2L * config.raft().electionTimeoutMs());
        this.moveWork = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "kv-move");
            t.setDaemon(true);
            return t;
        });
        this.mover = new io.kvraft.server.shape.ReplicaMover(host, peerProbe, moveWork, config.moves());
        this.meta = new io.kvraft.server.meta.MetaService(config, host, host.rpcServer(), peerProbe,
                leaderCalls, housekeeping, storeId,
                // not on the housekeeping thread that learnt it: close() stops that executor, which would interrupt
                // the very thread that then stops the groups and closes the shared log and the store
                why -> new Thread(() -> onRefused.accept(why), "kv-refused").start(),
                why -> storageFailed("the cluster map's Raft group stopped for its storage: " + why));
        host.registerHandlers(new AdminHandlers(host, gate, config.metrics().port(), storeId, splitter, merger, mover,
                new io.kvraft.server.shape.RegionRecovery(host, meta::nodeState, config.raft().startupElectionTimeoutMs()),
                meta::clusterRegions)::register);
        metrics.bind(host, gate::inFlight);
        metrics.bindWriteRoom(room::full, room.heap() == null ? null : room.heap()::fraction,
                room.disk() == null ? null : room.disk()::freeBytes);
    }

    public static KvServer start(ServerConfig config) throws IOException {
        return start(config, UnaryOperator.identity());
    }

    /** @param storeWrapper wraps the opened store, for tests that make the store slow or faulty */
    public static KvServer start(ServerConfig config, UnaryOperator<KvStore> storeWrapper) throws IOException {
        JraftDefaults.apply(); // too late if jraft is loaded already (ServerMain applies them first thing)
        JvmSignals.loadJraftKeepingUsr2();
        KvServer server = new KvServer(config, storeWrapper);
        try {
            server.host.start();
            if (server.beats != null) {
                server.beats.start();
            }
            server.meta.start();
            server.metrics.start(config.metrics(), config.endpoint());
        } catch (IOException | RuntimeException e) {
            server.close();
            throw e;
        }
        if (config.balance().enabled()) {
            long ms = config.balance().intervalMs();
            server.balancer = server.housekeeping.scheduleWithFixedDelay(new LeaderBalancer(server.host, server::leadersOf,
                    server::regionsOf, config.balance().settleMs()), ms, ms,
                    TimeUnit.MILLISECONDS);
        }
        server.housekeeping.scheduleWithFixedDelay(new PeerWatcher(server.host), 1, 1, TimeUnit.SECONDS);
        // every change of a region's voters bumps its conf version (a CONF_CHANGED entry its leader proposes)
        server.housekeeping.scheduleWithFixedDelay(server.host::recordConfChanges, 1, 1, TimeUnit.SECONDS);
        long metaMs = config.placement().intervalMs();
        server.housekeeping.scheduleWithFixedDelay(server.meta::tick, 0, metaMs, TimeUnit.MILLISECONDS);
        long gcMs = config.raft().electionTimeoutMs();
        server.housekeeping.scheduleWithFixedDelay(new io.kvraft.server.shape.ReplicaGc(server.host, server.peerProbe,
                server.moveWork, 2L * gcMs, System::nanoTime), gcMs, gcMs, TimeUnit.MILLISECONDS);
        server.housekeeping.scheduleWithFixedDelay(server.backups::expireIdle, 1, 1, TimeUnit.SECONDS);
        if (server.room.heap() != null || server.room.disk() != null) {
            server.housekeeping.scheduleWithFixedDelay(server.room::check, 0, 1, TimeUnit.SECONDS);
        }
        server.housekeeping.scheduleWithFixedDelay(new io.kvraft.server.shape.StrayLearners(server.host,
                server.peerProbe, server.moveWork, config.moves().strayLearnerMs(), System::nanoTime), 1, 1,
                TimeUnit.SECONDS);
        if (config.split().enabled()) {
            long ms = config.split().checkIntervalMs();
            server.housekeeping.scheduleWithFixedDelay(server.splitter, ms, ms, TimeUnit.MILLISECONDS);
        }
        // always: a merge left half done by a crash is finished or rolled back here, automatic merges or not
        long mergeMs = config.merge().checkIntervalMs();
        server.housekeeping.scheduleWithFixedDelay(new io.kvraft.server.shape.MergeChecks(server.merger, server.host,
                server.store, config.merge(), config.split(), server.splitWork), mergeMs, mergeMs, TimeUnit.MILLISECONDS);
        LOG.info("node {} started: engine {}, {} regions, data in {}", config.endpoint(), config.store().engine(),
                server.host.regions().size(), config.dataDir());
        return server;
    }

    /**
     * What to do, on a thread of its own, when jraft stopped one of this node's Raft groups (a region's or the cluster
     * map's) for its storage (told once: the first such group); the default logs it. A node that exits then fails stop: restarted, it recovers
     * from its log and its peers.
     */
    public void onStorageFailed(java.util.function.Consumer<String> handler) {
        this.onStorageFailed = handler;
    }

    /** A Raft group of this node stopped for its storage: tells the handler once, not on the group's own thread. */
    private void storageFailed(String why) {
        if (storageFailed.compareAndSet(false, true)) { // the handler may close the node, which stops that group
            new Thread(() -> onStorageFailed.accept(why), "kv-storage-failed").start();
        }
    }

    private void logStorageFailure(String why) {
        LOG.error("node {}: {}; the node serves on without that replica until it is restarted", config.endpoint(), why);
    }

    /** What to do, on a thread of its own, when the cluster refuses this node for good; the default closes it. */
    public void onRefused(java.util.function.Consumer<String> handler) {
        this.onRefused = handler;
    }

    /** Whether the node has been closed (by {@link #close} or after the cluster refused it). */
    public boolean isClosed() {
        return closed;
    }

    /** This node's part of the cluster map. */
    public io.kvraft.server.meta.MetaService meta() {
        return meta;
    }

    /** Splits regions this node leads, by hand and by size. */
    public io.kvraft.server.shape.Splitter splitter() {
        return splitter;
    }

    /** Whether {@code peer} answers and is not shutting down; never fails. */
    CompletableFuture<Boolean> serving(String peer) {
        return leadersOf(peer).thenApply(leads -> leads >= 0);
    }

    /** How many regions {@code peer} leads, or -1 when it does not answer or is shutting down; never fails. */
    CompletableFuture<Integer> leadersOf(String peer) {
        return regionsOf(peer).thenApply(regions -> regions == null ? -1
                : (int) regions.stream().filter(r -> r.getRole().equals("LEADER")).count());
    }

    /** {@code peer}'s regions as it lists them, or null when it does not answer or is shutting down; never fails. */
    CompletableFuture<java.util.List<io.kvraft.common.proto.KvProto.RegionInfo>> regionsOf(String peer) {
        return peerProbe.<RegionsResponse>call(peer, RegionsRequest.getDefaultInstance(), 1000)
                .handle((resp, e) -> e != null || resp.hasError() && resp.getError().getCode() != ErrorCode.OK ? null
                        : resp.getRegionsList());
    }

    /** The peers that serve right now, asked all at once. */
    Set<String> servingPeers() {
        Map<String, CompletableFuture<Boolean>> asked = new HashMap<>();
        for (String p : host.peers()) {
            if (!p.equals(config.endpoint())) {
                asked.put(p, serving(p));
            }
        }
        Set<String> serving = new HashSet<>();
        asked.forEach((p, f) -> {
            if (f.join()) {
                serving.add(p);
            }
        });
        return serving;
    }

    private static KvStore openStore(ServerConfig config, Path dataDir) throws IOException {
        var s = config.store();
        return switch (s.engine()) {
            case "memory" -> new MemoryStore(s.hashIndex());
            case "rocksdb" -> RocksStore.open(dataDir.resolve("store"), s.blockCacheBytes(), s.writeBufferBytes(),
                    s.compression());
            default -> throw new IllegalArgumentException("unknown engine " + s.engine());
        };
    }

    public ServerConfig config() {
        return config;
    }

    public NodeMetrics metrics() {
        return metrics;
    }

    public RegionHost host() {
        return host;
    }

    /** The backup sessions this node holds. */
    public io.kvraft.server.backup.BackupSessions backups() {
        return backups;
    }

    public KvStore store() {
        return store;
    }

    /** Regions this node currently leads. */
    public long leaderCount() {
        return host.regions().stream().filter(Region::isLeader).count();
    }

    /**
     * Stops the node so that clients barely notice: new KV requests are answered SHUTTING_DOWN (with the
     * leader hint, so clients go elsewhere), requests in flight finish, the regions this node leads are
     * handed to live peers, then the Raft groups and the store are closed. Each step is bounded so the
     * whole stays within {@code timeoutMs} as far as this node can help it (the caller enforces the bound).
     */
    public void shutdownGracefully(long timeoutMs) {
        long start = System.nanoTime();
        long budget = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        LOG.info("shutdown 1/4: node {} refuses new requests", config.endpoint());
        gate.beginShutdown();
        ScheduledFuture<?> b = balancer;
        if (b != null) {
            b.cancel(false);
        }
        long drainDeadline = start + budget * 3 / 10;
        while (gate.inFlight() > 0 && System.nanoTime() - drainDeadline < 0) {
            LockSupport.parkNanos(5_000_000L); // no completion signal for "all answered": poll
        }
        long left = gate.inFlight();
        LOG.info("shutdown 2/4: {}", left == 0 ? "requests in flight answered"
                : left + " requests still in flight after " + ms(start) + " ms; they fail with the node");
        LeaderHandoff.Result handoff = LeaderHandoff.run(host, this::servingPeers, start + budget * 6 / 10);
        LOG.info("shutdown 3/4: region leaders handed over {}{} after {} ms", handoff.handedTo(),
                handoff.stillLed() == 0 ? "" : ", " + handoff.stillLed() + " still led here (the others will elect)",
                ms(start));
        close();
        LOG.info("shutdown 4/4: done in {} ms", ms(start));
    }

    private static void awaitEnd(ExecutorService executor, String what) {
        if (!Uninterruptible.awaitTermination(executor, CLOSE_TASK_WAIT_S, TimeUnit.SECONDS)) {
            LOG.warn("a {} task still running {} s into the close; closing under it", what, CLOSE_TASK_WAIT_S);
        }
    }

    private static long ms(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        gate.beginShutdown();
        housekeeping.shutdownNow();
        if (beats != null) {
            beats.close();
        }
        splitWork.shutdownNow();
        moveWork.shutdownNow();
        // their tasks drop replicas, split and merge regions: one still running when the log or the store below is
        // closed would write through freed native handles, which takes the JVM down
        awaitEnd(housekeeping, "housekeeping");
        awaitEnd(splitWork, "split and merge");
        awaitEnd(moveWork, "replica move");
        metrics.close();
        meta.close();
        host.close();
        gate.stopped(); // connections it still has are closed as they ask: a node started again on the port takes them
        backups.close(); // before the store: a capture may pin a RocksDB snapshot
        backupPages.shutdownNow();
        peerProbe.close();
        LOG.info("node {}: raft groups stopped", config.endpoint());
        try {
            store.close();
            LOG.info("node {}: store closed", config.endpoint());
        } catch (IOException e) {
            LOG.warn("closing store: {}", e.toString());
        }
        LOG.info("node {} stopped", config.endpoint());
    }
}
