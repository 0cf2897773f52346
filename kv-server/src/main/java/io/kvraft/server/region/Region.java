package io.kvraft.server.region;

import io.kvraft.server.raft.QuietRegions;
import io.kvraft.server.raft.ReplicatorLoopBreaker;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.RaftGroupService;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.option.NodeOptions;
import com.alipay.sofa.jraft.rpc.RpcServer;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionState;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.server.config.ServerConfig.LimitsConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.common.Errors;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;

import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * One region on one node: its jraft group and state machine, its replicated state (range, epoch, voters), and what
 * this replica knows of its leadership. Its write path ({@link Writes}) and read paths ({@link Reads}) hang off it.
 */
public final class Region {

    private final int id;
    /** The voters of this region's group (host:port), as its configuration last committed in its log says. */
    private volatile List<String> peers;
    /** A replica move is under way on this leader: no split or merge starts meanwhile. */
    private volatile boolean moving;
    /** What the region is now: its replicated state (range, epoch, regions split off it) and its range; swapped whole. */
    private volatile Shape shape;
    private final ShapeHooks splits;
    private final RegionStateMachine fsm;
    private final RaftGroupService service;
    /** The peers this replica, as leader, has a jraft replicator for (host:port). */
    private final java.util.Set<String> replicators = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** What node heartbeats tell of this replica (raft.nodeHeartbeats); null when they are off. */
    private final QuietRegions.Replica quiet;
    /** Requests held here while this replica knows no leader (see {@link #awaitLeader}). */
    private final LeaderWaits leaderWaits;
    /** The replica's election timeouts until it first knows a leader. */
    private final StartupElection election;
    /** The leader's write path: client writes coalesced into log entries, and the entries that change the shape. */
    private final Writes writes;
    /** Gets, scans and lock listings, each served once the store is fresh enough for its read mode. */
    private final Reads reads;
    /** The longest a request is held for the region's leader; the client's own pause after NO_LEADER is 10-100 ms. */
    static final long LEADER_WAIT_MS = 150;
    /** The most requests held per region; more are answered NO_LEADER at once. */
    static final int LEADER_WAIT_CAPACITY = 16_384;
    /** Write ops this node applied as the region's leader, and keys read and scan pages it served: the node's counts are their sums. */
    private final LongAdder writeOps = new LongAdder();
    private final LongAdder readOps = new LongAdder();
    private final RegionTimings timings;

    private volatile Node node;

    /** The region's state and its range, decoded once. */
    public record Shape(RegionState state, KeyRange range) {
        public static Shape of(RegionState state) {
            return new Shape(state, new KeyRange(state.getStartKey().toByteArray(), state.getEndKey().toByteArray()));
        }
    }
    private final KvStore store;

    public Region(RegionState state, List<String> peers, KvStore store, PeerId self, NodeOptions options, RpcServer rpcServer,
           RaftConfig raft, LimitsConfig limits, Runnable onLeaderKnown, ShapeHooks splits, ScheduledExecutorService timer,
                  RegionTimings timings) {
        this.id = state.getId();
        this.timings = timings;
        this.peers = List.copyOf(peers);
        this.shape = Shape.of(state);
        this.splits = splits;
        this.election = new StartupElection(onLeaderKnown);
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
        this.leaderWaits = new LeaderWaits(id, timer, LEADER_WAIT_MS, LEADER_WAIT_CAPACITY, System::nanoTime);
        this.reads = new Reads(this, store, raft.readsRideWrites());
        this.writes = new Writes(this, raft, limits.maxValueBytes(), timer);
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
        election.campaignFirst(timeoutMs, delayMs);
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
        election.started(started);
        started.addReplicatorStateListener(new com.alipay.sofa.jraft.core.Replicator.ReplicatorStateListener() {
            // jraft makes a leader's replicators when it becomes leader, before its first entry commits (and
            // onLeaderStart): the start-up election timeout ends here, so that a new leader whose followers answer
            // slowly under load does not step down on that short timeout's lease, then wait out the long one
            @Override
            public void onCreated(PeerId peer) {
                replicators.add(peer.getEndpoint().toString());
                election.leaderKnown(started);
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
        writes.undecided().giveUp("the region stopped on this node");
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

    ShapeHooks splits() {
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

    void countReads(int reads) {
        readOps.add(reads);
    }

    /** The leader's write path. */
    public Writes writes() {
        return writes;
    }

    /** The read paths. */
    public Reads reads() {
        return reads;
    }

    /** Proposes one entry that changes the region's shape or records its voters (see {@link Writes#propose}). */
    public void propose(WriteOp op, SplitClosure.Callback done) {
        writes.propose(op, done);
    }

    /** Proposes a split of this region (see {@link Writes#split}). */
    public void split(byte[] splitKey, int newRegionId, long epoch, SplitClosure.Callback done) {
        writes.split(splitKey, newRegionId, epoch, done);
    }

    /** Proposes an entry that changes nothing, so the replicators send entries (see {@link Writes#nudge}). */
    public void nudge() {
        writes.nudge();
    }

    /** Write requests queued for the next log entry (the leader's proposal queue depth). */
    public int queuedWriteRequests() {
        return writes.queued();
    }

    /** Reads waiting for the log entry in flight to commit. */
    public int queuedReads() {
        return reads.queued();
    }

    // ---- state --------------------------------------------------------------------------------

    /** Called when this node starts to lead {@code term}: leases held from earlier terms run from now. */
    void onLeaderStart(long term) {
        writes.leading(term);
        // jraft starts a leader once its first entry, its configuration, is committed, but tells a state machine of a
        // configuration only through joint changes: one set by resetPeers (a forced recovery) would go unseen
        Node n = node;
        if (n != null) {
            peersCommitted(n.listPeers().stream().map(p -> p.getEndpoint().toString()).toList());
        }
    }

    /** After a forced recovery's {@code resetPeers}: the replica campaigns soon (see {@link StartupElection#campaignSoon}). */
    public void campaignSoon(int timeoutMs) {
        election.campaignSoon(node, timeoutMs);
    }

    void onLeadershipChange() {
        election.leaderKnown(node);
        leaderWaits.release();
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

    /** Maps a jraft failure onto the wire: not-leader errors carry the leader hint. */
    public Error errorOf(Status status) {
        return RaftErrors.of(id, status, leaderHint(), transferring());
    }
}
