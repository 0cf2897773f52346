package io.kvraft.server.host;

import io.kvraft.server.raft.RaftRpcServers;
import io.kvraft.server.region.Region;
import io.kvraft.server.region.RegionTimings;
import io.kvraft.server.region.RegionStateMachine;

import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.util.Endpoint;
import io.kvraft.common.rpc.WireProtocol;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.RaftConfig;
import io.kvraft.server.raftlog.SharedRaftLog;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.alipay.sofa.jraft.Closure;
import com.alipay.sofa.jraft.JRaftUtils;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.conf.Configuration;
import com.alipay.sofa.jraft.core.StateMachineAdapter;
import com.alipay.sofa.jraft.error.RaftError;
import com.alipay.sofa.jraft.option.BootstrapOptions;
import com.alipay.sofa.jraft.option.NodeOptions;
import com.alipay.sofa.jraft.storage.snapshot.SnapshotWriter;
import io.kvraft.common.proto.KvProto.RegionState;
import com.google.protobuf.ByteString;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * The Raft side of a node: one RPC server shared by all region groups, the groups themselves,
 * and the node-wide counters. The KV request handlers are registered on the same RPC server.
 */
/**
 * The Raft side of a node: one RPC server shared by all region groups, the groups themselves, and the
 * node-wide counters. The KV request handlers are registered on the same RPC server. Which groups exist is in
 * the node's {@link RegionCatalog}: the initial layout and every region split off since; a split's child
 * group is made and started here when its parent's state machine applies the split.
 */
public final class RegionHost implements AutoCloseable, Region.Splits {

    private static final Logger LOG = LoggerFactory.getLogger(RegionHost.class);
    /**
     * The election timeout of a new region's replica on the node that leads its parent, until it first has a leader.
     * The other replicas ask it to campaign as soon as they have made their group ({@link FirstCampaign}), so this is
     * the fallback. Set once its group has started ({@link Region#campaignFirst}), not in the options it starts with:
     * jraft fixes at start a leader's heartbeat interval (election timeout / factor) and the period of its read-index
     * scanner (maxElectionDelayMs), and with these short values in the options such a replica heartbeat every 150 ms
     * and woke its scanner every 20 ms for as long as it ran, in every region made by a split. Its vote timer keeps
     * the start-up timeout (jraft resets only the election timer), so a first vote slowed by fsyncs is not cut short.
     */
    private static final int CHILD_CAMPAIGN_MS = 300;
    /** The random part of that replica's election timeouts (jraft's maxElectionDelayMs; its default is 1000). */
    private static final int CHILD_CAMPAIGN_DELAY_MS = 20;
    /** In the raft directory while a new data directory waits for the cluster map before it makes its regions. */
    static final String LAYOUT_PENDING_FILE = "LAYOUT_PENDING";

    private final ServerConfig config;
    private final java.util.function.IntFunction<RegionTimings> timings;
    private final KvStore store;
    private final ScheduledExecutorService housekeeping;
    private final RpcServer rpcServer;
    private final RaftRpcServers.Server raftServer;
    private final Map<Integer, Region> regions = new ConcurrentSkipListMap<>();
    /** Every node of the cluster not removed from it (the cluster map's); a region's replicas are on some of them. */
    private volatile List<String> peers;
    private volatile java.util.Set<String> draining = java.util.Set.of();
    /** The initial layout's regions of this node, until the cluster map says to make them ({@link #adoptLayout}). */
    private volatile List<RegionLayout.RegionSpec> pendingLayout;
    private final PeerId self;
    private final Path raftRoot;
    private final RegionCatalog catalog;
    /** All groups' Raft logs when raft.logStorage is shared, else null. */
    private final SharedRaftLog sharedLog;
    /** Starts split-off regions' groups, away from the parent's state machine thread. */
    private final ExecutorService starter;
    private final List<Consumer<Region>> startListeners = new CopyOnWriteArrayList<>();
    /**
     * New regions whose parent this node led when it applied the split: their replica here campaigns first, even if
     * the parent's leader has moved (the balancer) by the time the group starts.
     */
    private final java.util.Set<Integer> campaignFirst = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /**
     * Regions split off others, listed here and their group not bootstrapped yet, with their parent's id: the parent
     * takes no snapshot meanwhile ({@link #childBootstrapPending}).
     */
    private final Map<Integer, Integer> bootstrapPending = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile boolean started;
    private volatile boolean closed;

    /** @param timings where each region reports its timings, by region id (the node's metrics) */
    public RegionHost(ServerConfig config, KvStore store, ScheduledExecutorService housekeeping,
                      java.util.function.IntFunction<RegionTimings> timings) {
        this.timings = timings;
        this.config = config;
        this.store = store;
        this.housekeeping = housekeeping;
        this.peers = config.cluster().peers();
        WireProtocol.register();
        RaftOptionsFactory.tuneLogStorage();
        this.self = PeerId.parsePeer(config.endpoint());
        this.raftServer = RaftRpcServers.create(new Endpoint(self.getIp(), self.getPort()), config.raft().appendEntriesThreads());
        this.rpcServer = raftServer.rpc();
        this.raftRoot = Path.of(config.dataDir(), "raft");
        boolean shared = config.raft().logStorage().equals(RaftConfig.LOG_SHARED);
        RaftDirs.checkLogLayout(raftRoot, shared);
        int factor = config.replicationFactor();
        // A node that joins a running cluster starts with no region: the cluster moves replicas onto it. One of the
        // cluster's first nodes on a new data directory waits for the cluster map before it makes its regions
        // ({@link #adoptLayout}): a disk wiped and started again at a member's address must not vote in its old
        // regions with an empty log (it could elect a replica that lacks acknowledged writes); its replicas are
        // rebuilt instead.
        Path pendingMarker = raftRoot.resolve(LAYOUT_PENDING_FILE); // a deferred start that stopped before its map came
        boolean fresh = !Files.exists(raftRoot.resolve(RegionCatalog.FILE))
                && (!RaftDirs.holdsGroups(raftRoot) || Files.exists(pendingMarker));
        if (fresh && !config.cluster().joining()) {
            try {
                Files.createDirectories(raftRoot);
                Files.writeString(pendingMarker, "regions wait for the cluster map\n");
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + pendingMarker, e);
            }
            this.pendingLayout = RegionLayout.of(config.cluster(), factor).stream()
                    .filter(spec -> spec.peers().contains(config.endpoint())).toList();
            this.catalog = RegionCatalog.pending(raftRoot, peers, factor);
        } else {
            this.pendingLayout = null;
            this.catalog = RegionCatalog.open(raftRoot, config.cluster().joining() ? List.of()
                    : RegionLayout.of(config.cluster(), factor), config.endpoint(), peers, factor);
        }
        this.sharedLog = shared ? new SharedRaftLog(raftRoot.resolve(RaftDirs.SHARED_LOG_DIR), config.raft().sync()) : null;
        this.starter = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "kv-region-start");
            t.setDaemon(true);
            return t;
        });
        try {
            for (RegionCatalog.Entry e : catalog.entries()) {
                if (e.parent() == 0) {
                    Region region = create(e, false);
                    regions.put(region.id(), region);
                } else if (!e.empty() && !bootstrapped(e)) {
                    bootstrapPending.put(e.id(), e.parent()); // split before a restart that came before its bootstrap
                }
            }
        } catch (RuntimeException e) {
            starter.shutdownNow();
            if (sharedLog != null) {
                sharedLog.close();
            }
            throw e;
        }
    }

    private static RegionState stateOf(RegionCatalog.Entry e) {
        KeyRange range = e.range();
        return RegionState.newBuilder().setId(e.id()).setStartKey(ByteString.copyFrom(range.start()))
                .setEndKey(ByteString.copyFrom(range.end())).setEpoch(e.epoch()).setParent(e.parent())
                .setCreatedAt(e.createdAt()).build();
    }

    private Path regionDir(int regionId) {
        return raftRoot.resolve("region-" + regionId);
    }

    /** Makes the (not yet started) region of a catalog entry: its directory checked, its options, its state machine. */
    private Region create(RegionCatalog.Entry entry, boolean madeNow) {
        int regionId = entry.id();
        Path regionDir = regionDir(regionId);
        try {
            Files.createDirectories(regionDir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + regionDir, e);
        }
        Runnable dropLog = sharedLog == null ? null : () -> sharedLog.dropGroup(regionId);
        // A group this process bootstrapped a moment ago from its store needs no check of its files: reading its
        // snapshot back took up to 0.2 s under load, while every request to the new region's keys waited.
        // The others: before the fsm reads the store; with the region's range as the store last recorded it (splits
        // narrow it: clearing the range it started with would clear the regions split off it since).
        if (!madeNow) {
            RaftDirs.checkBeforeStart(regionId, entry.range(), currentRange(entry), regionDir, store,
                    entry.peers().size(), dropLog);
        }
        NodeOptions options = RaftOptionsFactory.nodeOptions(config, peerIdsOf(entry), regionDir, regionId, sharedLog);
        Region parent = entry.parent() == 0 ? null : regions.get(entry.parent());
        boolean ledParent = campaignsFirst(entry, parent);
        campaignFirst.remove(regionId);
        if (entry.empty()) {
            // learned from a parent's snapshot: no log, no data; its leader sends a snapshot. With no configuration
            // of its own it never campaigns (its stored configuration, once it has one, takes over).
            options.setInitialConf(new Configuration());
        }
        Region[] holder = new Region[1];
        int electionTimeoutMs = config.raft().electionTimeoutMs();
        Runnable leaderKnown = () -> housekeeping.execute(() -> {
            // once the region has had a leader, the configured (longer) timeout keeps idle groups quiet
            if (holder[0].node() != null) {
                holder[0].node().resetElectionTimeoutMs(electionTimeoutMs);
            }
        });
        Region region = new Region(stateOf(entry), entry.peers(), store, self, options, rpcServer, config.raft(), leaderKnown, this, housekeeping,
                timings.apply(entry.id()));
        holder[0] = region;
        if (!entry.empty() && ledParent) {
            // this node leads the parent: its replica of the new region campaigns first and wins (the logs are
            // alike), so the new region is led within a fraction of a second, not after a start-up timeout
            // during which every request to its range waits. jraft adds a random 0 to maxElectionDelayMs (1 s by
            // default) to every election timeout: the new region waited 0.1-1.1 s for its first election, and under a
            // closed-loop load every client slot piled onto its keys meanwhile. The other replicas keep the full
            // timeout and delay, so they do not run against it.
            region.campaignFirst(Math.min(options.getElectionTimeoutMs(), CHILD_CAMPAIGN_MS), CHILD_CAMPAIGN_DELAY_MS);
        }
        return region;
    }

    private static List<PeerId> peerIdsOf(RegionCatalog.Entry entry) {
        return entry.peers().stream().map(PeerId::parsePeer).toList();
    }

    /** The region's range as the store recorded it with its applied index, or as the catalog says it started. */
    private KeyRange currentRange(RegionCatalog.Entry entry) {
        RegionState state = RegionStateMachine.storedState(store, entry.id());
        return state == null ? entry.range() : Region.Shape.of(state).range();
    }

    /** Registers extra request handlers (before {@link #start}). */
    public void registerHandlers(Consumer<RpcServer> registrar) {
        registrar.accept(rpcServer);
    }

    /** Called with every region whose group starts after the node did (split off since). */
    public void onRegionStarted(Consumer<Region> listener) {
        startListeners.add(listener);
    }

    /**
     * Starts every region group of the initial layout, then the regions split off them whose parents have
     * applied the split (the others start when their parent's replay reaches it), then the shared RPC server.
     */
    public void start() {
        for (Region r : regions.values()) {
            startRegion(r);
        }
        for (RegionCatalog.Entry e : catalog.entries()) { // parents come before their children
            Region parent = regions.get(e.parent());
            // a parent merged into another since is gone: the child was made before that merge
            boolean parentGone = e.parent() != 0 && catalog.get(e.parent()) == null;
            if (e.parent() != 0 && (parentGone || parent != null && parent.appliedIndex() >= e.createdAt())) {
                startListed(e.id());
            }
        }
        for (Region r : List.copyOf(regions.values())) { // merged into another before a crash cut their retirement short
            for (int absorbed : r.state().getAbsorbedList()) {
                retire(absorbed, r, r.appliedIndex());
            }
        }
        if (!rpcServer.init(null)) {
            throw new IllegalStateException("cannot listen on " + config.endpoint());
        }
        started = true;
        LOG.info("node {} serving {} regions on {}", config.endpoint(), regions.size(), config.endpoint());
    }

    private void startRegion(Region r) {
        try {
            r.start();
        } catch (RuntimeException e) { // jraft says only "Fail to init node, please see the logs"
            throw new IllegalStateException("region " + r.id() + " cannot start, its Raft data is in "
                    + regionDir(r.id()) + ": " + e.getMessage(), e);
        }
    }

    // ---- splits ---------------------------------------------------------------------------------

    @Override
    public void prepareChild(Region parent, RegionState child, long index) {
        if (catalog.get(child.getId()) != null) {
            return; // listed before this replay reached the split again
        }
        if (!isMember(child)) {
            // a learner (a replica moving here) applies the split too: the new region stays on the parent's voters
            LOG.info("region {}: split off region {} on {}, which this node is not among (a learner here)",
                    child.getId(), parent.id(), child.getPeersList());
            return;
        }
        if (parent.isLeader()) {
            campaignFirst.add(child.getId());
        }
        clearLeftovers(child.getId(), regionDir(child.getId()));
        bootstrapPending.put(child.getId(), parent.id()); // before the listing: from here on the parent takes no snapshot
        catalog.add(RegionCatalog.Entry.of(child.getId(), Region.Shape.of(child).range(), child.getEpoch(),
                parent.id(), index, false, parent.peers())); // a split moves no replica: the child is where its parent is
    }

    @Override
    public boolean childBootstrapPending(int parentId) {
        return bootstrapPending.containsValue(parentId);
    }

    /**
     * Makes the Raft group of a region split off another, listed but not bootstrapped yet (its split applied a moment
     * ago, or before a restart that came first): its first snapshot is the store's data of its range, which no one has
     * written since the split (the parent refuses writes outside its range, and this group never ran), so every replica
     * bootstraps the same state at the same index. It ran on the parent's state machine thread before, and every
     * request to the parent's keys waited the 0.1-0.3 s it takes under load.
     */
    private void bootstrap(RegionCatalog.Entry entry) {
        RegionState child = stateOf(entry);
        Path dir = regionDir(entry.id());
        clearLeftovers(entry.id(), dir); // a bootstrap a crash cut short
        List<PeerId> replicas = peerIdsOf(entry);
        NodeOptions options = RaftOptionsFactory.nodeOptions(config, replicas, dir, entry.id(), sharedLog);
        BootstrapOptions opts = new BootstrapOptions();
        opts.setGroupId(Region.groupId(entry.id()));
        opts.setGroupConf(new Configuration(replicas));
        opts.setLastLogIndex(entry.createdAt()); // the child's log starts after the split, on every replica alike
        opts.setLogUri(options.getLogUri());
        opts.setRaftMetaUri(options.getRaftMetaUri());
        opts.setSnapshotUri(options.getSnapshotUri());
        opts.setServiceFactory(options.getServiceFactory());
        opts.setFsm(new StateMachineAdapter() { // writes the child's first snapshot: its range of the store, now
            @Override
            public void onApply(com.alipay.sofa.jraft.Iterator iter) {
                throw new IllegalStateException("a bootstrap applies no entries");
            }

            @Override
            public void onSnapshotSave(SnapshotWriter writer, Closure done) {
                try {
                    RegionStateMachine.writeSnapshot(writer, store, child);
                    done.run(Status.OK());
                } catch (IOException | RuntimeException e) {
                    done.run(new Status(RaftError.EIO, "cannot write the first snapshot of region %d: %s",
                            entry.id(), e.getMessage()));
                }
            }
        });
        long began = System.nanoTime();
        try {
            Files.createDirectories(dir);
            if (!JRaftUtils.bootstrap(opts)) {
                throw new IllegalStateException("region " + entry.id() + ": jraft could not bootstrap its group in "
                        + dir + " (see the log above)");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + dir, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while bootstrapping region " + entry.id());
        }
        LOG.info("region {}: its group was made from region {}'s split at index {} in {} ms", entry.id(), entry.parent(),
                entry.createdAt(), (System.nanoTime() - began) / 1_000_000);
    }

    /** Whether the listed region's group has been bootstrapped here: jraft writes its snapshot last, atomically. */
    private boolean bootstrapped(RegionCatalog.Entry entry) {
        return RaftDirs.hasSnapshot(regionDir(entry.id()).resolve(RaftDirs.SNAPSHOT_DIR));
    }

    @Override
    public void adoptChild(RegionState child, long createdAt) {
        if (catalog.get(child.getId()) != null || !isMember(child)) {
            return; // listed already, or split off before this node held a replica of the parent (a replica moved here)
        }
        clearLeftovers(child.getId(), regionDir(child.getId()));
        // a new region made before placement records no replicas: every node held one
        catalog.add(RegionCatalog.Entry.of(child.getId(), Region.Shape.of(child).range(), child.getEpoch(),
                child.getParent(), createdAt, true, child.getPeersCount() > 0 ? child.getPeersList() : peers));
        LOG.info("region {}: learned from region {}'s snapshot; it starts empty and gets a snapshot from its leader",
                child.getId(), child.getParent());
    }

    /** Whether this node is among a new region's voters (a region made before placement names none: all nodes). */
    private boolean isMember(RegionState child) {
        return child.getPeersCount() == 0 || child.getPeersList().contains(config.endpoint());
    }

    @Override
    public void peersChanged(Region region, List<String> voters) {
        catalog.setPeers(region.id(), voters);
    }

    // ---- replica moves ---------------------------------------------------------------------------

    /**
     * Starts an empty replica of a region moving here (a move's first step, asked by the region's leader): listed in
     * the catalog as a group with no log, no data and no configuration, so it never campaigns; the leader adds it as
     * a learner and sends it a snapshot. A replica listed already is left as it is.
     */
    public void addReplica(io.kvraft.common.proto.KvProto.RegionInfo info) {
        if (closed) {
            throw new IllegalStateException("node " + config.endpoint() + " is closing");
        }
        if (catalog.get(info.getId()) == null) {
            clearLeftovers(info.getId(), regionDir(info.getId()));
            KeyRange range = new KeyRange(info.getStartKey().toByteArray(), info.getEndKey().toByteArray());
            catalog.add(RegionCatalog.Entry.of(info.getId(), range, info.getEpoch(), 0, 0, true, info.getPeersList()));
            LOG.info("region {}: a replica moves here; it starts empty and gets a snapshot from its leader", info.getId());
        }
        startListed(info.getId());
    }

    /**
     * Drops this node's replica of a region that moved off it (a move's last step, asked by the region's leader once
     * the configuration without this node committed): stops its group, clears its range in the store, removes its
     * files and unlists it. Idempotent.
     *
     * @throws IllegalArgumentException when {@code voters} still names this node
     */
    public synchronized void dropReplica(int regionId, List<String> voters) {
        if (voters.contains(config.endpoint())) {
            throw new IllegalArgumentException("region " + regionId + " still has a replica on " + config.endpoint()
                    + " (its voters are " + voters + "): not dropped");
        }
        RegionCatalog.Entry entry = catalog.get(regionId);
        if (closed || entry == null) {
            return;
        }
        Region r = regions.remove(regionId);
        KeyRange range = r != null ? r.range() : currentRange(entry);
        if (!stopGroup(r)) {
            regions.put(regionId, r);
            throw new IllegalStateException("interrupted while stopping region " + regionId);
        }
        catalog.remove(regionId); // first: a crash after it leaves data no listed region covers, and files
        RaftDirs.clearRange(regionId, range, regionDir(regionId), store);
        removeGroupFiles(regionId, regionDir(regionId));
        LOG.info("region {}: replica dropped here (the region is on {} now): group stopped, range {} cleared, files"
                + " removed", regionId, voters, range);
    }

    @Override
    public void startChild(RegionState child) {
        if (closed) {
            return;
        }
        try {
            starter.execute(() -> {
                try {
                    startListed(child.getId());
                } catch (RuntimeException e) {
                    LOG.error("region {} cannot start: {}", child.getId(), e.toString());
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            // the node is stopping; the child starts with it next time
        }
    }

    /** Starts the listed region {@code id} unless it runs already. */
    private synchronized void startListed(int id) {
        RegionCatalog.Entry entry = catalog.get(id);
        if (closed || entry == null || regions.containsKey(id)) {
            return;
        }
        long began = System.nanoTime();
        boolean madeNow = entry.parent() != 0 && !entry.empty() && !bootstrapped(entry);
        if (madeNow) {
            bootstrap(entry);
        }
        bootstrapPending.remove(id);
        String campaigner = madeNow ? firstCampaigner(entry) : null;
        Region region = create(entry, madeNow);
        startRegion(region);
        regions.put(id, region);
        if (campaigner != null) {
            FirstCampaign.ask(id, region.node(), self, campaigner, housekeeping);
        }
        LOG.info("region {} started in {} ms: {} epoch {}", id, (System.nanoTime() - began) / 1_000_000, region.range(),
                region.epoch());
        for (Consumer<Region> l : startListeners) {
            l.accept(region);
        }
    }

    /** Whether this node's replica of a region split off {@code parent} is the one that campaigns first. */
    private boolean campaignsFirst(RegionCatalog.Entry entry, Region parent) {
        return campaignFirst.contains(entry.id()) || parent != null && parent.isLeader();
    }

    /**
     * For a new region made here from a split: the node whose replica campaigns first (the parent's leader), when that
     * is another node; else null.
     */
    private String firstCampaigner(RegionCatalog.Entry entry) {
        Region parent = entry.parent() == 0 ? null : regions.get(entry.parent());
        if (entry.empty() || parent == null || campaignsFirst(entry, parent)) {
            return null;
        }
        String leader = parent.leaderHint();
        return leader.isEmpty() || leader.equals(config.endpoint()) ? null : leader;
    }

    // ---- merges ---------------------------------------------------------------------------------

    @Override
    public void snapshotSoon(Region region) {
        // after the entry's apply returns: jraft skips a snapshot while its applied index is still the last snapshot's
        housekeeping.schedule(() -> {
            com.alipay.sofa.jraft.Node n = region.node();
            if (n == null || closed || region.mergingInto() == 0 || gone(region)) {
                return; // stopped, rolled back, or retired
            }
            if (region.snapshotIndex() >= region.state().getMergePreparedAt()) {
                return;
            }
            n.snapshot(st -> {
                if (region.snapshotIndex() < region.state().getMergePreparedAt()) {
                    LOG.info("region {}: snapshot for a merge not there yet ({}); again", region.id(), st);
                    snapshotSoon(region);
                }
            });
        }, 50, java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    /** Whether {@code region} is no longer this node's: retired (unlisted), or another object runs its group. */
    private boolean gone(Region region) {
        Region running = regions.get(region.id());
        return catalog.get(region.id()) == null || running != null && running != region;
    }

    @Override
    public boolean awaitMergeSource(RegionState right, int leftId) {
        long since = System.nanoTime();
        long logged = since;
        while (!closed) {
            Region r = regions.get(right.getId());
            if (r == null && catalog.get(right.getId()) == null) {
                return false;
            }
            if (r != null && r.mergingInto() == leftId && r.state().getMergePreparedAt() == right.getMergePreparedAt()
                    && r.appliedIndex() >= right.getMergePreparedAt()) {
                return true;
            }
            if (System.nanoTime() - logged > java.util.concurrent.TimeUnit.SECONDS.toNanos(10)) {
                logged = System.nanoTime();
                LOG.warn("region {}: waiting {} s for this node's replica of region {} to apply the merge's prepare at"
                                + " index {} (it is at {})", leftId, java.util.concurrent.TimeUnit.NANOSECONDS.toSeconds(logged - since),
                        right.getId(), right.getMergePreparedAt(), r == null ? "not started" : r.appliedIndex());
            }
            java.util.concurrent.locks.LockSupport.parkNanos(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(5));
        }
        throw new IllegalStateException("node is closing"); // jraft stops the group; the entry applies on the next start
    }

    @Override
    public void widen(int regionId, KeyRange range) {
        catalog.widen(regionId, range);
    }

    @Override
    public void retire(int regionId, Region into, long index) {
        if (closed || catalog.get(regionId) == null) {
            return;
        }
        if (!RegionStateMachine.durableStore(store) && into.snapshotIndex() < index) {
            // the merged data lives in memory only until a snapshot of the region it went into holds it
            com.alipay.sofa.jraft.Node n = into.node();
            housekeeping.execute(() -> {
                if (n != null && !closed) {
                    n.snapshot(st -> {
                        if (st.isOk() && into.snapshotIndex() >= index) {
                            retire(regionId, into, index);
                        } else {
                            LOG.warn("region {}: snapshot before retiring merged region {} not taken ({}); retrying",
                                    into.id(), regionId, st);
                            housekeeping.schedule(() -> retire(regionId, into, index), 1, java.util.concurrent.TimeUnit.SECONDS);
                        }
                    });
                }
            });
            return;
        }
        try {
            starter.execute(() -> retireNow(regionId, into.id()));
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            // the node is stopping; the next start retires it (the region it went into lists it as absorbed)
        }
    }

    private synchronized void retireNow(int regionId, int into) {
        if (closed || catalog.get(regionId) == null) {
            return;
        }
        if (!stopGroup(regions.remove(regionId))) {
            return;
        }
        catalog.remove(regionId); // first: a crash after it leaves only files, which a later split's id never meets
        removeGroupFiles(regionId, regionDir(regionId));
        LOG.info("region {} retired: merged into region {}; its group is stopped and its files removed", regionId, into);
    }

    /** Stops {@code r}'s group (null: none runs) and waits for it; false when interrupted meanwhile. */
    private static boolean stopGroup(Region r) {
        if (r == null) {
            return true;
        }
        r.shutdown();
        try {
            r.join();
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Removes what a crash in the middle of making a group may have left (never a listed region's data). */
    private void clearLeftovers(int regionId, Path dir) {
        if (Files.exists(dir)) {
            LOG.warn("region {}: removing {} left by an unfinished split", regionId, dir);
        }
        removeGroupFiles(regionId, dir);
    }

    /** Removes a group's log (in the shared log too) and directory. */
    private void removeGroupFiles(int regionId, Path dir) {
        if (sharedLog != null && sharedLog.hasGroup(regionId)) {
            sharedLog.dropGroup(regionId);
        }
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) walk.sorted(Comparator.reverseOrder())::iterator) {
                Files.delete(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + dir, e);
        }
    }

    /** The node's catalog of region groups. */
    public RegionCatalog catalog() {
        return catalog;
    }

    public Region region(int id) {
        return regions.get(id);
    }

    public java.util.Collection<Region> regions() {
        return regions.values();
    }

    /** Has each region this node leads record its voters if they changed (see {@link Region#recordConf}). */
    public void recordConfChanges() {
        for (Region r : regions.values()) {
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
    public List<io.kvraft.common.proto.KvProto.RegionInfo> starting() {
        List<io.kvraft.common.proto.KvProto.RegionInfo> out = new java.util.ArrayList<>();
        for (Integer id : bootstrapPending.keySet()) {
            RegionCatalog.Entry e = catalog.get(id);
            if (e == null || regions.containsKey(id)) {
                continue;
            }
            out.add(startingInfo(stateOf(e), e.peers()));
        }
        return out;
    }

    /** A region whose group does not run here yet, as a route lists it: role STARTING, no leader. */
    public io.kvraft.common.proto.KvProto.RegionInfo startingInfo(RegionState state, List<String> replicas) {
        return io.kvraft.common.proto.KvProto.RegionInfo.newBuilder().setId(state.getId()).setStartKey(state.getStartKey())
                .setEndKey(state.getEndKey()).setEpoch(state.getEpoch()).addAllPeers(replicas).setRole("STARTING").build();
    }

    /** Every node of the cluster (each region's replicas are on {@link Region#peers()} of them). */
    public List<String> peers() {
        return peers;
    }

    /** Whether this node waits for the cluster map before it makes its regions (a new data directory). */
    public boolean layoutPending() {
        return pendingLayout != null;
    }

    /**
     * Once the cluster map has answered this node's registration: makes and starts the initial layout's regions of a new
     * data directory, or, when the map knew this node's address with another data directory ({@code startEmpty}: its
     * disk was wiped), starts none (the cluster rebuilds its replicas, each as a learner first). Either way the catalog
     * is written, so a restart does not ask again.
     */
    public synchronized void adoptLayout(boolean startEmpty) {
        List<RegionLayout.RegionSpec> layout = pendingLayout;
        if (layout == null || closed) {
            return;
        }
        if (startEmpty) {
            catalog.addAll(List.of());
            LOG.warn("node {}: the cluster knew this address with another data directory: this one starts with no"
                    + " region, and the cluster rebuilds its {} replicas here from the others", config.endpoint(),
                    layout.size());
        } else {
            catalog.addAll(layout.stream().map(spec -> RegionCatalog.Entry.of(spec.id(), spec.range(), 1, 0, 0, false,
                    spec.peers())).toList());
            for (RegionLayout.RegionSpec spec : layout) {
                startListed(spec.id());
            }
            LOG.info("node {}: the initial layout's {} regions made", config.endpoint(), layout.size());
        }
        pendingLayout = null;
        try {
            Files.deleteIfExists(raftRoot.resolve(LAYOUT_PENDING_FILE));
        } catch (IOException e) {
            LOG.warn("cannot remove {}: {}", raftRoot.resolve(LAYOUT_PENDING_FILE), e.toString());
        }
    }

    /** Nodes being drained (the cluster map's): their replicas move away, so they take no region's leadership. */
    public java.util.Set<String> draining() {
        return draining;
    }

    public void draining(java.util.Set<String> nodes) {
        draining = java.util.Set.copyOf(nodes);
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
        return regions.values().stream().mapToLong(Region::writeOps).sum();
    }

    /** Keys read and scan pages this node served since it started, over its regions. */
    public long readOps() {
        return regions.values().stream().mapToLong(Region::readOps).sum();
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
        closed = true;
        starter.shutdownNow();
        try {
            starter.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
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
