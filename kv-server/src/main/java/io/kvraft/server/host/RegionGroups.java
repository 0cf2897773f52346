package io.kvraft.server.host;

import io.kvraft.server.fs.DurableFiles;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.raftlog.SharedRaftLog;
import io.kvraft.server.region.Region;
import io.kvraft.server.region.ShapeHooks;
import io.kvraft.server.region.RegionStateMachine;
import io.kvraft.server.region.RegionTimings;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;

import com.alipay.sofa.jraft.Closure;
import com.alipay.sofa.jraft.JRaftUtils;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.conf.Configuration;
import com.alipay.sofa.jraft.core.StateMachineAdapter;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.error.RaftError;
import com.alipay.sofa.jraft.option.BootstrapOptions;
import com.alipay.sofa.jraft.option.NodeOptions;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.storage.snapshot.SnapshotWriter;
import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.RegionState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.IntFunction;
import java.util.stream.Stream;

/**
 * The Raft groups of this node's regions as files and objects: a catalog entry's group made (its directory checked, its
 * options, its state machine), a split child's group bootstrapped from the store, and a group's files removed. Which
 * groups run, and when, is {@link RegionLifecycle}'s.
 */
final class RegionGroups {

    private static final Logger LOG = LoggerFactory.getLogger(RegionGroups.class);
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

    private final ServerConfig config;
    private final KvStore store;
    private final ScheduledExecutorService housekeeping;
    private final RpcServer rpcServer;
    private final PeerId self;
    private final Path raftRoot;
    /** All groups' Raft logs when raft.logStorage is shared, else null. */
    private final SharedRaftLog sharedLog;
    private final IntFunction<RegionTimings> timings;

    RegionGroups(ServerConfig config, KvStore store, ScheduledExecutorService housekeeping, RpcServer rpcServer,
                 PeerId self, Path raftRoot, SharedRaftLog sharedLog, IntFunction<RegionTimings> timings) {
        this.config = config;
        this.store = store;
        this.housekeeping = housekeeping;
        this.rpcServer = rpcServer;
        this.self = self;
        this.raftRoot = raftRoot;
        this.sharedLog = sharedLog;
        this.timings = timings;
    }

    static RegionState stateOf(RegionCatalog.Entry e) {
        KeyRange range = e.range();
        return RegionState.newBuilder().setId(e.id()).setStartKey(ByteString.copyFrom(range.start()))
                .setEndKey(ByteString.copyFrom(range.end())).setEpoch(e.epoch()).setParent(e.parent())
                .setCreatedAt(e.createdAt()).build();
    }

    Path dir(int regionId) {
        return raftRoot.resolve("region-" + regionId);
    }

    private static List<PeerId> peerIdsOf(RegionCatalog.Entry entry) {
        return entry.peers().stream().map(PeerId::parsePeer).toList();
    }

    /** The region's range as the store recorded it with its applied index, or as the catalog says it started. */
    KeyRange currentRange(RegionCatalog.Entry entry) {
        RegionState state = RegionStateMachine.storedState(store, entry.id());
        return state == null ? entry.range() : Region.Shape.of(state).range();
    }

    /**
     * The first half of making a catalog entry's group: its directory, checked (unless this process bootstrapped it a
     * moment ago), and its options.
     */
    NodeOptions prepare(RegionCatalog.Entry entry, boolean madeNow) {
        int regionId = entry.id();
        Path regionDir = dir(regionId);
        try {
            DurableFiles.createDirectories(regionDir);
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
        return RaftOptionsFactory.nodeOptions(config, peerIdsOf(entry), regionDir, regionId, sharedLog);
    }

    /**
     * The second half: the (not yet started) region, with its state machine.
     *
     * @param ledParent whether this node led the region's parent when it applied the split: its replica campaigns first
     */
    Region make(RegionCatalog.Entry entry, NodeOptions options, boolean ledParent, ShapeHooks splits) {
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
        Region region = new Region(stateOf(entry), entry.peers(), store, self, options, rpcServer, config.raft(),
                config.limits(), leaderKnown, splits, housekeeping,
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

    /**
     * Makes the Raft group of a region split off another, listed but not bootstrapped yet (its split applied a moment
     * ago, or before a restart that came first): its first snapshot is the store's data of its range, which no one has
     * written since the split (the parent refuses writes outside its range, and this group never ran), so every replica
     * bootstraps the same state at the same index. It ran on the parent's state machine thread before, and every
     * request to the parent's keys waited the 0.1-0.3 s it takes under load.
     */
    void bootstrap(RegionCatalog.Entry entry) {
        RegionState child = stateOf(entry);
        Path dir = dir(entry.id());
        clearLeftovers(entry.id()); // a bootstrap a crash cut short
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
            DurableFiles.createDirectories(dir);
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
    boolean bootstrapped(RegionCatalog.Entry entry) {
        return RaftDirs.hasSnapshot(dir(entry.id()).resolve(RaftDirs.SNAPSHOT_DIR));
    }

    /** Stops {@code r}'s group (null: none runs) and waits for it; false when interrupted meanwhile. */
    static boolean stop(Region r) {
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
    void clearLeftovers(int regionId) {
        Path dir = dir(regionId);
        if (Files.exists(dir)) {
            LOG.warn("region {}: removing {} left by an unfinished split", regionId, dir);
        }
        removeFiles(regionId);
    }

    /** Removes a group's log (in the shared log too) and directory. */
    void removeFiles(int regionId) {
        Path dir = dir(regionId);
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
}
