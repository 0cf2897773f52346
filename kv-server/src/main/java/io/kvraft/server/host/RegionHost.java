package io.kvraft.server.host;

import io.kvraft.server.raft.RaftRpcServers;
import io.kvraft.server.region.Region;
import io.kvraft.server.region.RegionTimings;

import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.util.Endpoint;
import io.kvraft.common.rpc.WireProtocol;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.raftlog.SharedRaftLog;
import io.kvraft.server.store.KvStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionState;

import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;
import java.util.function.IntFunction;

/**
 * The Raft side of a node: one RPC server shared by all region groups (the KV request handlers are registered on it
 * too), the groups themselves, the cluster's nodes as the cluster map says, and the node-wide counters. Which groups
 * exist is in the node's {@link RegionCatalog}, and their life (a split's child, a replica moving here or away, a
 * merge's retired region) is {@link RegionLifecycle}'s; {@link RegionGroups} makes their files and objects.
 */
public final class RegionHost implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RegionHost.class);

    private final ServerConfig config;
    private final RpcServer rpcServer;
    private final RaftRpcServers.Server raftServer;
    /** Every node of the cluster not removed from it (the cluster map's); a region's replicas are on some of them. */
    private volatile List<String> peers;
    private volatile Set<String> draining = Set.of();
    private final RegionCatalog catalog;
    /** All groups' Raft logs when raft.logStorage is shared, else null. */
    private final SharedRaftLog sharedLog;
    private final RegionLifecycle lives;
    private volatile boolean started;

    /** @param timings where each region reports its timings, by region id (the node's metrics) */
    public RegionHost(ServerConfig config, KvStore store, ScheduledExecutorService housekeeping,
                      IntFunction<RegionTimings> timings) {
        this.config = config;
        this.peers = config.cluster().peers();
        WireProtocol.register();
        RaftOptionsFactory.tuneLogStorage();
        PeerId self = PeerId.parsePeer(config.endpoint());
        this.raftServer = RaftRpcServers.create(new Endpoint(self.getIp(), self.getPort()), config.raft().appendEntriesThreads());
        this.rpcServer = raftServer.rpc();
        Path raftRoot = Path.of(config.dataDir(), "raft");
        boolean shared = config.raft().logStorage().equals(RaftConfig.LOG_SHARED);
        RaftDirs.checkLogLayout(raftRoot, shared);
        InitialLayout layout = new InitialLayout(config, raftRoot, peers);
        this.catalog = layout.catalog();
        this.sharedLog = shared ? new SharedRaftLog(raftRoot.resolve(RaftDirs.SHARED_LOG_DIR), config.raft().sync()) : null;
        RegionGroups groups = new RegionGroups(config, store, housekeeping, rpcServer, self, raftRoot, sharedLog, timings);
        try {
            this.lives = new RegionLifecycle(config, store, housekeeping, groups, layout, self, this::peers);
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

    /** Called, on the region's state machine thread, with each region whose group jraft stopped for its storage. */
    public void onStorageFailed(java.util.function.BiConsumer<Region, String> listener) {
        lives.onStorageFailed(listener);
    }

    /** Called with every region whose group starts after the node did (split off since). */
    public void onRegionStarted(Consumer<Region> listener) {
        lives.onRegionStarted(listener);
    }

    /**
     * Starts every region group of the initial layout, then the regions split off them whose parents have
     * applied the split (the others start when their parent's replay reaches it), then the shared RPC server.
     */
    public void start() {
        lives.startAll();
        if (!rpcServer.init(null)) {
            throw new IllegalStateException("cannot listen on " + config.endpoint());
        }
        started = true;
        LOG.info("node {} serving {} regions on {}", config.endpoint(), lives.regions().size(), config.endpoint());
    }

    // ---- replica moves ---------------------------------------------------------------------------

    /**
     * Starts an empty replica of a region moving here (a move's first step, asked by the region's leader): listed in
     * the catalog as a group with no log, no data and no configuration, so it never campaigns; the leader adds it as
     * a learner and sends it a snapshot. A replica listed already is left as it is.
     */
    public void addReplica(RegionInfo info) {
        lives.addReplica(info);
    }

    /**
     * Drops this node's replica of a region that moved off it (a move's last step, asked by the region's leader once
     * the configuration without this node committed): stops its group, clears its range in the store, removes its
     * files and unlists it. Idempotent.
     *
     * @throws IllegalArgumentException when {@code voters} still names this node
     */
    public void dropReplica(int regionId, List<String> voters) {
        lives.dropReplica(regionId, voters);
    }

    /** The node's catalog of region groups. */
    public RegionCatalog catalog() {
        return catalog;
    }

    public Region region(int id) {
        return lives.region(id);
    }

    public Collection<Region> regions() {
        return lives.regions();
    }

    /** Has each region this node leads record its voters if they changed (see {@link Region#recordConf}). */
    public void recordConfChanges() {
        for (Region r : lives.regions()) {
            try {
                r.recordConf();
            } catch (RuntimeException e) {
                LOG.warn("region {}: cannot record its voters: {}", r.id(), e.toString());
            }
        }
    }

    /**
     * Regions split off others whose group is being made here (its split applied, its group not started yet), as a
     * route lists them: role STARTING, no leader. Listed so that a client that asks right after a split knows where
     * the new region's keys went (and a request to it waits, retried, rather than fails with "no such region").
     */
    public List<RegionInfo> starting() {
        return lives.starting();
    }

    /** A region whose group does not run here yet, as a route lists it: role STARTING, no leader. */
    public RegionInfo startingInfo(RegionState state, List<String> replicas) {
        return RegionLifecycle.startingInfo(state, replicas);
    }

    /** Every node of the cluster (each region's replicas are on {@link Region#peers()} of them). */
    public List<String> peers() {
        return peers;
    }

    /** Whether this node waits for the cluster map before it makes its regions (a new data directory). */
    public boolean layoutPending() {
        return lives.layoutPending();
    }

    /**
     * Once the cluster map has answered this node's registration: makes and starts the initial layout's regions of a new
     * data directory, or, when the map knew this node's address with another data directory ({@code startEmpty}: its
     * disk was wiped), starts none (the cluster rebuilds its replicas, each as a learner first). Either way the catalog
     * is written, so a restart does not ask again.
     */
    public void adoptLayout(boolean startEmpty) {
        lives.adoptLayout(startEmpty);
    }

    /** Nodes being drained (the cluster map's): their replicas move away, so they take no region's leadership. */
    public Set<String> draining() {
        return draining;
    }

    public void draining(Set<String> nodes) {
        draining = Set.copyOf(nodes);
    }

    /** The cluster's nodes now, as the cluster map says (those not removed). */
    public void members(List<String> nodes) {
        if (!nodes.equals(peers)) {
            peers = List.copyOf(nodes);
            LOG.info("cluster nodes: {}", peers);
        }
    }

    /** The RPC server all groups and handlers of this node share. */
    public RpcServer rpcServer() {
        return rpcServer;
    }

    public String endpoint() {
        return config.endpoint();
    }

    /** Write ops this node applied as a leader since it started, over its regions. */
    public long writeOps() {
        return lives.regions().stream().mapToLong(Region::writeOps).sum();
    }

    /** Keys read and scan pages this node served since it started, over its regions. */
    public long readOps() {
        return lives.regions().stream().mapToLong(Region::readOps).sum();
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

    /** The shared Raft log's table files, the room its next compaction may take ({@link SharedRaftLog#tableBytes()}); 0 without it. */
    public long raftLogTableBytes() {
        return sharedLog == null ? 0 : sharedLog.tableBytes();
    }

    /** Why the node's shared Raft log first failed to read an entry, or null. */
    public String raftLogReadFailure() {
        return sharedLog == null ? null : sharedLog.readFailure();
    }

    @Override
    public void close() {
        lives.close();
        if (started) {
            raftServer.shutdown();
        }
        if (sharedLog != null) {
            sharedLog.close(); // after every group has stopped writing to it
        }
    }
}
