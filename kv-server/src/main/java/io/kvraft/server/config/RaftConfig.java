package io.kvraft.server.config;

import static java.util.Objects.requireNonNullElse;

/**
 * Raft settings, mapped onto jraft's NodeOptions and RaftOptions in one place (RaftOptionsFactory).
 *
 * @param electionTimeoutMs         a follower that hears no leader for this long starts an election.
 *                                  Heartbeats go every electionTimeoutMs / electionHeartbeatFactor. The
 *                                  default 5000 keeps 72 idle groups under 0.1 core; failover then takes
 *                                  5-10 s. Lower it for faster failover at the price of idle CPU.
 * @param startupElectionTimeoutMs  the election timeout a region uses until it first sees a leader, so a
 *                                  fresh cluster elects within a few seconds; then electionTimeoutMs applies.
 *                                  At least two heartbeats long (the default: two heartbeats, at least 1 s).
 * @param electionHeartbeatFactor   election timeout / heartbeat interval; the default 5 (a heartbeat a second
 *                                  with the default timeout, TiKV's ratio) costs half the idle wake-ups of
 *                                  jraft's 10 and leaves failover as it was (a follower waits out the timeout)
 * @param sync                      fsync the Raft log before acknowledging (durability across power loss)
 * @param snapshotIntervalSecs      each region snapshots its store this often (0 = never) and the log is truncated
 * @param replicatorPipeline        pipeline AppendEntries to followers (jraft RaftOptions.replicatorPipeline); off
 *                                  also holds the leader to two AppendEntries outstanding per follower, the least
 *                                  jraft's replicator works with (jraft's flag alone changes only the followers)
 * @param maxReplicatorInflightMsgs jraft's limit on AppendEntries in flight per follower when pipelining (jraft
 *                                  lets one more than this be outstanding); not used with the pipeline off
 * @param maxProposalsInflight      Raft log entries a region leader has in flight; further writes wait and
 *                                  are coalesced into the next entry as soon as one commits
 * @param maxRequestsPerEntry       client requests coalesced into one log entry at most (a batch RPC counts
 *                                  once, whatever its size); 1 turns the leader's coalescing off
 * @param disruptorBufferSize       jraft's ring buffers per group (smaller saves memory with many groups)
 * @param logStorage                shared (one RocksDB log per node, appends of all groups share fsyncs) or per-region (jraft's)
 * @param appendEntriesThreads      pool threads on which a follower handles AppendEntries for all its groups (one more
 *                                  joins while groups hold them all); 0 = jraft's own (with pipelining a thread per
 *                                  group and leader, 48 per node with 24 groups)
 * @param nodeHeartbeats            one heartbeat per node pair and interval vouches for every region the two share
 *                                  (the regions the sender leads), and a region whose replicas all answer and that
 *                                  committed nothing for two intervals sends jraft's own heartbeats 30 times less
 *                                  often; failover is unchanged (a follower still campaigns an election timeout
 *                                  after its leader's node went quiet). Off: jraft's heartbeats alone, one per
 *                                  region and follower
 */
public record RaftConfig(
        Integer electionTimeoutMs,
        Integer startupElectionTimeoutMs,
        Integer electionHeartbeatFactor,
        Boolean sync,
        Integer snapshotIntervalSecs,
        Boolean replicatorPipeline,
        Integer maxReplicatorInflightMsgs,
        Integer maxProposalsInflight,
        Integer maxRequestsPerEntry,
        Integer disruptorBufferSize,
        String logStorage,
        Integer appendEntriesThreads,
        Boolean nodeHeartbeats,
        Boolean readsRideWrites) {

    /** One RocksDB log for all groups of the node (appends share fsyncs). */
    public static final String LOG_SHARED = "shared";
    /** jraft's own: one RocksDB log per group. */
    public static final String LOG_PER_REGION = "per-region";

    public static final RaftConfig DEFAULT = new RaftConfig(null, null, null, null, null, null, null, null, null, null, null, null, null,
            null);

    public RaftConfig {
        electionTimeoutMs = requireNonNullElse(electionTimeoutMs, 5000);
        electionHeartbeatFactor = requireNonNullElse(electionHeartbeatFactor, 5);
        startupElectionTimeoutMs = requireNonNullElse(startupElectionTimeoutMs,
                Math.min(electionTimeoutMs, Math.max(1000, 2 * electionTimeoutMs / electionHeartbeatFactor)));
        sync = requireNonNullElse(sync, true);
        snapshotIntervalSecs = requireNonNullElse(snapshotIntervalSecs, 600);
        replicatorPipeline = requireNonNullElse(replicatorPipeline, true);
        maxReplicatorInflightMsgs = requireNonNullElse(maxReplicatorInflightMsgs, 256);
        maxProposalsInflight = requireNonNullElse(maxProposalsInflight, 1);
        maxRequestsPerEntry = requireNonNullElse(maxRequestsPerEntry, 4096);
        disruptorBufferSize = requireNonNullElse(disruptorBufferSize, 1024);
        logStorage = requireNonNullElse(logStorage, LOG_SHARED);
        appendEntriesThreads = requireNonNullElse(appendEntriesThreads, 2);
        nodeHeartbeats = requireNonNullElse(nodeHeartbeats, true);
        readsRideWrites = requireNonNullElse(readsRideWrites, true);
        if (appendEntriesThreads < 0 || appendEntriesThreads > 64) {
            throw new IllegalArgumentException("raft.appendEntriesThreads must be 0 (jraft's own threads) to 64, got "
                    + appendEntriesThreads);
        }
        if (!logStorage.equals(LOG_SHARED) && !logStorage.equals(LOG_PER_REGION)) {
            throw new IllegalArgumentException("raft.logStorage must be '" + LOG_SHARED + "' or '" + LOG_PER_REGION
                    + "', got '" + logStorage + "'");
        }
        if (electionTimeoutMs < 100 || startupElectionTimeoutMs < 100) {
            throw new IllegalArgumentException("raft.electionTimeoutMs and startupElectionTimeoutMs must be at least 100");
        }
        if (electionHeartbeatFactor < 2 || electionTimeoutMs / electionHeartbeatFactor < 10) {
            throw new IllegalArgumentException("raft.electionHeartbeatFactor must be >= 2 and leave heartbeats of >= 10 ms");
        }
        if (startupElectionTimeoutMs > electionTimeoutMs
                || startupElectionTimeoutMs < 2 * (electionTimeoutMs / electionHeartbeatFactor)) {
            throw new IllegalArgumentException("raft.startupElectionTimeoutMs must be between two heartbeats ("
                    + 2 * (electionTimeoutMs / electionHeartbeatFactor) + " ms) and electionTimeoutMs");
        }
        if (snapshotIntervalSecs < 0 || maxReplicatorInflightMsgs < 1 || maxProposalsInflight < 1 || maxRequestsPerEntry < 1) {
            throw new IllegalArgumentException("raft: counts and intervals must be positive");
        }
        if (disruptorBufferSize < 1 || Integer.bitCount(disruptorBufferSize) != 1) {
            throw new IllegalArgumentException("raft.disruptorBufferSize must be a power of two, got " + disruptorBufferSize);
        }
    }

    /** With reads riding on write entries (the default). */
    public RaftConfig(Integer electionTimeoutMs, Integer startupElectionTimeoutMs, Integer electionHeartbeatFactor,
                      Boolean sync, Integer snapshotIntervalSecs, Boolean replicatorPipeline,
                      Integer maxReplicatorInflightMsgs, Integer maxProposalsInflight, Integer maxRequestsPerEntry,
                      Integer disruptorBufferSize, String logStorage, Integer appendEntriesThreads,
                      Boolean nodeHeartbeats) {
        this(electionTimeoutMs, startupElectionTimeoutMs, electionHeartbeatFactor, sync, snapshotIntervalSecs,
                replicatorPipeline, maxReplicatorInflightMsgs, maxProposalsInflight, maxRequestsPerEntry,
                disruptorBufferSize, logStorage, appendEntriesThreads, nodeHeartbeats, null);
    }

    public RaftConfig withElectionTimeoutMs(int ms) {
        return new RaftConfig(ms, null, electionHeartbeatFactor, sync, snapshotIntervalSecs, replicatorPipeline,
                maxReplicatorInflightMsgs, maxProposalsInflight, maxRequestsPerEntry, disruptorBufferSize, logStorage,
                appendEntriesThreads, nodeHeartbeats, readsRideWrites);
    }

    public RaftConfig withAppendEntriesThreads(int threads) {
        return new RaftConfig(electionTimeoutMs, startupElectionTimeoutMs, electionHeartbeatFactor, sync, snapshotIntervalSecs,
                replicatorPipeline, maxReplicatorInflightMsgs, maxProposalsInflight, maxRequestsPerEntry, disruptorBufferSize,
                logStorage, threads, nodeHeartbeats, readsRideWrites);
    }

    public RaftConfig withSnapshotIntervalSecs(int secs) {
        return new RaftConfig(electionTimeoutMs, startupElectionTimeoutMs, electionHeartbeatFactor, sync, secs, replicatorPipeline,
                maxReplicatorInflightMsgs, maxProposalsInflight, maxRequestsPerEntry, disruptorBufferSize, logStorage,
                appendEntriesThreads, nodeHeartbeats, readsRideWrites);
    }

    public RaftConfig withNodeHeartbeats(boolean on) {
        return new RaftConfig(electionTimeoutMs, startupElectionTimeoutMs, electionHeartbeatFactor, sync, snapshotIntervalSecs,
                replicatorPipeline, maxReplicatorInflightMsgs, maxProposalsInflight, maxRequestsPerEntry, disruptorBufferSize,
                logStorage, appendEntriesThreads, on, readsRideWrites);
    }
}
