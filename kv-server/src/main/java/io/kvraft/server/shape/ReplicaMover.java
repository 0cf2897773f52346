package io.kvraft.server.shape;

import io.kvraft.server.host.RegionHost;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.region.Region;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.conf.Configuration;
import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.common.config.HostPort;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.MoveReplicaRequest;
import io.kvraft.common.proto.KvProto.MoveReplicaResponse;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.proto.KvProto.ReplicaRequest;
import io.kvraft.common.rpc.Transport;
import io.kvraft.common.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Moves one replica of a region from one node to another, driven from the region's leader, by jraft's own steps:
 * <ol>
 *   <li>the target node starts an empty replica ({@link ReplicaRequest} ADD): no log, no data, no configuration;</li>
 *   <li>the leader adds it as a learner; jraft sends it a snapshot and then the log, and it votes in nothing;</li>
 *   <li>once it has applied what the leader had committed when it joined, it leaves the learners (jraft refuses one
 *       node as learner and voter in one change) and one configuration change (jraft's joint consensus, with its own
 *       catch-up of the last entries) makes it a voter and takes the source out;</li>
 *   <li>the source drops its replica ({@link ReplicaRequest} DROP): group stopped, range cleared, files removed.</li>
 * </ol>
 * Every node records the new voters as its replica applies the configuration (in log order, so a split on the way
 * gives its new region the voters of that moment). A move that cannot finish before the configuration change takes
 * the learner out again and drops its replica: the region is as it was. A move that would leave the region without
 * a majority is not started. The leader's balancer, splits and merges leave the region alone meanwhile.
 *
 * <p>A move whose leader loses the leadership before step 4 cannot take its learner out (only a leader changes the
 * configuration): the learner stays, with its replica, and the next leader goes on replicating to it. Every leader
 * takes out the learners of a region it leads with no move of its own once they have stayed there {@code
 * moves.strayLearnerMs} ({@link StrayLearners}), and drops their replicas: learners exist only for moves, so these are
 * a lost leader's, and its move has been given up.
 */
public final class ReplicaMover {

    private static final Logger LOG = LoggerFactory.getLogger(ReplicaMover.class);
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long RPC_TIMEOUT_MS = ReplicaCalls.RPC_TIMEOUT_MS;
    /** A source that is down does not drop its replica: a few quick tries, then the move is done without it. */
    private static final int DROP_ATTEMPTS = 3;

    private final RegionHost host;
    private final Transport peers;
    private final ReplicaCalls calls;
    private final Executor work;
    private final long catchUpTimeoutMs;
    private final long strayLearnerNanos;
    /** How long the target of a move may leave the leader's questions unanswered before the move is given up. */
    private final long silentTargetMs;

    /**
     * @param work             where moves run (they wait for snapshots and configuration changes): never a request
     *                         handler's thread
     * @param moves            how long the new replica may take to catch up, and its node stay silent, before the
     *                         move is given up; how long the learner of a move given up on a node that lost the
     *                         leadership stays before the next leader takes it out ({@link StrayLearners}; named in
     *                         the log)
     */
    public ReplicaMover(RegionHost host, Transport peers, Executor work, ServerConfig.MovesConfig moves) {
        this.host = host;
        this.peers = peers;
        this.calls = new ReplicaCalls(peers);
        this.work = work;
        this.catchUpTimeoutMs = moves.catchUpMs();
        this.strayLearnerNanos = TimeUnit.MILLISECONDS.toNanos(moves.strayLearnerMs());
        this.silentTargetMs = moves.silentTargetMs();
    }

    /**
     * Never fails the future: errors are in the answer. A node that does not lead the region, or leads it through
     * another move, answers at once: moves run one at a time on {@code work}, and an answer that names the leader must
     * not wait behind another region's move there (its catch-up may take minutes).
     */
    public CompletableFuture<MoveReplicaResponse> move(MoveReplicaRequest req) {
        MoveReplicaResponse refused = refusedAtOnce(host, req.getRegionId());
        if (refused != null) {
            return CompletableFuture.completedFuture(refused);
        }
        try {
            return CompletableFuture.supplyAsync(() -> moveNow(req), work);
        } catch (RejectedExecutionException closed) {
            return CompletableFuture.completedFuture(failed(ErrorCode.SHUTTING_DOWN, "", "node " + host.endpoint()
                    + " is shutting down"));
        }
    }

    private static MoveReplicaResponse failed(ErrorCode code, String hint, String detail) {
        return MoveReplicaResponse.newBuilder().setError(Errors.of(code, hint, detail)).build();
    }

    /** The answer to a move of region {@code id} that this node cannot run now, or null when it may. */
    static MoveReplicaResponse refusedAtOnce(RegionHost host, int id) {
        Region region = host.region(id);
        if (region == null) {
            return failed(ErrorCode.REGION_NOT_FOUND, "", "no region " + id + " on " + host.endpoint());
        }
        if (!region.isLeader() || region.node() == null) {
            String hint = region.leaderHint();
            return failed(hint.isEmpty() ? ErrorCode.NO_LEADER : ErrorCode.NOT_LEADER, hint,
                    "this node does not lead region " + id);
        }
        if (region.mergingInto() != 0 || region.leaderPinned() || region.moving()) {
            return failed(ErrorCode.BUSY, "", "region " + id + " is in a merge or another replica move");
        }
        return null;
    }

    private MoveReplicaResponse moveNow(MoveReplicaRequest req) {
        int id = req.getRegionId();
        String from = req.getFrom();
        String to = req.getTo();
        MoveReplicaResponse refused = refusedAtOnce(host, id); // again: the leadership may have gone while it queued
        if (refused != null) {
            return refused;
        }
        Region region = host.region(id);
        Node node = region == null ? null : region.node();
        if (node == null) {
            return failed(ErrorCode.NO_LEADER, "", "this node does not lead region " + id);
        }
        boolean rebuild = req.getRebuild();
        String invalid = rebuild ? invalidRebuild(region, from, to) : from.isEmpty() ? invalidAdd(region, to)
                : invalid(region, from, to);
        if (invalid != null) {
            return failed(ErrorCode.INVALID_ARGUMENT, "", invalid);
        }
        if (!rebuild && from.equals(host.endpoint())) {
            return handOff(region, node, from, to);
        }
        String noQuorum = rebuild ? rebuildQuorumProblem(region, node, to) : quorumProblem(region, node, from);
        if (noQuorum != null) {
            return failed(ErrorCode.UNAVAILABLE, "", noQuorum);
        }
        region.moving(true);
        region.pinLeader(true);
        long began = System.nanoTime();
        try {
            if (rebuild) {
                // 0. the voter that lost its data leaves the configuration: an empty replica must never vote as one
                Status out = ReplicaCalls.await(done -> node.removePeer(PeerId.parsePeer(to), done::complete));
                LOG.info("region {}: rebuilding the replica on {}: taken out of the voters first: {}", id, to, out);
                if (!out.isOk()) {
                    return failed(ReplicaCalls.codeOf(out), region.leaderHint(), "region " + id + ": " + to + " not taken out of the"
                            + " voters for its rebuild: " + out.getErrorMsg());
                }
                return run(region, node, "", to, began);
            }
            return run(region, node, from, to, began);
        } finally {
            region.pinLeader(false);
            region.moving(false);
            region.recordConf(); // the new voters get their conf version now, not at the next periodic check
        }
    }

    /** Why the move cannot be asked at all, or null. */
    private String invalid(Region region, String from, String to) {
        for (String n : new String[]{from, to}) {
            try {
                HostPort.parse(n);
            } catch (IllegalArgumentException e) {
                return e.getMessage();
            }
        }
        List<String> voters = region.peers();
        if (!voters.contains(from)) {
            return "node " + from + " holds no replica of region " + region.id() + " (its replicas are on " + voters + ")";
        }
        return invalidAdd(region, to);
    }

    /** Why a rebuild of {@code to}'s replica cannot be asked, or null. */
    private String invalidRebuild(Region region, String from, String to) {
        try {
            HostPort.parse(to);
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
        if (!from.equals(to)) {
            return "a rebuild names one node, as from and to (" + from + ", " + to + ")";
        }
        List<String> voters = region.peers();
        if (!voters.contains(to)) {
            return "node " + to + " is no voter of region " + region.id() + " (its replicas are on " + voters
                    + "): nothing to rebuild; add a replica instead";
        }
        if (to.equals(host.endpoint())) {
            return "node " + to + " leads region " + region.id() + ": its replica is there, nothing to rebuild";
        }
        return holds(to, region.id());
    }

    /** Null when {@code node} answers that it holds no replica of region {@code id}, else why not to rebuild it. */
    private String holds(String node, int id) {
        try {
            RegionsResponse resp = peers.<RegionsResponse>call(node, RegionsRequest.getDefaultInstance(), RPC_TIMEOUT_MS)
                    .get(RPC_TIMEOUT_MS + 1000, TimeUnit.MILLISECONDS);
            for (RegionInfo r : resp.getRegionsList()) {
                if (r.getId() == id) {
                    return "node " + node + " holds a replica of region " + id + " (applied index " + r.getAppliedIndex()
                            + "): nothing to rebuild";
                }
            }
            return null;
        } catch (Exception e) {
            return "node " + node + " did not say which regions it holds: " + e.getMessage();
        }
    }

    /** Why adding a replica on {@code to} cannot be asked, or null. */
    private String invalidAdd(Region region, String to) {
        try {
            HostPort.parse(to);
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
        List<String> voters = region.peers();
        if (voters.contains(to)) {
            return "node " + to + " holds a replica of region " + region.id() + " already (its replicas are on " + voters
                    + ")";
        }
        if (!host.peers().contains(to)) {
            return "node " + to + " is not a node of the cluster " + host.peers();
        }
        return null;
    }

    /** The leader's own replica moves: hand the leadership to another voter first; the client asks that one again. */
    private MoveReplicaResponse handOff(Region region, Node node, String from, String to) {
        for (String ep : region.alivePeers()) {
            if (!ep.equals(from)) {
                Status st = node.transferLeadershipTo(PeerId.parsePeer(ep));
                LOG.info("region {}: moving this node's replica to {}: leadership handed to {} first: {}", region.id(), to,
                        ep, st.isOk() ? "started" : st.getErrorMsg());
                return failed(ErrorCode.NOT_LEADER, st.isOk() ? ep : "", "region " + region.id() + "'s replica on its"
                        + " leader " + from + " moves: its leadership goes to " + ep + " first; ask that node");
            }
        }
        return failed(ErrorCode.UNAVAILABLE, "", "region " + region.id() + "'s replica on its leader " + from
                + " cannot move: no other replica is alive to take the leadership");
    }

    /**
     * Null when the region keeps a majority through the move: its live voters other than {@code from}, with the new
     * replica once caught up, are a majority of the new configuration, and the live voters a majority of the old.
     */
    private static String quorumProblem(Region region, Node node, String from) {
        List<String> voters = region.peers();
        Set<String> alive = region.alivePeers();
        alive.retainAll(voters);
        int majority = voters.size() / 2 + 1;
        int staying = (int) alive.stream().filter(v -> !v.equals(from)).count();
        if (alive.size() < majority || staying + 1 < majority) {
            return "moving region " + region.id() + "'s replica off " + from + " would leave it without a majority: "
                    + alive.size() + " of its " + voters.size() + " replicas " + voters + " are alive (" + alive
                    + "); bring the others back first";
        }
        return null;
    }

    /** Null when the voters other than {@code lost} are all alive: without it they must be a majority on their own. */
    private static String rebuildQuorumProblem(Region region, Node node, String lost) {
        List<String> others = new ArrayList<>(region.peers());
        others.remove(lost);
        Set<String> alive = region.alivePeers();
        alive.retainAll(others);
        if (alive.size() < others.size() / 2 + 1) {
            return "rebuilding region " + region.id() + "'s replica on " + lost + " would leave it without a majority: "
                    + alive.size() + " of the other replicas " + others + " are alive (" + alive + ")";
        }
        return null;
    }

    private MoveReplicaResponse run(Region region, Node node, String from, String to, long began) {
        int id = region.id();
        List<String> before = new ArrayList<>(region.peers());
        if (from.isEmpty()) {
            before.remove(to); // a rebuild: taken out in step 0 (its configuration may not have reached peers() yet)
        }
        PeerId learner = PeerId.parsePeer(to);
        // 1. an empty replica on the target
        String added = calls.ask(to, ReplicaRequest.newBuilder().setOp(ReplicaRequest.Op.ADD).setRegion(region.info()).build());
        if (added != null) {
            return failed(ErrorCode.UNAVAILABLE, "", "region " + id + ": node " + to + " did not start a replica: " + added);
        }
        // 2. a learner: jraft sends it a snapshot, then the log
        Status st = ReplicaCalls.awaitConfChange(node, done -> node.addLearners(List.of(learner), done::complete));
        if (!st.isOk()) {
            calls.dropOn(to, region, before);
            return failed(ReplicaCalls.codeOf(st), region.leaderHint(), "region " + id + ": " + to + " not added as a learner: "
                    + st.getErrorMsg());
        }
        LOG.info("region {}: moving its replica {} -> {}: learner added", id, from, to);
        // 3. caught up: it has applied what this leader had committed once it joined
        long target = node.getLastCommittedIndex();
        String behind = awaitCaughtUp(region, to, target);
        if (behind != null || !region.isLeader()) {
            String why = behind != null ? behind : "this node lost the leadership";
            takeOut(region, node, learner, before, "move " + from + " -> " + to + " given up (" + why + ")");
            return failed(ErrorCode.UNAVAILABLE, region.leaderHint(), "region " + id + ": move " + from + " -> " + to
                    + " given up, nothing changed: " + why);
        }
        LOG.info("region {}: the learner on {} applied index {} in {} ms", id, to, target,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
        // 4. the learner votes and the source is out, in one configuration change. jraft refuses a change whose old
        // and new configurations name one node as learner and as voter, so the learner leaves the learners first: its
        // replica keeps what it has, and the change catches it up the last few entries before it counts.
        List<String> after = new ArrayList<>(before);
        after.remove(from); // from empty: a replica added (or rebuilt), none taken out
        after.add(to);
        // a source that is down (its disk died) is tried once at the end, not a few times
        boolean sourceAlive = region.alivePeers().contains(from);
        st = ReplicaCalls.awaitConfChange(node, done -> node.removeLearners(List.of(learner), done::complete));
        LOG.info("region {}: {} left the learners: {}", id, to, st);
        if (st.isOk()) {
            Configuration conf = new Configuration(after.stream().map(PeerId::parsePeer).toList());
            for (PeerId l : ReplicaCalls.learners(region)) {
                conf.addLearner(l);
            }
            st = ReplicaCalls.awaitNudging(region, catchUpTimeoutMs, done -> node.changePeers(conf, done::complete));
        }
        if (!st.isOk()) {
            boolean refused = st.getRaftError() == com.alipay.sofa.jraft.error.RaftError.EBUSY
                    || st.getRaftError() == com.alipay.sofa.jraft.error.RaftError.EINVAL;
            if (!refused) {
                // the leader stepped down or jraft did not answer: a joint configuration in the log may still be
                // finished by the next leader, so the new replica stays; if the change does not happen, it hears from
                // no leader and ReplicaGc drops it
                LOG.warn("region {}: move {} -> {}: outcome unknown ({}); see `regions`", id, from, to, st);
                return failed(ErrorCode.UNAVAILABLE, region.leaderHint(), "region " + id + ": move " + from + " -> " + to
                        + " outcome unknown (" + st.getErrorMsg() + "): see `regions` for the region's replicas");
            }
            takeOut(region, node, learner, before, "move " + from + " -> " + to + ": configuration change not taken ("
                    + st + ")");
            return failed(ReplicaCalls.codeOf(st), region.leaderHint(), "region " + id + ": move " + from + " -> " + to
                    + " not taken, nothing changed: " + st.getErrorMsg());
        }
        // 5. the source drops its replica (the configuration without it has committed)
        RegionInfo now = region.info().toBuilder().clearPeers().addAllPeers(after).build();
        String dropped = null;
        for (int i = 0; !from.isEmpty() && i < (sourceAlive ? DROP_ATTEMPTS : 1); i++) {
            dropped = calls.ask(from, ReplicaRequest.newBuilder().setOp(ReplicaRequest.Op.DROP).setRegion(now).build());
            if (dropped == null) {
                break;
            }
            LockSupport.parkNanos(5 * POLL_NANOS);
        }
        if (dropped != null) {
            LOG.warn("region {}: moved {} -> {}, but {} did not drop its old replica ({}): it takes no part in the region"
                    + " (the other replicas refuse its votes) and is dropped when that node asks about it", id, from, to,
                    from, dropped);
        }
        LOG.info("region {}: replica moved {} -> {} in {} ms; replicas now on {}", id, from, to,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began), after);
        return MoveReplicaResponse.newBuilder().setRegion(region.info()).build();
    }

    /**
     * Takes a move's learner out of the region's configuration and drops its replica. On a node that no longer leads
     * the region jraft refuses the removal: the learner then stays, with its replica (the next leader replicates to it),
     * until the leader's {@link StrayLearners} takes it out.
     */
    private void takeOut(Region region, Node node, PeerId learner, List<String> voters, String what) {
        Status undone = ReplicaCalls.await(done -> node.removeLearners(List.of(learner), done::complete));
        if (undone.isOk()) {
            calls.dropOn(learner.getEndpoint().toString(), region, voters);
            LOG.info("region {}: {}; learner {} taken out and its replica dropped", region.id(), what, learner);
        } else {
            LOG.info("region {}: {}; learner {} not taken out here ({}): it stays with its replica until the region's"
                    + " leader takes out the learners no move of its own uses, after {} ms", region.id(), what, learner,
                    undone, TimeUnit.NANOSECONDS.toMillis(strayLearnerNanos));
        }
    }

    /**
     * Null once node {@code to}'s replica of {@code region} has applied {@code index}, else why not: the timeout, or
     * {@code to} not reporting the replica for {@code moves.silentTargetMs} (a node that is down, stopping or wiped
     * receives no snapshot, and the move would hold this node's move thread for the whole timeout). A replica that
     * receives a long snapshot is reported all along, and waited for. A leadership lost meanwhile does not end the
     * wait (the next leader goes on replicating to the learner); the caller then gives the move up, and the learner
     * stays for the next leader to take out ({@link StrayLearners}).
     */
    private String awaitCaughtUp(Region region, String to, long index) {
        int id = region.id();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(catchUpTimeoutMs);
        long applied = -1;
        long logged = System.nanoTime();
        long answered = System.nanoTime();
        String silence = null;
        while (System.nanoTime() - deadline < 0) {
            if (System.nanoTime() - answered > TimeUnit.MILLISECONDS.toNanos(silentTargetMs)) {
                return "node " + to + " did not report its replica for " + silentTargetMs + " ms (last: " + silence
                        + ")";
            }
            if (System.nanoTime() - logged > TimeUnit.SECONDS.toNanos(5)) {
                logged = System.nanoTime();
                LOG.info("region {}: the learner on {} has applied index {} of {}", id, to, applied, index);
            }
            try {
                RegionsResponse resp = peers.<RegionsResponse>call(to, RegionsRequest.getDefaultInstance(), RPC_TIMEOUT_MS)
                        .get(RPC_TIMEOUT_MS + 1000, TimeUnit.MILLISECONDS);
                silence = resp.hasError() && resp.getError().getCode() != ErrorCode.OK
                        ? resp.getError().getCode() + ": " + resp.getError().getDetail()
                        : "its answer lists no replica of region " + id;
                for (RegionInfo r : resp.getRegionsList()) {
                    if (r.getId() == id) {
                        applied = r.getAppliedIndex();
                        answered = System.nanoTime();
                    }
                }
                if (applied >= index) {
                    return null;
                }
            } catch (Exception e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                    return "interrupted";
                }
                silence = (e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e)
                        .toString();
            }
            LockSupport.parkNanos(POLL_NANOS);
        }
        return "the replica on " + to + " applied index " + applied + " of " + index + " within " + catchUpTimeoutMs
                + " ms";
    }
}
