package io.kvraft.server.region;

import io.kvraft.server.raft.QuietRegions;
import io.kvraft.server.raft.ReplicatorLoopBreaker;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.RaftGroupService;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.closure.ReadIndexClosure;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.entity.Task;
import com.alipay.sofa.jraft.error.RaftError;
import com.alipay.sofa.jraft.option.NodeOptions;
import com.alipay.sofa.jraft.option.RaftOptions;
import com.alipay.sofa.jraft.option.ReadOnlyOption;
import com.alipay.sofa.jraft.rpc.RpcServer;
import io.kvraft.common.Coalescer;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.ReadResponse;
import io.kvraft.common.proto.KvProto.Pair;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionState;
import io.kvraft.common.proto.KvProto.ScanResponse;
import io.kvraft.common.proto.KvProto.Value;
import io.kvraft.common.proto.KvProto.WriteBatch;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.server.config.ServerConfig.RaftConfig;
import io.kvraft.common.Errors;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.ScanPage;
import com.google.protobuf.ByteString;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * One region on one node: its jraft group, its state machine, and the leader's write coalescer
 * that turns concurrent client requests into one log entry each time the previous one commits.
 */
public final class Region {

    private final int id;
    /** The voters of this region's group (host:port), as its configuration last committed in its log says. */
    private volatile List<String> peers;
    /** A replica move is under way on this leader: no split or merge starts meanwhile. */
    private volatile boolean moving;
    /** What the region is now: its replicated state (range, epoch, regions split off it) and its range; swapped whole. */
    private volatile Shape shape;
    private final Splits splits;
    private final RegionStateMachine fsm;
    private final RaftGroupService service;
    /** The peers this replica, as leader, has a jraft replicator for (host:port). */
    private final java.util.Set<String> replicators = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** What node heartbeats tell of this replica (raft.nodeHeartbeats); null when they are off. */
    private final QuietRegions.Replica quiet;
    private final Coalescer<WriteProposal> proposer;
    /** Writes whose leader stepped down before their entry committed, waiting for its fate in the log. */
    private final UndecidedWrites undecided;
    /** Requests held here while this replica knows no leader (see {@link #awaitLeader}). */
    private final LeaderWaits leaderWaits;
    /** The longest a request is held for the region's leader; the client's own pause after NO_LEADER is 10-100 ms. */
    static final long LEADER_WAIT_MS = 150;
    /** The most requests held per region; more are answered NO_LEADER at once. */
    static final int LEADER_WAIT_CAPACITY = 16_384;
    /** Names this node's entries within a term it leads (see {@link UndecidedWrites}). */
    private final AtomicLong proposalIds = new AtomicLong();
    /** Write ops this node applied as the region's leader, and keys read and scan pages it served: the node's counts are their sums. */
    private final LongAdder writeOps = new LongAdder();
    private final LongAdder readOps = new LongAdder();
    private final Runnable onLeaderKnown;
    private final AtomicBoolean startupTimeoutCleared = new AtomicBoolean();
    private final RegionTimings timings;

    private volatile Node node;
    /** The lease clock: monotonic ms of this node, stamped into every entry it proposes as leader. */
    private final LongSupplier leaseClockMs = () -> System.nanoTime() / 1_000_000L;
    /** The term this node last began to lead and when, on the lease clock: one value, swapped whole. */
    private volatile TermStart termStart = new TermStart(0, 0);

    /** The region's state and its range, decoded once. */
    public record Shape(RegionState state, KeyRange range) {
        public static Shape of(RegionState state) {
            return new Shape(state, new KeyRange(state.getStartKey().toByteArray(), state.getEndKey().toByteArray()));
        }
    }

    /** What the node does when a region's state machine splits it or learns of regions split off it. */
    public interface Splits {
        /**
         * Called on the parent's state machine thread when it applies a split at {@code index} (also on replay):
         * makes sure the child is listed in the node's catalog; returns when that is durable. Its Raft group is
         * bootstrapped later, off this thread, when it starts ({@link #startChild}): from the store's data of its
         * range, which no one writes until the child runs, so it is the data at this index then as now.
         */
        void prepareChild(Region parent, RegionState child, long index);

        /**
         * Whether a region split off {@code parentId} is listed on this node and its group not bootstrapped yet. The
         * parent takes no snapshot meanwhile: one past the split would no longer hold the child's data, and with a
         * store that keeps nothing over a restart the child's bootstrap would then find its range empty.
         */
        boolean childBootstrapPending(int parentId);

        /**
         * Called while a snapshot of the parent taken after the split of {@code child} loads (this replica missed the
         * split): lists the child in the node's catalog, if it is not there, as a group that starts with no log and
         * no data and gets a snapshot from the child's leader. Returns when the catalog is durable.
         */
        void adoptChild(RegionState child, long createdAt);

        /** Starts the Raft group of {@code child} in the background, if it is not running. */
        void startChild(RegionState child);

        /** Takes a snapshot of {@code region} soon, off its state machine thread. */
        void snapshotSoon(Region region);

        /**
         * Called on the left region's state machine thread when it applies a merge: returns once this node's replica of
         * {@code right} has applied the prepare to merge into {@code leftId} (its data is then final in the store), or
         * false when this node has no replica of it at all.
         */
        boolean awaitMergeSource(RegionState right, int leftId);

        /** Records region {@code region}'s voters, changed by a configuration its log committed; durable on return. */
        void peersChanged(Region region, List<String> peers);

        /** Lists region {@code regionId} with a range that takes in {@code range}; returns when that is durable. */
        void widen(int regionId, KeyRange range);

        /**
         * Retires this node's replica of region {@code regionId}, merged into {@code into} at its log index
         * {@code index}, in the background: stops its group, removes its files and unlists it. With a store that keeps
         * no data over a restart, only once {@code into} has a snapshot at or past {@code index}, which holds the data.
         */
        void retire(int regionId, Region into, long index);
    }

    /** When this node's leadership of a term began, on its lease clock. */
    record TermStart(long term, long startMs) {
    }
    /** A first campaign's election timeout and random delay ({@link #campaignFirst}); 0 = the options' own. */
    private int firstCampaignMs;
    private int firstCampaignDelayMs;
    /** jraft's delay to restore once the region has a leader, when this replica campaigned first; 0 = none. */
    private int normalElectionDelayMs;
    /** Orders setting the first campaign's timeout against the region's first leader (which ends it). */
    private final Object firstCampaignLock = new Object();
    private final Object readLock = new Object();
    private final KvStore store;
    /** Reads that arrived while an entry was in flight; they ride on the next one. Guarded by readLock. */
    private List<PendingRead> waitingReads = new ArrayList<>();
    /** Guarded by readLock. */
    private int proposalsInFlight;
    /** Off only to compare (-Dkv.readsRideWrites=false): every read then takes a ReadIndex round. */
    private static final boolean READS_RIDE_WRITES = Boolean.parseBoolean(System.getProperty("kv.readsRideWrites", "true"));

    public Region(RegionState state, List<String> peers, KvStore store, PeerId self, NodeOptions options, RpcServer rpcServer,
           RaftConfig raft, Runnable onLeaderKnown, Splits splits, ScheduledExecutorService timer, RegionTimings timings) {
        this.id = state.getId();
        this.timings = timings;
        this.peers = List.copyOf(peers);
        this.shape = Shape.of(state);
        this.splits = splits;
        this.onLeaderKnown = onLeaderKnown;
        this.store = store;
        this.fsm = new RegionStateMachine(this, store);
        options.setFsm(fsm);
        this.service = new RaftGroupService(groupId(id), self, options, rpcServer, true);
        this.quiet = raft.nodeHeartbeats() ? new QuietRegions.Replica(QuietRegions.key(groupId(id), self),
                new QuietRegions.View() {
                    @Override
                    public boolean isLeader() {
                        return Region.this.isLeader();
                    }

                    @Override
                    public long term() {
                        return Region.this.term();
                    }

                    @Override
                    public String leaderHint() {
                        return Region.this.leaderHint();
                    }

                    @Override
                    public boolean changing() {
                        return moving || mergingInto() != 0;
                    }
                }, raft.electionTimeoutMs(), raft.electionTimeoutMs() / raft.electionHeartbeatFactor(), System::nanoTime)
                : null;
        this.proposer = new Coalescer<>(raft.maxProposalsInflight(), raft.maxRequestsPerEntry(), 64 << 20,
                Integer.MAX_VALUE, WriteProposal::bytes, this::propose);
        this.leaderWaits = new LeaderWaits(id, timer, LEADER_WAIT_MS, LEADER_WAIT_CAPACITY, System::nanoTime);
        this.undecided = new UndecidedWrites(id, timer, raft.electionTimeoutMs(),
                () -> errorOf(new Status(RaftError.EPERM, "the leader stepped down before the write's entry committed;"
                        + " nothing of it was written")),
                why -> Errors.of(ErrorCode.TIMEOUT, leaderHint(), "region " + id
                        + ": outcome unknown: the leader stepped down before the entry committed, and " + why));
    }

    public static String groupId(int regionId) {
        return "region-" + regionId;
    }

    /**
     * Makes this replica campaign after {@code timeoutMs} plus a random 0 to {@code delayMs}, until the region first has
     * a leader; from then on the configured timeout and jraft's delay hold again. Call before {@link #start}. Applied
     * once the group has started, because jraft fixes at start the heartbeat interval and the read-index scanner's
     * period from the options' values, and short ones there would last as long as the group.
     */
    public void campaignFirst(int timeoutMs, int delayMs) {
        this.firstCampaignMs = timeoutMs;
        this.firstCampaignDelayMs = delayMs;
    }

    public void start() {
        if (quiet != null) {
            QuietRegions.register(quiet); // before jraft makes the group's timers, which look it up when they fall due
            this.node = QuietRegions.starting(quiet.key, () -> service.start(false));
        } else {
            this.node = service.start(false);
        }
        if (node == null) {
            throw new IllegalStateException("region " + id + ": raft group failed to start");
        }
        Node started = node;
        synchronized (firstCampaignLock) {
            // not when a leader is known already (another replica's TimeoutNow can come as the group starts)
            if (firstCampaignMs > 0 && !startupTimeoutCleared.get()) {
                RaftOptions raftOptions = started.getOptions().getRaftOptions();
                normalElectionDelayMs = raftOptions.getMaxElectionDelayMs();
                raftOptions.setMaxElectionDelayMs(firstCampaignDelayMs); // jraft reads it at each timer's next round
                started.resetElectionTimeoutMs(firstCampaignMs); // the heartbeat interval stays: replicators keep theirs
            }
        }
        started.addReplicatorStateListener(new com.alipay.sofa.jraft.core.Replicator.ReplicatorStateListener() {
            // jraft makes a leader's replicators when it becomes leader, before its first entry commits (and
            // onLeaderStart): the start-up election timeout ends here, so that a new leader whose followers answer
            // slowly under load does not step down on that short timeout's lease, then wait out the long one
            @Override
            public void onCreated(PeerId peer) {
                replicators.add(peer.getEndpoint().toString());
                leaderKnownOnce();
            }

            @Override
            public void onError(PeerId peer, Status status) {
            }

            @Override
            public void onDestroyed(PeerId peer) {
                replicators.remove(peer.getEndpoint().toString());
            }
        });
        started.addReplicatorStateListener(new ReplicatorLoopBreaker(id,
                () -> started.snapshot(st -> ReplicatorLoopBreaker.snapshotDone(id, st)),
                () -> System.nanoTime() / 1_000_000));
    }

    public void shutdown() {
        leaderWaits.close();
        service.shutdown();
        if (quiet != null) {
            QuietRegions.unregister(quiet);
        }
        undecided.giveUp("the region stopped on this node");
    }

    UndecidedWrites undecided() {
        return undecided;
    }

    public void join() throws InterruptedException {
        service.join();
    }

    public int id() {
        return id;
    }

    public KeyRange range() {
        return shape.range();
    }

    /** The region's epoch: bumped by every split of it. */
    public long epoch() {
        return shape.state().getEpoch();
    }

    /** The region's conf version: bumped by every change of its voters its state recorded (0: none recorded yet). */
    public long confVer() {
        return shape.state().getConfVer();
    }

    /** A CONF_CHANGED entry proposed here and not applied yet: one at a time. */
    private final AtomicBoolean recordingConf = new AtomicBoolean();

    /**
     * On the leader: when the voters jraft committed differ from those the region's state recorded last, proposes a
     * CONF_CHANGED entry, which bumps the conf version on every replica when it applies. Called periodically (and
     * after each step of a replica move), so a change made under a leader that died before recording it is recorded
     * by the next one. Returns whether it proposed.
     */
    public boolean recordConf() {
        List<String> voters = peers;
        if (!isLeader() || voters.isEmpty()
                || voters.stream().sorted().toList().equals(shape.state().getConfPeersList()) // recorded sorted
                || !recordingConf.compareAndSet(false, true)) {
            return false;
        }
        propose(WriteOp.newBuilder().setType(io.kvraft.common.proto.KvProto.WriteOpType.CONF_CHANGED)
                .addAllPeers(voters).build(), (status, changed, state, none) -> recordingConf.set(false));
        return true;
    }

    /** The region's replicated state as this replica has applied it. */
    public RegionState state() {
        return shape.state();
    }

    /** Only the region's state machine changes the state (on its thread, or while loading a snapshot). */
    void state(RegionState state) {
        this.shape = Shape.of(state);
    }

    /** The index the region's data in this node's store corresponds to. */
    public long snapshotIndex() {
        return fsm.snapshotIndex();
    }

    public long appliedIndex() {
        return fsm.appliedIndex();
    }

    Splits splits() {
        return splits;
    }

    public Node node() {
        return node;
    }

    /**
     * The voters this leader has heard from within its lease (itself included), as host:port: by jraft's replicators'
     * answers and by node heartbeats' (a quiet region's jraft heartbeats are far apart, so jraft's view alone would miss
     * live followers); empty when this replica does not lead.
     */
    public java.util.Set<String> alivePeers() {
        java.util.Set<String> out = new java.util.HashSet<>();
        Node n = node;
        if (n == null) {
            return out;
        }
        try {
            for (PeerId p : n.listAlivePeers()) {
                out.add(p.getEndpoint().toString());
            }
        } catch (IllegalStateException notLeader) {
            return out; // jraft answers only its leader
        }
        if (quiet != null) {
            out.addAll(quiet.answeredWithin(System.nanoTime()));
        }
        return out;
    }

    /**
     * The peers this replica has a jraft replicator for, as host:port. jraft makes a leader's replicators as it is
     * elected and retries one that failed to start (its peer was down) only from its step-down check.
     */
    public java.util.Set<String> replicators() {
        return replicators;
    }

    /** What node heartbeats tell of this replica; null when they are off. */
    public QuietRegions.Replica quiet() {
        return quiet;
    }

    /**
     * Whether this replica leads a quiet region: node heartbeats stand in for its jraft heartbeats, which go 30
     * intervals apart (false when node heartbeats are off). For the {@code kv_node_regions_quiet} gauge.
     */
    public boolean isQuiet() {
        return quiet != null && quiet.quiet(System.nanoTime());
    }

    /** The term this replica last led or followed in, as its state machine was told. */
    public long term() {
        return fsm.term();
    }

    /** Where this region reports its timings. */
    RegionTimings timings() {
        return timings;
    }

    public boolean isLeader() {
        Node n = node;
        return n != null && n.isLeader(false); // no lock: called on the I/O thread for every request
    }

    /** Whether this replica is the leader handing its leadership over to another (jraft's TRANSFERRING state). */
    public boolean transferring() {
        Node n = node;
        return n != null && n.getNodeState() == com.alipay.sofa.jraft.core.State.STATE_TRANSFERRING;
    }

    /** This replica's jraft state, term and leader, for error details: "FOLLOWER, term 5, leader 10.0.0.2:8181". */
    public String raftState() {
        Node n = node;
        if (n == null) {
            return "not started";
        }
        String leader = leaderHint();
        return n.getNodeState().name().replace("STATE_", "") + ", term " + fsm.term() + ", leader "
                + (leader.isEmpty() ? "unknown" : leader);
    }

    /** The leader as this node sees it, host:port, or "" when unknown. */
    public String leaderHint() {
        Node n = node;
        PeerId leader = n == null ? null : n.getLeaderId();
        return leader == null || leader.isEmpty() ? "" : leader.getEndpoint().toString();
    }

    /** Write requests queued for the next log entry (the leader's proposal queue depth). */
    public int queuedWriteRequests() {
        return proposer.pending();
    }

    /** Reads waiting for the log entry in flight to commit. */
    public int queuedReads() {
        synchronized (readLock) {
            return waitingReads.size();
        }
    }

    // ---- writes -------------------------------------------------------------------------------

    /**
     * Queues validated writes for the next log entry (only called on the leader) and, once their entry is applied,
     * answers the gets of {@code readKeys} (may be empty) from the store in the same response: the entry leaves after
     * the request arrived and commits in this leader's term, which proves what a ReadIndex round would (see
     * {@link #read}), so the gets cost no round of their own.
     */
    public void write(List<WriteOp> ops, List<ByteString> readKeys, int bytes, boolean returnsValues,
                      Consumer<WriteResponse> reply) {
        proposer.offer(new WriteProposal(ops, readKeys, bytes, returnsValues, reply));
    }

    /** Answers the gets that rode on a write request into its response; the request's entry is applied. */
    void serveRiders(List<ByteString> keys, WriteResponse.Builder response) {
        gets(keys, store, r -> {
            if (r.hasError()) {
                response.setReadError(r.getError());
            } else {
                response.addAllReadValues(r.getValuesList());
            }
        }).serve();
    }

    private void propose(List<WriteProposal> proposals, Runnable done) {
        // one reading of the clock for the whole entry: "now" of every lock op in it, on every replica
        TermStart started = termStart;
        WriteBatch.Builder b = WriteBatch.newBuilder().setLeaseClockMs(leaseClockMs.getAsLong())
                .setTermStartMs(started.startMs()).setLeaderTerm(started.term())
                .setProposalId(proposalIds.incrementAndGet());
        boolean returnsValues = false;
        for (WriteProposal p : proposals) {
            b.addAllOps(p.ops());
            returnsValues |= p.returnsValues();
            if (proposals.size() > 1) {
                b.addRequestSizes(p.ops().size());
            }
        }
        WriteBatch batch = b.build();
        Task task = new Task();
        task.setData(ByteBuffer.wrap(batch.toByteArray()));
        task.setDone(new BatchClosure(batch, returnsValues, proposals, onProposal(), this, done));
        // the entry is refused unless jraft's term is the one stamped into it, so a failed entry's term is known
        task.setExpectedTerm(started.term());
        try {
            node.apply(task);
        } catch (IllegalStateException shuttingDown) {
            // jraft has already run the closure with ENODESHUTDOWN, which answered the callers
        }
    }

    /**
     * Captures the region's data for a backup at a Raft-consistent point: proposes a BACKUP_POINT entry (no
     * data) and, when this leader applies it, freezes the store's range on the state machine thread. The
     * entry commits after this call, so the capture holds every write acknowledged before it. Only called
     * on the leader; a lost leadership fails the callback with NOT_LEADER or a TIMEOUT.
     */
    public void captureForBackup(BackupPoint.Callback callback) {
        proposeBackupPoint(new BackupPoint(this, callback));
    }

    /** A BACKUP_POINT entry: no data; {@code point} (null: none) captures the store when this leader applies it. */
    private void proposeBackupPoint(BackupPoint point) {
        WriteBatch batch = WriteBatch.newBuilder()
                .addOps(WriteOp.newBuilder().setType(io.kvraft.common.proto.KvProto.WriteOpType.BACKUP_POINT)).build();
        Task task = new Task();
        task.setData(ByteBuffer.wrap(batch.toByteArray()));
        task.setDone(point);
        try {
            node.apply(task);
        } catch (IllegalStateException shuttingDown) {
            // jraft has already run the closure (if any) with ENODESHUTDOWN
        }
    }

    /**
     * Proposes an entry that changes nothing (a BACKUP_POINT no one captures), so that the leader's replicators send
     * entries. jraft reports a new voter caught up only from an AppendEntries answer that carries entries and comes
     * after it started waiting; in a region with no writes its heartbeats never do, and a configuration change adding
     * a replica that was caught up already would wait for ever. Only called on the leader.
     */
    public void nudge() {
        proposeBackupPoint(null);
    }

    /**
     * Proposes a split of this region at {@code splitKey} into a new region {@code newRegionId}, decided at
     * {@code epoch}: the state machine applies it only if the region is still at that epoch and the key still lies
     * strictly inside its range. Only called on the leader; {@code done} gets the outcome (true: split), or the
     * jraft status of a proposal that failed.
     */
    public void split(byte[] splitKey, int newRegionId, long epoch, SplitClosure.Callback done) {
        propose(WriteOp.newBuilder().setType(io.kvraft.common.proto.KvProto.WriteOpType.SPLIT)
                .setKey(ByteString.copyFrom(splitKey)).setRegionId(newRegionId).setEpoch(epoch).build(), done);
    }

    /**
     * Proposes one entry that changes the region's shape (SPLIT, or a merge step: PREPARE_MERGE, COMMIT_MERGE,
     * MERGE_ABORT, MERGE_ROLLBACK) or records its voters (CONF_CHANGED). Only called on the leader; {@code done} gets whether the state machine took it (see the op
     * types) and the state after it, or the jraft status of a proposal that failed.
     */
    public void propose(WriteOp op, SplitClosure.Callback done) {
        WriteBatch batch = WriteBatch.newBuilder().addOps(op).build();
        Task task = new Task();
        task.setData(ByteBuffer.wrap(batch.toByteArray()));
        task.setDone(new SplitClosure(done));
        try {
            node.apply(task);
        } catch (IllegalStateException shuttingDown) {
            // jraft has already run the closure with ENODESHUTDOWN
        }
    }

    /** Set while a merge driven from this node needs this region's leader to stay here. */
    private volatile boolean leaderPinned;

    /** Keeps this region's leader here (the leader balancer leaves it alone) while {@code pinned}. */
    public void pinLeader(boolean pinned) {
        this.leaderPinned = pinned;
    }

    /** Whether the leader balancer must leave this region's leader where it is: a merge needs it here. */
    public boolean leaderPinned() {
        return leaderPinned || mergingInto() != 0;
    }

    /** The region this one is merging into (it takes no requests meanwhile), or 0. */
    public int mergingInto() {
        return shape.state().getMergingInto();
    }

    /** Merging: whether this replica's data of the region is final and outlives a restart of the node. */
    public boolean mergeReady() {
        return fsm.mergeReady();
    }

    /** Write ops this node applied as the region's leader. */
    public long writeOps() {
        return writeOps.sum();
    }

    /** Keys read and scan pages this node served for the region. */
    public long readOps() {
        return readOps.sum();
    }

    /** Operations this region served on this node: writes applied as leader, keys read, scan pages. */
    public long opsServed() {
        return writeOps.sum() + readOps.sum();
    }

    void countWrites(int ops) {
        writeOps.add(ops);
    }

    // ---- reads --------------------------------------------------------------------------------

    /** A read waiting for a log entry proposed after it arrived, or for a ReadIndex; then served from the store. */
    public interface PendingRead {
        /** Reads the store and answers; the caller has established that the store is fresh enough. */
        void serve();

        /** Answers with {@code error} instead. */
        void fail(Error error);
    }

    /** Gets of {@code keys}, answered in their order. */
    public PendingRead gets(List<ByteString> keys, KvStore store, Consumer<ReadResponse> reply) {
        return new PendingRead() {
            @Override
            public void serve() {
                if (mergingInto() != 0) {
                    fail(merging());
                    return;
                }
                KeyRange now = range();
                for (ByteString key : keys) {
                    if (!now.contains(key)) { // split off while the read waited: ask the region holding it
                        fail(Errors.of(ErrorCode.KEY_OUT_OF_RANGE, "region " + id + " was split while the read"
                                + " waited; the key is no longer in its range " + now));
                        return;
                    }
                }
                ReadResponse.Builder b = ReadResponse.newBuilder();
                for (ByteString key : keys) {
                    byte[] v = store.read(id, key.toByteArray());
                    b.addValues(v == null ? Value.getDefaultInstance()
                            : Value.newBuilder().setFound(true).setValue(ByteString.copyFrom(v)).build());
                }
                readOps.add(keys.size());
                reply.accept(b.build());
            }

            @Override
            public void fail(Error error) {
                reply.accept(ReadResponse.newBuilder().setError(error).build());
            }
        };
    }

    /** One page of the keys in {@code range} (which the caller checked lies in this region). */
    public PendingRead scan(KeyRange range, boolean reverse, ScanPage.Builder page, KvStore store,
                            Consumer<ScanResponse> reply) {
        return new PendingRead() {
            @Override
            public void serve() {
                if (mergingInto() != 0) {
                    fail(merging());
                    return;
                }
                if (!range().covers(range)) {
                    fail(Errors.of(ErrorCode.KEY_OUT_OF_RANGE, "region " + id + " was split while the scan"
                            + " waited; " + range + " is no longer inside its range " + range()));
                    return;
                }
                ScanPage result = store.scan(id, range, reverse, page);
                ScanResponse.Builder b = ScanResponse.newBuilder().setMore(result.more());
                for (int i = 0; i < result.keys().size(); i++) {
                    b.addPairs(Pair.newBuilder().setKey(ByteString.copyFrom(result.keys().get(i)))
                            .setValue(ByteString.copyFrom(result.values().get(i))));
                }
                readOps.increment();
                reply.accept(b.build());
            }

            @Override
            public void fail(Error error) {
                reply.accept(ScanResponse.newBuilder().setError(error).build());
            }
        };
    }

    /**
     * Serves {@code read} as {@code mode} asks. READ_INDEX is linearizable: with writes in flight, the read
     * rides on the next log entry this leader proposes; once that entry is applied, a majority has accepted
     * it in this leader's term after the read arrived, which proves what a ReadIndex round would (no newer
     * leader had committed anything before the read arrived), and the store then holds every write
     * acknowledged before it. So under a mixed load reads cost no Raft round of their own. Without writes in
     * flight: ReadIndex. LEADER_LEASE reads on the leader's lease; FOLLOWER on any replica after a ReadIndex
     * the leader confirms (jraft waits until this replica has applied up to it); STALE at once, from
     * whatever this replica has applied.
     */
    public void read(PendingRead read, ReadMode mode) {
        switch (mode) {
            case LEADER_LEASE -> readIndex(List.of(read), ReadOnlyOption.ReadOnlyLeaseBased);
            case STALE -> read.serve();
            case FOLLOWER -> {
                if (isLeader()) {
                    readLinearizable(read);
                } else {
                    readIndex(List.of(read), ReadOnlyOption.ReadOnlySafe);
                }
            }
            default -> readLinearizable(read);
        }
    }

    private void readLinearizable(PendingRead read) {
        if (READS_RIDE_WRITES) {
            synchronized (readLock) {
                if (proposalsInFlight > 0) {
                    waitingReads.add(read);
                    return;
                }
            }
        }
        readIndex(List.of(read), ReadOnlyOption.ReadOnlySafe);
    }

    /** One ReadIndex for all of {@code reads}, then the store. */
    void readIndex(List<PendingRead> reads, ReadOnlyOption option) {
        if (reads.isEmpty()) {
            return;
        }
        // no jraft timeout (-1): a timeout starts jraft's read-index timer thread, which then ticks every
        // millisecond for the life of the JVM; jraft fails the read on a lost heartbeat or leadership, and
        // the client times out and retries on its own
        long start = System.nanoTime();
        node.readIndex(option, null, new ReadIndexClosure(-1) {
            @Override
            public void run(Status status, long index, byte[] reqCtx) {
                timings.readIndexDone(start);
                if (!status.isOk()) {
                    // a read changes nothing, so whatever failed it may be tried again: only "not the leader" is kept
                    Error err = status.getRaftError() == RaftError.EPERM ? errorOf(status)
                            : Errors.of(ErrorCode.UNAVAILABLE, leaderHint(), "region " + id + ": read failed: " + status);
                    for (PendingRead r : reads) {
                        r.fail(err);
                    }
                    return;
                }
                serve(reads);
            }
        });
    }

    /** Answers {@code reads} from the store; the caller has established that the store is fresh enough. */
    void serve(List<PendingRead> reads) {
        for (PendingRead r : reads) {
            r.serve();
        }
    }

    /** Called when a proposed entry leaves: it carries the reads that arrived before it. */
    private List<PendingRead> onProposal() {
        synchronized (readLock) {
            proposalsInFlight++;
            if (waitingReads.isEmpty()) {
                return List.of();
            }
            List<PendingRead> taken = waitingReads;
            waitingReads = new ArrayList<>();
            return taken;
        }
    }

    /** Called when a proposed entry is done (applied or failed), before the next one may leave. */
    void onProposalDone() {
        synchronized (readLock) {
            proposalsInFlight--;
        }
    }

    /** After a proposal is done and the next had its chance to leave: reads nobody took go to ReadIndex. */
    void flushWaitingReads() {
        List<PendingRead> taken;
        synchronized (readLock) {
            if (proposalsInFlight > 0 || waitingReads.isEmpty()) {
                return;
            }
            taken = waitingReads;
            waitingReads = new ArrayList<>();
        }
        readIndex(taken, ReadOnlyOption.ReadOnlySafe);
    }

    // ---- state --------------------------------------------------------------------------------

    /** Called when this node starts to lead {@code term}: leases held from earlier terms run from now. */
    void onLeaderStart(long term) {
        termStart = new TermStart(term, leaseClockMs.getAsLong());
        // jraft starts a leader once its first entry, its configuration, is committed, but tells a state machine of a
        // configuration only through joint changes: one set by resetPeers (a forced recovery) would go unseen
        Node n = node;
        if (n != null) {
            peersCommitted(n.listPeers().stream().map(p -> p.getEndpoint().toString()).toList());
        }
    }

    /**
     * The lease clock as a read on this leader sees it now (to tell how long a lock has left). Only an estimate
     * during the moment after an election before the leader's start is recorded.
     */
    public io.kvraft.server.coord.Locks.Clock leaseClockNow() {
        TermStart started = termStart;
        return new io.kvraft.server.coord.Locks.Clock(id, started.term(), leaseClockMs.getAsLong(), started.startMs());
    }

    /** The system records of {@code range}, one page, as LockInfo pairs (an empty value for keys never locked). */
    public PendingRead locks(KeyRange range, ScanPage.Builder page, KvStore store, Consumer<ScanResponse> reply) {
        return new PendingRead() {
            @Override
            public void serve() {
                if (mergingInto() != 0) {
                    fail(merging());
                    return;
                }
                if (!range().covers(range)) {
                    fail(Errors.of(ErrorCode.KEY_OUT_OF_RANGE, "region " + id + " was split while the listing"
                            + " waited; " + range + " is no longer inside its range " + range()));
                    return;
                }
                ScanPage result = store.scanSystem(id, range, page);
                io.kvraft.server.coord.Locks.Clock clock = leaseClockNow();
                ScanResponse.Builder b = ScanResponse.newBuilder().setMore(result.more());
                try {
                    for (int i = 0; i < result.keys().size(); i++) {
                        ByteString key = ByteString.copyFrom(result.keys().get(i));
                        io.kvraft.common.proto.KvProto.LockInfo info = io.kvraft.server.coord.Locks.info(key,
                                io.kvraft.common.proto.KvProto.CoordRecord.parseFrom(result.values().get(i)), clock);
                        // a key never locked (a sequence's) comes with an empty value, so the client goes on after it
                        b.addPairs(Pair.newBuilder().setKey(key).setValue(info == null ? ByteString.EMPTY : info.toByteString()));
                    }
                } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                    fail(Errors.of(ErrorCode.INTERNAL, "region " + id + ": undecodable lock record: " + e.getMessage()));
                    return;
                }
                readOps.increment();
                reply.accept(b.build());
            }

            @Override
            public void fail(Error error) {
                reply.accept(ScanResponse.newBuilder().setError(error).build());
            }
        };
    }

    /**
     * After a forced recovery's {@code resetPeers}: this replica campaigns after {@code timeoutMs} (the start-up election
     * timeout) rather than the configured one, so the survivors lead within 2-3 s, not 5-10 s; it takes the configured
     * one back once it leads or follows, as after its start ({@link #onLeadershipChange}).
     */
    public void campaignSoon(int timeoutMs) {
        synchronized (firstCampaignLock) {
            Node n = node;
            if (n != null && timeoutMs < n.getOptions().getElectionTimeoutMs()) {
                startupTimeoutCleared.set(false);
                n.resetElectionTimeoutMs(timeoutMs);
            }
        }
    }

    void onLeadershipChange() {
        leaderKnownOnce();
        leaderWaits.release();
    }

    private void leaderKnownOnce() {
        if (startupTimeoutCleared.compareAndSet(false, true)) {
            synchronized (firstCampaignLock) {
                Node n = node;
                if (normalElectionDelayMs > 0 && n != null) {
                    n.getOptions().getRaftOptions().setMaxElectionDelayMs(normalElectionDelayMs);
                }
            }
            onLeaderKnown.run(); // the configured election timeout, after the first campaign's one if it was set
        }
    }

    /**
     * Holds a request that found this replica without a known leader until it knows one (it leads, or follows a leader
     * it can name) or {@link #LEADER_WAIT_MS} passed; {@code retry} then runs once, on another thread, and answers it.
     * False when nothing was held (too many wait already, or the region stops): answer at once then.
     */
    public boolean awaitLeader(Runnable retry) {
        if (!leaderWaits.hold(retry)) {
            return false;
        }
        if (isLeader() || !transferring() && !leaderHint().isEmpty()) {
            leaderWaits.release(); // a leader became known between the caller's check and the hold
        }
        return true;
    }

    /** The voters of this region's group (the nodes holding its replicas, learners aside), as host:port. */
    public List<String> peers() {
        return peers;
    }

    /** Called in log order with each configuration the group commits (and with a loaded snapshot's). */
    public void peersCommitted(List<String> voters) {
        if (voters.isEmpty() || new java.util.HashSet<>(voters).equals(new java.util.HashSet<>(peers))) {
            return;
        }
        org.slf4j.LoggerFactory.getLogger(Region.class).info("region {}: replicas now on {} (were on {})", id, voters, peers);
        this.peers = List.copyOf(voters);
        splits.peersChanged(this, this.peers);
    }

    /**
     * The learners of this replica's configuration (the last one in its log): a replica move's, while it catches up.
     * Read from jraft's node, since jraft tells a state machine only its voters and answers {@code listLearners} only
     * on the leader.
     */
    public List<String> learners() {
        Node n = node;
        com.alipay.sofa.jraft.conf.Configuration conf = n instanceof com.alipay.sofa.jraft.core.NodeImpl impl
                ? impl.getCurrentConf() : null;
        return conf == null ? List.of() : conf.listLearners().stream().map(p -> p.getEndpoint().toString()).toList();
    }

    public boolean moving() {
        return moving;
    }

    public void moving(boolean now) {
        this.moving = now;
    }

    /** The region as a route lists it: range, epoch, replicas, and this replica's view of leader, term and role. */
    public RegionInfo info() {
        Node n = node;
        long applied;
        String role;
        try {
            applied = n == null ? fsm.appliedIndex() : n.getLastAppliedLogIndex();
            role = n == null ? "STOPPED" : n.getNodeState().name().replace("STATE_", "");
        } catch (RuntimeException groupInError) {
            // a group in jraft's ERROR state throws here; report it rather than fail the whole listing
            applied = fsm.appliedIndex();
            role = "ERROR";
        }
        return RegionInfo.newBuilder()
                .setId(id)
                .setStartKey(shape.state().getStartKey())
                .setEndKey(shape.state().getEndKey())
                .setEpoch(epoch())
                .setConfVer(confVer())
                .addAllPeers(peers)
                .setLeader(leaderHint())
                .setTerm(fsm.term())
                .setAppliedIndex(applied)
                .setRole(role)
                .setMergingInto(mergingInto())
                .setMergeReady(mergingInto() != 0 && mergeReady())
                .addAllLearners(learners())
                .build();
    }

    /** The answer to a request to a region that is merging into another: the client refreshes its routes and retries. */
    public Error merging() {
        return Errors.of(ErrorCode.STALE_EPOCH, "", "region " + id + " is merging into region " + mergingInto()
                + "; ask again when the merge is done (or rolled back)");
    }

    /**
     * Answers the writes of an entry whose proposal failed: at once when the failure proves the entry is not in the
     * log (or cannot tell), or by the entry's fate in the log when the leader stepped down after appending it.
     */
    void failed(BatchClosure closure, Status status) {
        RaftError e = status.getRaftError();
        String msg = status.getErrorMsg() == null ? "" : status.getErrorMsg();
        if (e == RaftError.EPERM && msg.startsWith("Leader stepped down")) {
            undecided.park(closure, closure.batch.getLeaderTerm(), closure.batch.getProposalId());
        } else if (e == RaftError.EPERM && msg.startsWith("expected_term")) {
            // jraft leads a newer term than this node's state machine has started yet: the entry was not appended
            closure.answer(Errors.of(ErrorCode.BUSY, leaderHint(), "region " + id + ": leadership is starting"));
        } else if (e == RaftError.EPERM || e == RaftError.EBUSY) {
            closure.answer(errorOf(status)); // refused before it was appended: "Is not leader.", or a transfer
        } else {
            closure.answer(Errors.of(ErrorCode.TIMEOUT, leaderHint(), "region " + id + " outcome unknown: " + status));
        }
    }

    /** Maps a jraft failure onto the wire: not-leader errors carry the leader hint. */
    public Error errorOf(Status status) {
        RaftError e = status.getRaftError();
        String hint = leaderHint();
        return switch (e) {
            case EPERM -> Errors.of(hint.isEmpty() ? ErrorCode.NO_LEADER : ErrorCode.NOT_LEADER, hint,
                    "region " + id + ": " + status.getErrorMsg());
            case EBUSY, EAGAIN -> Errors.of(ErrorCode.BUSY, hint, "region " + id + ": " + status.getErrorMsg());
            case ENODESHUTDOWN, ESHUTDOWN -> Errors.of(ErrorCode.SHUTTING_DOWN, hint, "region " + id + " is shutting down");
            case ETIMEDOUT -> Errors.of(ErrorCode.TIMEOUT, hint, "region " + id + ": " + status.getErrorMsg());
            default -> Errors.of(ErrorCode.INTERNAL, hint, "region " + id + ": " + status);
        };
    }
}
