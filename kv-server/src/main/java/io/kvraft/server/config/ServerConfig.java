package io.kvraft.server.config;

import io.kvraft.common.config.HostPort;
import io.kvraft.common.config.YamlConfig;

import java.nio.file.Path;
import java.util.List;

import static java.util.Objects.requireNonNull;
import static java.util.Objects.requireNonNullElse;

/**
 * One node's YAML ({@code conf/server-N.yaml}), bound into immutable records. Defaults live in
 * the compact constructors; rules that span fields are checked there too.
 *
 * @param endpoint host:port this node listens on for Raft and client traffic (one port for both)
 * @param dataDir  where the Raft logs, Raft meta, snapshots and the store live
 * @param cluster  the peers and the regions, identical on every node
 * @param shutdown how a SIGTERM is handled
 * @param logging  log level of the node's own loggers
 * @param metrics  the Prometheus endpoint and JMX
 * @param tls      mutual TLS on the RPC port, for clients and for the Raft traffic between nodes (off by default)
 * @param split    automatic region splits by size and load
 * @param merge    merges of small adjacent regions, automatic ones off by default
 * @param replication how many nodes hold a replica of each region
 * @param placement   where the cluster's meta leader moves replicas: onto joined nodes, off drained and down ones
 * @param moves       how long a replica move's steps may take
 * @param backup      how long a backup session may sit unread
 */
// Longer than 500 lines: the YAML's schema, a record per section, nested because region/, rpc/ and the tests name them
// RaftConfig, ServerConfig.LimitsConfig, ... and Jackson's type errors for a section quote that name.
public record ServerConfig(
        String endpoint,
        String dataDir,
        ClusterConfig cluster,
        StoreConfig store,
        RaftConfig raft,
        LimitsConfig limits,
        BalanceConfig balance,
        ShutdownConfig shutdown,
        LoggingConfig logging,
        MetricsConfig metrics,
        io.kvraft.common.config.TlsConfig tls,
        SplitConfig split,
        MergeConfig merge,
        ReplicationConfig replication,
        PlacementConfig placement,
        MovesConfig moves,
        BackupConfig backup) {

    public ServerConfig {
        requireNonNull(endpoint, "endpoint is required (host:port)");
        HostPort.parse(endpoint);
        requireNonNull(dataDir, "dataDir is required");
        requireNonNull(cluster, "cluster is required");
        store = requireNonNullElse(store, StoreConfig.DEFAULT);
        raft = requireNonNullElse(raft, RaftConfig.DEFAULT);
        limits = requireNonNullElse(limits, LimitsConfig.DEFAULT);
        balance = requireNonNullElse(balance, BalanceConfig.DEFAULT);
        shutdown = requireNonNullElse(shutdown, ShutdownConfig.DEFAULT);
        logging = requireNonNullElse(logging, LoggingConfig.DEFAULT);
        metrics = requireNonNullElse(metrics, MetricsConfig.DEFAULT);
        tls = requireNonNullElse(tls, io.kvraft.common.config.TlsConfig.OFF);
        split = requireNonNullElse(split, SplitConfig.DEFAULT);
        merge = requireNonNullElse(merge, MergeConfig.DEFAULT);
        replication = requireNonNullElse(replication, ReplicationConfig.DEFAULT);
        placement = requireNonNullElse(placement, PlacementConfig.DEFAULT);
        moves = requireNonNullElse(moves, MovesConfig.DEFAULT);
        backup = requireNonNullElse(backup, BackupConfig.DEFAULT);
        if (cluster.joining()) {
            if (cluster.join().contains(endpoint)) {
                throw new IllegalArgumentException("cluster.join " + cluster.join() + " names this node's own endpoint "
                        + endpoint + ": list members of the cluster to join");
            }
            cluster = cluster.withSelf(endpoint);
        } else if (!cluster.peers().contains(endpoint)) {
            throw new IllegalArgumentException("endpoint " + endpoint + " is not one of cluster.peers " + cluster.peers());
        }
        if (!cluster.joining() && replication.factor() != null && replication.factor() > cluster.peers().size()) {
            throw new IllegalArgumentException("replication.factor " + replication.factor() + " is above the "
                    + cluster.peers().size() + " nodes in cluster.peers: a region cannot have more replicas than there"
                    + " are nodes");
        }
    }

    /**
     * The settings a benchmark result depends on, on one line, for reports: the store, the Raft log and
     * replication switches, what the pipeline switch does to a leader, and TLS.
     */
    public String summary() {
        String pipeline = raft.replicatorPipeline()
                ? "raft.replicatorPipeline=true raft.maxReplicatorInflightMsgs=" + raft.maxReplicatorInflightMsgs()
                : "raft.replicatorPipeline=false (at most 2 AppendEntries outstanding per follower)";
        return "regions=" + cluster.regionCount() + " nodes=" + cluster.peers().size()
                + " replication.factor=" + replicationFactor() + " store.engine=" + store.engine()
                + (store.engine().equals("memory") && !store.hashIndex() ? " store.hashIndex=false" : "")
                + " raft.sync=" + raft.sync()
                + " raft.logStorage=" + raft.logStorage() + " " + pipeline
                + " raft.maxProposalsInflight=" + raft.maxProposalsInflight()
                + " raft.maxRequestsPerEntry=" + raft.maxRequestsPerEntry()
                + " raft.appendEntriesThreads=" + raft.appendEntriesThreads() + " raft.nodeHeartbeats=" + raft.nodeHeartbeats()
                + " tls=" + tls.enabled();
    }

    /** Without the operational sections: their defaults apply. */
    public ServerConfig(String endpoint, String dataDir, ClusterConfig cluster, StoreConfig store, RaftConfig raft,
                        LimitsConfig limits, BalanceConfig balance) {
        this(endpoint, dataDir, cluster, store, raft, limits, balance, null, null, null, null, null, null, null, null, null,
                null);
    }

    /**
     * How many nodes hold a replica of each region: {@code replication.factor}, or 3 when not given (all the nodes,
     * when there are fewer).
     */
    public int replicationFactor() {
        return replication.factor() != null ? replication.factor() : Math.min(3, cluster.peers().size());
    }

    public static ServerConfig load(Path file) {
        return YamlConfig.load(file, ServerConfig.class);
    }

    public ServerConfig withDataDir(String newDataDir) {
        return new ServerConfig(endpoint, newDataDir, cluster, store, raft, limits, balance, shutdown, logging, metrics, tls, split, merge, replication, placement, moves, backup);
    }

    public ServerConfig withRaft(RaftConfig newRaft) {
        return new ServerConfig(endpoint, dataDir, cluster, store, newRaft, limits, balance, shutdown, logging, metrics, tls, split, merge, replication, placement, moves, backup);
    }

    public ServerConfig withStore(StoreConfig newStore) {
        return new ServerConfig(endpoint, dataDir, cluster, newStore, raft, limits, balance, shutdown, logging, metrics, tls, split, merge, replication, placement, moves, backup);
    }

    public ServerConfig withLimits(LimitsConfig newLimits) {
        return new ServerConfig(endpoint, dataDir, cluster, store, raft, newLimits, balance, shutdown, logging, metrics, tls, split, merge, replication, placement, moves, backup);
    }

    public ServerConfig withReplication(ReplicationConfig newReplication) {
        return new ServerConfig(endpoint, dataDir, cluster, store, raft, limits, balance, shutdown, logging, metrics, tls, split, merge, newReplication, placement, moves, backup);
    }

    public ServerConfig withPlacement(PlacementConfig newPlacement) {
        return new ServerConfig(endpoint, dataDir, cluster, store, raft, limits, balance, shutdown, logging, metrics, tls, split, merge, replication, newPlacement, moves, backup);
    }

    public ServerConfig withCluster(ClusterConfig newCluster) {
        return new ServerConfig(endpoint, dataDir, newCluster, store, raft, limits, balance, shutdown, logging, metrics, tls, split, merge, replication, placement, moves, backup);
    }

    public ServerConfig withMoves(MovesConfig newMoves) {
        return new ServerConfig(endpoint, dataDir, cluster, store, raft, limits, balance, shutdown, logging, metrics, tls, split, merge, replication, placement, newMoves, backup);
    }

    public ServerConfig withBackup(BackupConfig newBackup) {
        return new ServerConfig(endpoint, dataDir, cluster, store, raft, limits, balance, shutdown, logging, metrics, tls, split, merge, replication, placement, moves, newBackup);
    }

    public ServerConfig withBalance(BalanceConfig newBalance) {
        return new ServerConfig(endpoint, dataDir, cluster, store, raft, limits, newBalance, shutdown, logging, metrics, tls, split, merge, replication, placement, moves, backup);
    }

    /**
     * @param factor replicas per region (null: 3, or every node when there are fewer). The regions of the initial
     *               layout are placed round the nodes of {@code cluster.peers} in turn, region i on nodes i .. i+factor-1
     *               (with {@code factor} equal to the node count, every node holds every region); a region split off
     *               another has its parent's replicas. A data directory keeps the peers and factor it was made with.
     */
    public record ReplicationConfig(Integer factor) {
        public static final ReplicationConfig DEFAULT = new ReplicationConfig(null);

        public ReplicationConfig {
            if (factor != null && factor < 1) {
                throw new IllegalArgumentException("replication.factor must be at least 1, got " + factor);
            }
        }
    }

    /**
     * @param maxKeyBytes   keys longer than this are refused with INVALID_ARGUMENT
     * @param maxValueBytes values longer than this are refused with INVALID_ARGUMENT
     * @param maxBatchOps   operations in one request at most; also the most pairs one scan page returns
     * @param maxScanBytes  key and value bytes one scan page returns at most (a page always holds at least one
     *                      pair); larger scans come back in several pages
     */
    public record LimitsConfig(Integer maxKeyBytes, Integer maxValueBytes, Integer maxBatchOps, Integer maxScanBytes) {
        public static final LimitsConfig DEFAULT = new LimitsConfig(null, null, null, null);

        public LimitsConfig {
            maxKeyBytes = requireNonNullElse(maxKeyBytes, 4096);
            maxValueBytes = requireNonNullElse(maxValueBytes, 1 << 20);
            maxBatchOps = requireNonNullElse(maxBatchOps, 10_000);
            maxScanBytes = requireNonNullElse(maxScanBytes, 4 << 20);
            if (maxKeyBytes < 1 || maxValueBytes < 0 || maxBatchOps < 1 || maxScanBytes < 1) {
                throw new IllegalArgumentException("limits must be positive");
            }
        }

        public LimitsConfig(Integer maxKeyBytes, Integer maxValueBytes, Integer maxBatchOps) {
            this(maxKeyBytes, maxValueBytes, maxBatchOps, null);
        }
    }

    /**
     * Automatic splits: every {@code checkIntervalMs} a node looks at the regions it leads and splits, at its middle
     * key, the first one that holds more than {@code maxKeys} keys or {@code maxBytes} bytes (RocksDB's approximate
     * sizes, MemoryDB's counts), or served more than {@code maxOpsPerSecond} operations a second since the last
     * check (0: no splits by load). {@code kv-client split REGION} works whether or not {@code enabled}.
     */
    public record SplitConfig(Boolean enabled, Long maxKeys, Long maxBytes, Long maxOpsPerSecond, Integer checkIntervalMs) {
        public static final SplitConfig DEFAULT = new SplitConfig(null, null, null, null, null);

        public SplitConfig {
            enabled = requireNonNullElse(enabled, true);
            maxKeys = requireNonNullElse(maxKeys, 1_000_000L);
            maxBytes = requireNonNullElse(maxBytes, 96L << 20);
            maxOpsPerSecond = requireNonNullElse(maxOpsPerSecond, 0L);
            checkIntervalMs = requireNonNullElse(checkIntervalMs, 10_000);
            if (maxKeys < 2) {
                throw new IllegalArgumentException("split.maxKeys must be at least 2, got " + maxKeys);
            }
            if (maxBytes < 1) {
                throw new IllegalArgumentException("split.maxBytes must be positive, got " + maxBytes);
            }
            if (maxOpsPerSecond < 0) {
                throw new IllegalArgumentException("split.maxOpsPerSecond must be 0 (off) or positive, got " + maxOpsPerSecond);
            }
            if (checkIntervalMs < 100) {
                throw new IllegalArgumentException("split.checkIntervalMs must be at least 100, got " + checkIntervalMs);
            }
        }
    }

    /**
     * Merges: {@code kv-client merge LEFT RIGHT} works whether or not {@code enabled}. When enabled, every
     * {@code checkIntervalMs} a node looks at the regions it leads and merges the first that, with the region after it,
     * holds at most {@code maxKeys} keys and {@code maxBytes} bytes (each of the two). A merge waits up to
     * {@code timeoutMs} for every replica of the right region to hold its final data durably; past that it is rolled
     * back, and a merge left half done by a crash or a leader change is finished or rolled back by the left region's
     * leader after that long.
     */
    public record MergeConfig(Boolean enabled, Long maxKeys, Long maxBytes, Integer checkIntervalMs, Integer timeoutMs) {
        public static final MergeConfig DEFAULT = new MergeConfig(null, null, null, null, null);

        public MergeConfig {
            enabled = requireNonNullElse(enabled, false);
            maxKeys = requireNonNullElse(maxKeys, 200_000L);
            maxBytes = requireNonNullElse(maxBytes, 20L << 20);
            checkIntervalMs = requireNonNullElse(checkIntervalMs, 10_000);
            timeoutMs = requireNonNullElse(timeoutMs, 30_000);
            if (maxKeys < 0) {
                throw new IllegalArgumentException("merge.maxKeys must be 0 or more, got " + maxKeys);
            }
            if (maxBytes < 0) {
                throw new IllegalArgumentException("merge.maxBytes must be 0 or more, got " + maxBytes);
            }
            if (checkIntervalMs < 100) {
                throw new IllegalArgumentException("merge.checkIntervalMs must be at least 100, got " + checkIntervalMs);
            }
            if (timeoutMs < 1000) {
                throw new IllegalArgumentException("merge.timeoutMs must be at least 1000, got " + timeoutMs);
            }
        }
    }

    /**
     * @param enabled    move region leaders so every node leads its fair share (after start and rejoin)
     * @param intervalMs how often a node compares its leader count to its fair share
     * @param settleMs   how long a node moves no leader after a split or merge changed its regions, so a
     *                   region that has just elected its first leader is not stalled again by a transfer
     */
    public record BalanceConfig(Boolean enabled, Integer intervalMs, Integer settleMs) {
        public static final BalanceConfig DEFAULT = new BalanceConfig(null, null, null);

        public BalanceConfig {
            enabled = requireNonNullElse(enabled, true);
            intervalMs = requireNonNullElse(intervalMs, 1000);
            settleMs = requireNonNullElse(settleMs, 2000);
            if (intervalMs < 10) {
                throw new IllegalArgumentException("balance.intervalMs must be at least 10");
            }
            if (settleMs < 0) {
                throw new IllegalArgumentException("balance.settleMs must be 0 or more, got " + settleMs);
            }
        }
    }

    /**
     * The cluster map's leader places replicas: it moves them onto nodes that joined until every node holds as many
     * as the others (within 1), off nodes being drained, and off nodes down for longer than {@code downAfterMs}.
     *
     * @param enabled          false: replicas move only by hand (kv-client move-replica); nodes still join and drain
     * @param intervalMs       how often each node reports its regions to the map's leader, and the leader looks for
     *                         moves to make
     * @param downAfterMs      a node that has not reported for this long counts as down: its replicas are rebuilt on
     *                         the other nodes (when enough are left). One that returns sooner simply catches up.
     * @param movesAtOnce      how many replica moves, each of another region, may run at once (rebuilds, drains;
     *                         balancing moves one at a time, when no other runs). Each region leader runs its own
     *                         moves one after another, so the moves at once are at most the nodes that lead regions
     */
    public record PlacementConfig(Boolean enabled, Integer intervalMs, Long downAfterMs, Integer movesAtOnce) {
        public static final PlacementConfig DEFAULT = new PlacementConfig(null, null, null, null);

        public PlacementConfig {
            enabled = requireNonNullElse(enabled, true);
            intervalMs = requireNonNullElse(intervalMs, 1000);
            downAfterMs = requireNonNullElse(downAfterMs, 600_000L);
            movesAtOnce = requireNonNullElse(movesAtOnce, 3);
            if (intervalMs < 50) {
                throw new IllegalArgumentException("placement.intervalMs must be at least 50, got " + intervalMs);
            }
            if (downAfterMs < 5L * intervalMs) {
                throw new IllegalArgumentException("placement.downAfterMs (" + downAfterMs + ") must be at least 5"
                        + " placement intervals (" + 5L * intervalMs + " ms): a node is down only after missing reports");
            }
            if (movesAtOnce < 1 || movesAtOnce > 64) {
                throw new IllegalArgumentException("placement.movesAtOnce must be 1 to 64, got " + movesAtOnce);
            }
        }
    }

    /**
     * A replica move, driven by its region's leader (kv-client move-replica, and placement on the map's leader).
     *
     * @param catchUpMs      how long the replica moving to a node may take to catch up (a snapshot of its region, then
     *                       the log) before the move is given up
     * @param strayLearnerMs how long learners that a lost leader's move left in a region stay there before the region's
     *                       leader takes them out and drops their replicas (a leader that loses its leadership mid-move
     *                       cannot take its learner out)
     * @param silentTargetMs how long the node a replica moves to may leave the leader's questions about its replica
     *                       unanswered (down, stopping, wiped) before the move is given up, long before catchUpMs
     */
    public record MovesConfig(Long catchUpMs, Long strayLearnerMs, Long silentTargetMs) {
        public static final MovesConfig DEFAULT = new MovesConfig(null, null, null);

        /** The moves with the default silentTargetMs. */
        public MovesConfig(Long catchUpMs, Long strayLearnerMs) {
            this(catchUpMs, strayLearnerMs, null);
        }

        public MovesConfig {
            catchUpMs = requireNonNullElse(catchUpMs, 300_000L);
            strayLearnerMs = requireNonNullElse(strayLearnerMs, 60_000L);
            silentTargetMs = requireNonNullElse(silentTargetMs, 30_000L);
            if (silentTargetMs < 1000) {
                throw new IllegalArgumentException("moves.silentTargetMs must be at least 1000, got " + silentTargetMs);
            }
            if (catchUpMs < 1000) {
                throw new IllegalArgumentException("moves.catchUpMs must be at least 1000, got " + catchUpMs);
            }
            if (strayLearnerMs < 1000) {
                throw new IllegalArgumentException("moves.strayLearnerMs must be at least 1000 (learners are looked at"
                        + " once a second), got " + strayLearnerMs);
            }
        }
    }

    /**
     * @param sessionIdleMs a backup session that no client reads for this long is closed, so a killed backup pins
     *                      nothing for long (a RocksDB snapshot, a MemoryDB copy)
     */
    public record BackupConfig(Long sessionIdleMs) {
        public static final BackupConfig DEFAULT = new BackupConfig(null);

        public BackupConfig {
            sessionIdleMs = requireNonNullElse(sessionIdleMs, 60_000L);
            if (sessionIdleMs < 1000) {
                throw new IllegalArgumentException("backup.sessionIdleMs must be at least 1000 (sessions are looked at"
                        + " once a second), got " + sessionIdleMs);
            }
        }
    }

    /**
     * @param timeoutMs after a SIGTERM the node hands its region leaders to live peers, answers new requests
     *                  SHUTTING_DOWN, finishes those in flight, closes its store and exits 0. If that takes
     *                  longer than this, or a second SIGTERM comes, the process halts at once with exit code 1.
     */
    public record ShutdownConfig(Integer timeoutMs) {
        public static final ShutdownConfig DEFAULT = new ShutdownConfig(null);

        public ShutdownConfig {
            timeoutMs = requireNonNullElse(timeoutMs, 10_000);
            if (timeoutMs < 100) {
                throw new IllegalArgumentException("shutdown.timeoutMs must be at least 100, got " + timeoutMs);
            }
        }
    }

    /** @param level of the node's own log lines (io.kvraft.*): trace, debug, info, warn or error */
    public record LoggingConfig(String level) {
        private static final List<String> LEVELS = List.of("trace", "debug", "info", "warn", "error");
        public static final LoggingConfig DEFAULT = new LoggingConfig(null);

        public LoggingConfig {
            level = requireNonNullElse(level, "info").toLowerCase(java.util.Locale.ROOT);
            if (!LEVELS.contains(level)) {
                throw new IllegalArgumentException("logging.level must be one of " + LEVELS + ", got '" + level + "'");
            }
        }
    }

    public ServerConfig withSplit(SplitConfig newSplit) {
        return new ServerConfig(endpoint, dataDir, cluster, store, raft, limits, balance, shutdown, logging, metrics, tls, newSplit, merge, replication, placement, moves, backup);
    }

    public ServerConfig withMerge(MergeConfig newMerge) {
        return new ServerConfig(endpoint, dataDir, cluster, store, raft, limits, balance, shutdown, logging, metrics, tls, split, newMerge, replication, placement, moves, backup);
    }

    public ServerConfig withTls(io.kvraft.common.config.TlsConfig newTls) {
        return new ServerConfig(endpoint, dataDir, cluster, store, raft, limits, balance, shutdown, logging, metrics, newTls, split, merge, replication, placement, moves, backup);
    }

    public ServerConfig withMetrics(MetricsConfig newMetrics) {
        return new ServerConfig(endpoint, dataDir, cluster, store, raft, limits, balance, shutdown, logging, newMetrics, tls, split, merge, replication, placement, moves, backup);
    }

    /**
     * @param port Prometheus text format at http://host:port/metrics; 0 (the default) = no HTTP endpoint
     * @param host the address the endpoint listens on; default: the host of {@code endpoint}
     * @param jmx  the node and region gauges as JMX MBeans (domain io.kvraft.HOST-PORT); default true
     */
    public record MetricsConfig(Integer port, String host, Boolean jmx) {
        public static final MetricsConfig DEFAULT = new MetricsConfig(null, null, null);

        public MetricsConfig {
            port = requireNonNullElse(port, 0);
            jmx = requireNonNullElse(jmx, true);
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("metrics.port must be in 0..65535 (0 = off), got " + port);
            }
            if (host != null && host.isBlank()) {
                throw new IllegalArgumentException("metrics.host must not be blank");
            }
        }
    }
}
