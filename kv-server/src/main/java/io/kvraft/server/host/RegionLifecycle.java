package io.kvraft.server.host;

import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionState;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.region.Region;
import io.kvraft.server.region.ShapeHooks;
import io.kvraft.server.region.RegionStateMachine;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;

import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.option.NodeOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Which regions this node runs, and their life in its {@link RegionCatalog}: the catalog's groups started at boot, the
 * initial layout adopted once the cluster map answers, a split's child listed and its group made and started, a region
 * learned from a parent's snapshot, a replica moving here added, one that moved off dropped, and a region merged into
 * another retired. The regions' state machines call in here ({@link ShapeHooks}) at the point of their log where the
 * change happens.
 */
final class RegionLifecycle implements ShapeHooks {

    private static final Logger LOG = LoggerFactory.getLogger(RegionLifecycle.class);

    private final String endpoint;
    private final KvStore store;
    private final ScheduledExecutorService housekeeping;
    private final RegionCatalog catalog;
    private final RegionGroups groups;
    private final InitialLayout layout;
    private final PeerId self;
    /** Every node of the cluster now (the host's, as the cluster map says). */
    private final Supplier<List<String>> peers;
    private final Map<Integer, Region> regions = new ConcurrentSkipListMap<>();
    /** Starts split-off regions' groups, away from the parent's state machine thread. */
    private final ExecutorService starter;
    private final List<Consumer<Region>> startListeners = new CopyOnWriteArrayList<>();
    private final List<java.util.function.BiConsumer<Region, String>> failureListeners = new CopyOnWriteArrayList<>();
    /**
     * New regions whose parent this node led when it applied the split: their replica here campaigns first, even if
     * the parent's leader has moved (the balancer) by the time the group starts.
     */
    private final Set<Integer> campaignFirst = ConcurrentHashMap.newKeySet();
    /**
     * Regions split off others, listed here and their group not bootstrapped yet, with their parent's id: the parent
     * takes no snapshot meanwhile ({@link #childBootstrapPending}).
     */
    private final Map<Integer, Integer> bootstrapPending = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /** Makes (does not start) the groups of the catalog's regions that were not split off another. */
    RegionLifecycle(ServerConfig config, KvStore store, ScheduledExecutorService housekeeping, RegionGroups groups,
                    InitialLayout layout, PeerId self, Supplier<List<String>> peers) {
        this.endpoint = config.endpoint();
        this.store = store;
        this.housekeeping = housekeeping;
        this.catalog = layout.catalog();
        this.groups = groups;
        this.layout = layout;
        this.self = self;
        this.peers = peers;
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
                } else if (!e.empty() && !groups.bootstrapped(e)) {
                    bootstrapPending.put(e.id(), e.parent()); // split before a restart that came before its bootstrap
                }
            }
        } catch (RuntimeException e) {
            starter.shutdownNow();
            throw e;
        }
    }

    Region region(int id) {
        return regions.get(id);
    }

    Collection<Region> regions() {
        return regions.values();
    }

    void onRegionStarted(Consumer<Region> listener) {
        startListeners.add(listener);
    }

    void onStorageFailed(java.util.function.BiConsumer<Region, String> listener) {
        failureListeners.add(listener);
    }

    @Override
    public void storageFailed(Region region, String why) {
        for (java.util.function.BiConsumer<Region, String> l : failureListeners) {
            l.accept(region, why);
        }
    }

    /** Makes the (not yet started) region of a catalog entry. */
    private Region create(RegionCatalog.Entry entry, boolean madeNow) {
        NodeOptions options = groups.prepare(entry, madeNow);
        Region parent = entry.parent() == 0 ? null : regions.get(entry.parent());
        boolean ledParent = campaignsFirst(entry, parent);
        campaignFirst.remove(entry.id());
        return groups.make(entry, options, ledParent, this);
    }

    /**
     * Starts every region group of the initial layout, then the regions split off them whose parents have applied the
     * split (the others start when their parent's replay reaches it), then retires those merged into another before a
     * crash cut their retirement short.
     */
    void startAll() {
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
    }

    private void startRegion(Region r) {
        try {
            r.start();
        } catch (RuntimeException e) { // jraft says only "Fail to init node, please see the logs"
            throw new IllegalStateException("region " + r.id() + " cannot start, its Raft data is in "
                    + groups.dir(r.id()) + ": " + e.getMessage(), e);
        }
    }

    /** Starts the listed region {@code id} unless it runs already. */
    private synchronized void startListed(int id) {
        RegionCatalog.Entry entry = catalog.get(id);
        if (closed || entry == null || regions.containsKey(id)) {
            return;
        }
        long began = System.nanoTime();
        boolean madeNow = entry.parent() != 0 && !entry.empty() && !groups.bootstrapped(entry);
        if (madeNow) {
            groups.bootstrap(entry);
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
        return leader.isEmpty() || leader.equals(endpoint) ? null : leader;
    }

    // ---- the initial layout -----------------------------------------------------------------------

    boolean layoutPending() {
        return layout.pending();
    }

    /** See {@link RegionHost#adoptLayout}. */
    synchronized void adoptLayout(boolean startEmpty) {
        if (closed) {
            return;
        }
        layout.adopt(startEmpty, this::startListed);
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
        groups.clearLeftovers(child.getId());
        bootstrapPending.put(child.getId(), parent.id()); // before the listing: from here on the parent takes no snapshot
        catalog.add(RegionCatalog.Entry.of(child.getId(), Region.Shape.of(child).range(), child.getEpoch(),
                parent.id(), index, false, parent.peers())); // a split moves no replica: the child is where its parent is
    }

    @Override
    public boolean childBootstrapPending(int parentId) {
        return bootstrapPending.containsValue(parentId);
    }

    @Override
    public void adoptChild(RegionState child, long createdAt) {
        if (catalog.get(child.getId()) != null || !isMember(child)) {
            return; // listed already, or split off before this node held a replica of the parent (a replica moved here)
        }
        groups.clearLeftovers(child.getId());
        // a new region made before placement records no replicas: every node held one
        catalog.add(RegionCatalog.Entry.of(child.getId(), Region.Shape.of(child).range(), child.getEpoch(),
                child.getParent(), createdAt, true, child.getPeersCount() > 0 ? child.getPeersList() : peers.get()));
        LOG.info("region {}: learned from region {}'s snapshot; it starts empty and gets a snapshot from its leader",
                child.getId(), child.getParent());
    }

    /** Whether this node is among a new region's voters (a region made before placement names none: all nodes). */
    private boolean isMember(RegionState child) {
        return child.getPeersCount() == 0 || child.getPeersList().contains(endpoint);
    }

    @Override
    public void peersChanged(Region region, List<String> voters) {
        catalog.setPeers(region.id(), voters);
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
        } catch (RejectedExecutionException closing) {
            // the node is stopping; the child starts with it next time
        }
    }

    /**
     * Regions split off others whose group is being made here (its split applied, its group not started yet), as a
     * route lists them: role STARTING, no leader.
     */
    List<RegionInfo> starting() {
        List<RegionInfo> out = new ArrayList<>();
        for (Integer id : bootstrapPending.keySet()) {
            RegionCatalog.Entry e = catalog.get(id);
            if (e == null || regions.containsKey(id)) {
                continue;
            }
            out.add(startingInfo(RegionGroups.stateOf(e), e.peers()));
        }
        return out;
    }

    /** A region whose group does not run here yet, as a route lists it: role STARTING, no leader. */
    static RegionInfo startingInfo(RegionState state, List<String> replicas) {
        return RegionInfo.newBuilder().setId(state.getId()).setStartKey(state.getStartKey())
                .setEndKey(state.getEndKey()).setEpoch(state.getEpoch()).addAllPeers(replicas).setRole("STARTING").build();
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
        }, 50, TimeUnit.MILLISECONDS);
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
            if (System.nanoTime() - logged > TimeUnit.SECONDS.toNanos(10)) {
                logged = System.nanoTime();
                LOG.warn("region {}: waiting {} s for this node's replica of region {} to apply the merge's prepare at"
                                + " index {} (it is at {})", leftId, TimeUnit.NANOSECONDS.toSeconds(logged - since),
                        right.getId(), right.getMergePreparedAt(), r == null ? "not started" : r.appliedIndex());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
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
                            housekeeping.schedule(() -> retire(regionId, into, index), 1, TimeUnit.SECONDS);
                        }
                    });
                }
            });
            return;
        }
        try {
            starter.execute(() -> retireNow(regionId, into.id()));
        } catch (RejectedExecutionException closing) {
            // the node is stopping; the next start retires it (the region it went into lists it as absorbed)
        }
    }

    private synchronized void retireNow(int regionId, int into) {
        if (closed || catalog.get(regionId) == null) {
            return;
        }
        if (!RegionGroups.stop(regions.remove(regionId))) {
            return;
        }
        catalog.remove(regionId); // first: a crash after it leaves only files, which a later split's id never meets
        groups.removeFiles(regionId);
        LOG.info("region {} retired: merged into region {}; its group is stopped and its files removed", regionId, into);
    }

    // ---- replica moves ---------------------------------------------------------------------------

    /** See {@link RegionHost#addReplica}. */
    void addReplica(RegionInfo info) {
        if (closed) {
            throw new IllegalStateException("node " + endpoint + " is closing");
        }
        if (catalog.get(info.getId()) == null) {
            groups.clearLeftovers(info.getId());
            KeyRange range = new KeyRange(info.getStartKey().toByteArray(), info.getEndKey().toByteArray());
            catalog.add(RegionCatalog.Entry.of(info.getId(), range, info.getEpoch(), 0, 0, true, info.getPeersList()));
            LOG.info("region {}: a replica moves here; it starts empty and gets a snapshot from its leader", info.getId());
        }
        startListed(info.getId());
    }

    /** See {@link RegionHost#dropReplica}. */
    synchronized void dropReplica(int regionId, List<String> voters) {
        if (voters.contains(endpoint)) {
            throw new IllegalArgumentException("region " + regionId + " still has a replica on " + endpoint
                    + " (its voters are " + voters + "): not dropped");
        }
        RegionCatalog.Entry entry = catalog.get(regionId);
        if (closed || entry == null) {
            return;
        }
        Region r = regions.remove(regionId);
        KeyRange range = r != null ? r.range() : groups.currentRange(entry);
        if (!RegionGroups.stop(r)) {
            regions.put(regionId, r);
            throw new IllegalStateException("interrupted while stopping region " + regionId);
        }
        catalog.remove(regionId); // first: a crash after it leaves data no listed region covers, and files
        RaftDirs.clearRange(regionId, range, groups.dir(regionId), store);
        groups.removeFiles(regionId);
        LOG.info("region {}: replica dropped here (the region is on {} now): group stopped, range {} cleared, files"
                + " removed", regionId, voters, range);
    }

    /**
     * Starts no more groups and stops those that run, waiting for each, also on an interrupted thread (the interrupt is
     * kept for the caller): the caller closes the log and the store the groups write to next, and a RocksDB closed
     * under a running group, or one still starting, takes the JVM down.
     */
    void close() {
        closed = true;
        starter.shutdownNow();
        if (!Uninterruptible.awaitTermination(starter, 30, TimeUnit.SECONDS)) {
            LOG.warn("a region group still starting after 30 s; stopping the others");
        }
        for (Region r : regions.values()) {
            r.shutdown();
        }
        for (Region r : regions.values()) {
            Uninterruptible.run(r::join);
        }
    }
}
