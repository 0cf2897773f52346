package io.kvraft.server.host;

import io.kvraft.server.raft.ScannerPeriodRaftOptions;
import io.kvraft.server.region.Region;

import com.alipay.sofa.jraft.conf.Configuration;
import com.alipay.sofa.jraft.core.DefaultJRaftServiceFactory;
import com.alipay.sofa.jraft.storage.LogStorage;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.option.NodeOptions;
import com.alipay.sofa.jraft.option.RaftOptions;
import com.alipay.sofa.jraft.storage.impl.RocksDBLogStorage;
import com.alipay.sofa.jraft.util.StorageOptionsFactory;
import io.kvraft.server.fs.DurableFiles;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.raftlog.SharedLogStorage;
import io.kvraft.server.raftlog.SharedRaftLog;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompressionType;
import org.rocksdb.DBOptions;
import org.rocksdb.LRUCache;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;

/** The one place where our YAML records become jraft's option objects. */
public final class RaftOptionsFactory {

    /** The smallest {@code maxReplicatorInflightMsgs} jraft's replicator works with: two AppendEntries outstanding. */
    private static final int NO_PIPELINE_INFLIGHT_LIMIT = 1;

    private static volatile boolean logStorageTuned;

    private RaftOptionsFactory() {
    }

    /**
     * @param sharedLog the node's shared Raft log, or null for jraft's own log per group ({@code raft.logStorage})
     */
    public static NodeOptions nodeOptions(ServerConfig config, List<PeerId> peers, Path regionDir, int regionId,
                                   SharedRaftLog sharedLog) {
        RaftConfig raft = config.raft();
        NodeOptions o = new NodeOptions();
        // start with the short timeout so a fresh cluster elects fast; Region switches to the configured one
        o.setElectionTimeoutMs(raft.startupElectionTimeoutMs());
        o.setInitialConf(new Configuration(peers));
        o.setLogUri(regionDir.resolve(RaftDirs.LOG_DIR).toString()); // unused with the shared log, but jraft wants one
        if (sharedLog != null) {
            o.setServiceFactory(new DefaultJRaftServiceFactory() {
                @Override
                public LogStorage createLogStorage(String uri, RaftOptions raftOptions) {
                    return new SharedLogStorage(sharedLog, regionId);
                }
            });
        }
        o.setRaftMetaUri(regionDir.resolve("meta").toString());
        o.setSnapshotUri(regionDir.resolve("snapshot").toString());
        // jraft makes the directories it misses without an fsync of the one holding them, so a power cut could take
        // them back with all they hold: made here first, durably
        try {
            List<String> dirs = sharedLog == null ? List.of("meta", "snapshot", RaftDirs.LOG_DIR) : List.of("meta", "snapshot");
            for (String d : dirs) {
                DurableFiles.createDirectories(regionDir.resolve(d));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the Raft directories in " + regionDir, e);
        }
        o.setSnapshotIntervalSecs(raft.snapshotIntervalSecs());
        // 72 groups on two cores: one set of timers for all groups of a node instead of three per group
        o.setSharedElectionTimer(true);
        o.setSharedVoteTimer(true);
        o.setSharedStepDownTimer(true);
        o.setSharedSnapshotTimer(true);
        o.setSharedTimerPool(true);
        o.setEnableMetrics(false);
        o.setRaftOptions(raftOptions(raft));
        return o;
    }

    private static RaftOptions raftOptions(RaftConfig raft) {
        // jraft's read-index scanner, a fallback that finds nothing on a healthy node, every election timeout instead
        // of every second: 24 fewer wake-ups a second on an idle node of 24 regions
        RaftOptions r = new ScannerPeriodRaftOptions(raft.electionTimeoutMs());
        r.setSync(raft.sync());
        // the term and vote (and a snapshot's meta) fsynced whatever raft.sync says: a node that forgot its vote in
        // a power cut could vote twice in one term; they change at elections only
        r.setSyncMeta(true);
        r.setReplicatorPipeline(raft.replicatorPipeline());
        r.setMaxReplicatorInflightMsgs(replicatorInflightLimit(raft));
        // jraft fixes the heartbeat interval at start as electionTimeout / factor, from the start-up timeout;
        // pick the factor that yields the configured interval (electionTimeoutMs / electionHeartbeatFactor)
        int heartbeatMs = raft.electionTimeoutMs() / raft.electionHeartbeatFactor();
        r.setElectionHeartbeatFactor(Math.max(2, raft.startupElectionTimeoutMs() / heartbeatMs));
        r.setDisruptorBufferSize(raft.disruptorBufferSize());
        return r;
    }

    /**
     * jraft's {@code maxReplicatorInflightMsgs} for this config. jraft's leader pipelines AppendEntries whatever
     * {@code replicatorPipeline} says: that flag only changes how a follower orders and answers them, and the
     * leader keeps up to {@code maxReplicatorInflightMsgs + 1} outstanding per follower either way. So with the
     * pipeline off the leader is also held to the least jraft's replicator works with, 1 (two outstanding: with 0,
     * every response counts as one too many and resets the replicator).
     */
    private static int replicatorInflightLimit(RaftConfig raft) {
        return raft.replicatorPipeline() ? raft.maxReplicatorInflightMsgs() : NO_PIPELINE_INFLIGHT_LIMIT;
    }

    /**
     * Each group keeps its Raft log in a RocksDB of its own; with jraft's default 64 MB memtables 24
     * of them took ~2.8 GB per JVM. Small memtables and one small shared block cache fit a node in
     * well under 1 GiB; snapshots truncate the log. Process-wide, so done once.
     */
    static synchronized void tuneLogStorage() {
        if (logStorageTuned) {
            return;
        }
        ColumnFamilyOptions cf = StorageOptionsFactory.getDefaultRocksDBColumnFamilyOptions();
        cf.setWriteBufferSize(4L << 20);
        cf.setMaxWriteBufferNumber(2);
        cf.setTargetFileSizeBase(8L << 20);
        cf.setMaxBytesForLevelBase(32L << 20);
        cf.setCompressionType(CompressionType.NO_COMPRESSION);
        StorageOptionsFactory.registerRocksDBColumnFamilyOptions(RocksDBLogStorage.class, cf);
        BlockBasedTableConfig table = StorageOptionsFactory.getDefaultRocksDBTableConfig()
                .setBlockCache(new LRUCache(8L << 20));
        StorageOptionsFactory.registerRocksDBTableFormatConfig(RocksDBLogStorage.class, table);
        DBOptions db = StorageOptionsFactory.getDefaultRocksDBOptions();
        db.setMaxBackgroundJobs(1);
        db.setKeepLogFileNum(2);
        db.setMaxTotalWalSize(16L << 20);
        StorageOptionsFactory.registerRocksDBOptions(RocksDBLogStorage.class, db);
        logStorageTuned = true;
    }
}
