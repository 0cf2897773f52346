package io.kvraft.server.region;

import com.alipay.sofa.jraft.RaftGroupService;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.util.Endpoint;
import io.kvraft.client.rpc.WireProtocol;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.RaftConfig;
import io.kvraft.server.raftlog.SharedRaftLog;
import io.kvraft.server.region.RegionLayout.RegionSpec;
import io.kvraft.server.store.KvStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * The Raft side of a node: one RPC server shared by all region groups, the groups themselves,
 * and the node-wide counters. The KV request handlers are registered on the same RPC server.
 */
public final class RegionHost implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RegionHost.class);

    private final ServerConfig config;
    private final RpcServer rpcServer;
    private final RaftRpcServers.Server raftServer;
    private final Map<Integer, Region> regions = new TreeMap<>();
    private final List<String> peers;
    private final LongAdder writeOps = new LongAdder();
    /** All groups' Raft logs when raft.logStorage is shared, else null. */
    private final SharedRaftLog sharedLog;
    private final LongAdder readOps = new LongAdder();
    private volatile boolean started;

    public RegionHost(ServerConfig config, KvStore store, ScheduledExecutorService housekeeping) {
        this.config = config;
        this.peers = config.cluster().peers();
        WireProtocol.register();
        RaftOptionsFactory.tuneLogStorage();
        PeerId self = PeerId.parsePeer(config.endpoint());
        List<PeerId> peerIds = peers.stream().map(PeerId::parsePeer).toList();
        this.raftServer = RaftRpcServers.create(new Endpoint(self.getIp(), self.getPort()), config.raft().appendEntriesThreads());
        this.rpcServer = raftServer.rpc();
        Path raftRoot = Path.of(config.dataDir(), "raft");
        boolean shared = config.raft().logStorage().equals(RaftConfig.LOG_SHARED);
        RaftDirs.checkLogLayout(raftRoot, shared);
        this.sharedLog = shared ? new SharedRaftLog(raftRoot.resolve(RaftDirs.SHARED_LOG_DIR), config.raft().sync()) : null;
        int electionTimeoutMs = config.raft().electionTimeoutMs();
        try {
            for (RegionSpec spec : RegionLayout.of(config.cluster())) {
                Path regionDir = raftRoot.resolve("region-" + spec.id());
                try {
                    java.nio.file.Files.createDirectories(regionDir);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException("cannot create " + regionDir, e);
                }
                int regionId = spec.id();
                Runnable dropLog = sharedLog == null ? null : () -> sharedLog.dropGroup(regionId);
                // before the fsm reads the store
                RaftDirs.checkBeforeStart(regionId, spec.range(), regionDir, store, peers.size(), dropLog);
                var options = RaftOptionsFactory.nodeOptions(config, peerIds, regionDir, regionId, sharedLog);
                Region[] holder = new Region[1];
                Runnable leaderKnown = () -> housekeeping.execute(() -> {
                    // once the region has had a leader, the configured (longer) timeout keeps idle groups quiet
                    if (holder[0].node() != null) {
                        holder[0].node().resetElectionTimeoutMs(electionTimeoutMs);
                    }
                });
                Region region = new Region(spec.id(), spec.range(), store, self, options, rpcServer, config.raft(),
                        writeOps, readOps, leaderKnown);
                holder[0] = region;
                regions.put(spec.id(), region);
            }
        } catch (RuntimeException e) {
            if (sharedLog != null) {
                sharedLog.close();
            }
            throw e;
        }
    }

    /** Registers extra request handlers (before {@link #start}). */
    public void registerHandlers(Consumer<RpcServer> registrar) {
        registrar.accept(rpcServer);
    }

    /** Starts every region group, then the shared RPC server. */
    public void start() {
        for (Region r : regions.values()) {
            try {
                r.start();
            } catch (RuntimeException e) { // jraft says only "Fail to init node, please see the logs"
                throw new IllegalStateException("region " + r.id() + " cannot start, its Raft data is in "
                        + Path.of(config.dataDir(), "raft", "region-" + r.id()) + ": " + e.getMessage(), e);
            }
        }
        if (!rpcServer.init(null)) {
            throw new IllegalStateException("cannot listen on " + config.endpoint());
        }
        started = true;
        LOG.info("node {} serving {} regions on {}", config.endpoint(), regions.size(), config.endpoint());
    }

    public Region region(int id) {
        return regions.get(id);
    }

    public java.util.Collection<Region> regions() {
        return regions.values();
    }

    public List<String> peers() {
        return peers;
    }

    public String endpoint() {
        return config.endpoint();
    }

    public long writeOps() {
        return writeOps.sum();
    }

    public long readOps() {
        return readOps.sum();
    }

    /** Threads of the follower's AppendEntries pool ({@code raft.appendEntriesThreads}); -1 when it is 0 (jraft's). */
    public int appendEntriesThreads() {
        return raftServer.appendEntriesThreads();
    }

    /** AppendEntries requests this node received as a follower since start, heartbeats included; -1 when the pool is 0 (jraft's threads). */
    public long appendEntriesReceived() {
        return raftServer.appendEntriesReceived();
    }

    /** AppendEntries requests waiting for that pool; -1 when it is 0 (jraft's threads, whose queues are not exported). */
    public int appendEntriesQueued() {
        return raftServer.appendEntriesQueued();
    }

    @Override
    public void close() {
        for (Region r : regions.values()) {
            r.shutdown();
        }
        for (Region r : regions.values()) {
            try {
                r.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        if (started) {
            raftServer.shutdown();
        }
        if (sharedLog != null) {
            sharedLog.close(); // after every group has stopped writing to it
        }
    }
}
