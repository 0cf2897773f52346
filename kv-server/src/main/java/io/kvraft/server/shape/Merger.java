package io.kvraft.server.shape;

import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.Region;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.error.RaftError;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.MergeResponse;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionState;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.proto.KvProto.MergeStepRequest;
import io.kvraft.common.proto.KvProto.MergeStepResponse;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.config.ServerConfig.MergeConfig;
import io.kvraft.common.Errors;
import io.kvraft.server.store.KeyRange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * Merges a region into the one before it, driven from the left region's leader. The steps, each an entry in one of the
 * two regions' logs, so every replica takes them at the same point:
 * <ol>
 *   <li>PREPARE_MERGE goes into the right region's log, on its leader wherever that is ({@link MergeStepRequest}; moving
 *       the leader here would stall the region for a leader transfer, seconds under load): from there the right
 *       region takes no requests and no writes, so its data is final on every replica that applied it;</li>
 *   <li>this node waits until every replica of the right region holds that data durably (applied, and with MemoryDB
 *       in a snapshot): only then can every replica of the left region take it in, even after a crash;</li>
 *   <li>COMMIT_MERGE goes into the left region's log: the left region takes the union range and the right region's
 *       group is retired on every node as its replica of the left region applies the entry.</li>
 * </ol>
 * A merge that cannot get there is decided against in the left region's log (MERGE_ABORT, which a commit decided at
 * the same epoch cannot pass) and then rolled back in the right region's log (MERGE_ROLLBACK). A merge left half done
 * by a crash or a leader change is finished or rolled back the same way by the left region's leader after
 * {@code merge.timeoutMs} ({@link MergeChecks}). Requests for the right region meanwhile are answered STALE_EPOCH and retried by clients.
 */
public final class Merger {

    private static final Logger LOG = LoggerFactory.getLogger(Merger.class);
    /** How long a proposal may take before its outcome counts as unknown. */
    private static final long PROPOSAL_TIMEOUT_MS = 20_000;
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final RegionHost host;
    private final MergeConfig config;
    private final Transport peers;
    private final Executor work;
    private final long leaderMoveMs;
    /** Regions in a merge driven from this node (both sides). */
    private final Set<Integer> busy = ConcurrentHashMap.newKeySet();

    /**
     * @param work         where merges run: they wait for peers and for log entries, so never a request handler's thread
     * @param leaderMoveMs how long to look for a region's leader (hints, elections) to propose a step there
     */
    public Merger(RegionHost host, MergeConfig config, Transport peers, Executor work, long leaderMoveMs) {
        this.host = host;
        this.config = config;
        this.peers = peers;
        this.work = work;
        this.leaderMoveMs = leaderMoveMs;
    }

    /** Merges region {@code rightId} into {@code leftId}; epochs 0 accept any. Never fails the future: errors are in the answer. */
    public CompletableFuture<MergeResponse> merge(int leftId, int rightId, long leftEpoch, long rightEpoch) {
        try {
            return CompletableFuture.supplyAsync(() -> mergeNow(leftId, rightId, leftEpoch, rightEpoch), work);
        } catch (RejectedExecutionException closed) {
            return CompletableFuture.completedFuture(failed(ErrorCode.SHUTTING_DOWN, "", "node " + host.endpoint()
                    + " is shutting down"));
        }
    }

    private MergeResponse mergeNow(int leftId, int rightId, long leftEpoch, long rightEpoch) {
        Region left = host.region(leftId);
        if (left == null) {
            return failed(ErrorCode.REGION_NOT_FOUND, "", "no region " + leftId + " on " + host.endpoint());
        }
        if (!left.isLeader()) {
            String hint = left.leaderHint();
            return failed(hint.isEmpty() ? ErrorCode.NO_LEADER : ErrorCode.NOT_LEADER, hint,
                    "this node does not lead region " + leftId);
        }
        if (leftId == rightId) {
            return failed(ErrorCode.INVALID_ARGUMENT, "", "a region cannot merge with itself (" + leftId + ")");
        }
        Region right = host.region(rightId);
        if (right == null) {
            // a region this one could merge with has a replica wherever this one has: on this node too. One split off
            // here whose group is still being made is retried (REGION_NOT_FOUND); any other is on other nodes, and the
            // client learns it at once rather than after retrying until its deadline
            boolean coming = host.catalog().get(rightId) != null
                    || host.starting().stream().anyMatch(r -> r.getId() == rightId);
            return failed(coming ? ErrorCode.REGION_NOT_FOUND : ErrorCode.INVALID_ARGUMENT, "", "no region " + rightId
                    + " on " + host.endpoint() + ", which holds a replica of region " + leftId + " (on " + left.peers()
                    + "): only regions on the same peers merge");
        }
        if (!samePeers(left, right)) {
            return failed(ErrorCode.INVALID_ARGUMENT, "", "region " + rightId + " has replicas on " + right.peers()
                    + ", region " + leftId + " on " + left.peers() + ": only regions on the same peers merge");
        }
        if (leftEpoch != 0 && leftEpoch != left.epoch() || rightEpoch != 0 && rightEpoch != right.epoch()) {
            return failed(ErrorCode.STALE_EPOCH, "", "region " + leftId + " is at epoch " + left.epoch() + ", region "
                    + rightId + " at " + right.epoch() + "; the request has " + leftEpoch + " and " + rightEpoch);
        }
        String notAdjacent = adjacency(left, right);
        if (notAdjacent != null) {
            return failed(ErrorCode.INVALID_ARGUMENT, "", notAdjacent);
        }
        if (left.moving() || right.moving()) {
            return failed(ErrorCode.BUSY, "", "region " + (left.moving() ? leftId : rightId) + " is moving a replica;"
                    + " merge after that");
        }
        if (left.mergingInto() != 0 || right.mergingInto() != 0) {
            Region r = left.mergingInto() != 0 ? left : right;
            return failed(ErrorCode.BUSY, "", "region " + r.id() + " is merging into region " + r.mergingInto()
                    + " already");
        }
        if (!busy.add(leftId)) {
            return failed(ErrorCode.BUSY, "", "region " + leftId + " is in a merge already");
        }
        if (!busy.add(rightId)) {
            busy.remove(leftId);
            return failed(ErrorCode.BUSY, "", "region " + rightId + " is in a merge already");
        }
        left.pinLeader(true); // the balancer leaves the left region's leader here until the merge is over
        try {
            List<String> leftPeers;
            try {
                leftPeers = left.node().listPeers().stream().map(p -> p.getEndpoint().toString()).toList();
            } catch (IllegalStateException notLeader) {
                return failed(ErrorCode.NOT_LEADER, left.leaderHint(), "this node no longer leads region " + leftId);
            }
            // on the right region's leader, wherever it is: moving it here would stall the region for a leader transfer
            Outcome prepared = proposeOnLeader(right, WriteOp.newBuilder().setType(WriteOpType.PREPARE_MERGE)
                    .setRegionId(leftId).setEpoch(right.epoch()).build(), leftPeers);
            if (prepared.error() != null) {
                // NOT_LEADER and the like: not taken; a timeout: if it prepared, this node (leading the left region)
                // finishes or rolls it back after merge.timeoutMs
                return MergeResponse.newBuilder().setError(prepared.error()).build();
            }
            if (!prepared.changed()) {
                return failed(ErrorCode.STALE_EPOCH, "", "region " + rightId + " changed before the merge applied (now epoch "
                        + prepared.state().getEpoch() + "); nothing was merged");
            }
            LOG.info("merge of region {} into region {}: prepared at index {}", rightId, leftId,
                    prepared.state().getMergePreparedAt());
            return finish(left, right, prepared.state());
        } finally {
            left.pinLeader(false);
            busy.remove(leftId);
            busy.remove(rightId);
        }
    }

    /** Whether region {@code id} is in a merge driven from this node. */
    boolean inMerge(int id) {
        return busy.contains(id);
    }

    /** Marks both regions as in a merge driven from this node, or neither when one is already. */
    boolean claim(int leftId, int rightId) {
        if (!busy.add(leftId)) {
            return false;
        }
        if (!busy.add(rightId)) {
            busy.remove(leftId);
            return false;
        }
        return true;
    }

    void release(int leftId, int rightId) {
        busy.remove(leftId);
        busy.remove(rightId);
    }

    static boolean samePeers(Region left, Region right) {
        return new HashSet<>(left.peers()).equals(new HashSet<>(right.peers()));
    }

    /** Why {@code right} cannot merge into {@code left} by range, or null when it starts where {@code left} ends. */
    static String adjacency(Region left, Region right) {
        KeyRange l = left.range();
        KeyRange r = right.range();
        if (l.end().length > 0 && Arrays.equals(l.end(), r.start())) {
            return null;
        }
        String why = "regions " + left.id() + " " + l + " and " + right.id() + " " + r + " are not adjacent: a region merges"
                + " into the region that ends where it starts";
        if (r.end().length > 0 && Arrays.equals(r.end(), l.start())) {
            why += "; name the region with the lower keys first: merge " + right.id() + " " + left.id();
        }
        return why;
    }

    /**
     * From a prepared merge on: commits it once every replica of {@code right} is ready, else decides against it and
     * rolls it back. Also the recovery of a merge left prepared ({@link MergeChecks}).
     */
    MergeResponse finish(Region left, Region right, RegionState prepared) {
        long preparedAt = prepared.getMergePreparedAt();
        String notReady = awaitReady(right.id(), left.id(), preparedAt);
        if (notReady == null) {
            Outcome committed = propose(left, WriteOp.newBuilder().setType(WriteOpType.COMMIT_MERGE)
                    .setRegionId(right.id()).setEpoch(left.epoch()).setStep(preparedAt)
                    .setValue(prepared.toByteString()).build());
            if (committed.error() == null && committed.changed()) {
                LOG.info("merge of region {} into region {}: done, now {} epoch {}", right.id(), left.id(), left.range(),
                        left.epoch());
                return MergeResponse.newBuilder().setMerged(left.info()).build();
            }
            notReady = committed.error() == null ? "region " + left.id() + " changed before the merge applied"
                    : "the commit was not taken: " + committed.why();
        }
        return abort(left, right, preparedAt, notReady);
    }

    /** Decides against the merge in the left region's log, unless it happened; then rolls the right region back. */
    private MergeResponse abort(Region left, Region right, long preparedAt, String why) {
        for (int attempt = 0; attempt < 3; attempt++) {
            if (!left.isLeader()) {
                return failed(ErrorCode.UNAVAILABLE, left.leaderHint(), "merge of region " + right.id() + " into region "
                        + left.id() + " not finished (" + why + ") and this node no longer leads region " + left.id()
                        + "; its new leader finishes or rolls it back");
            }
            long epoch = left.epoch();
            Outcome decided = propose(left, WriteOp.newBuilder().setType(WriteOpType.MERGE_ABORT).setRegionId(right.id())
                    .setEpoch(epoch).build());
            if (decided.error() != null) {
                continue;
            }
            if (decided.changed()) { // the commit came first after all
                return MergeResponse.newBuilder().setMerged(left.info()).build();
            }
            if (decided.state().getEpoch() == epoch && decided.state().getMergingInto() == 0) {
                continue; // refused (the epoch moved first): a commit decided at an earlier epoch could still be ahead
            }
            LOG.info("merge of region {} into region {}: rolled back ({})", right.id(), left.id(), why);
            rollback(right, preparedAt);
            return failed(ErrorCode.UNAVAILABLE, "", "merge of region " + right.id() + " into region " + left.id()
                    + " rolled back: " + why);
        }
        return failed(ErrorCode.UNAVAILABLE, "", "merge of region " + right.id() + " into region " + left.id()
                + " not finished (" + why + "); its leader finishes or rolls it back within merge.timeoutMs");
    }

    /** MERGE_ROLLBACK in the right region's log, on its leader; when not taken, the recovery tries again later. */
    private void rollback(Region right, long preparedAt) {
        Outcome rolled = proposeOnLeader(right, WriteOp.newBuilder().setType(WriteOpType.MERGE_ROLLBACK)
                .setStep(preparedAt).build(), List.of());
        if (rolled.error() != null) {
            LOG.warn("region {}: the rollback of its merge not taken ({}); tried again after merge.timeoutMs", right.id(),
                    rolled.why());
        }
    }

    /** Null once every replica of region {@code rightId} holds its final data durably, else why not (after timeoutMs). */
    private String awaitReady(int rightId, int leftId, long preparedAt) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(config.timeoutMs());
        String missing;
        do {
            missing = notReady(rightId, leftId, preparedAt);
            if (missing == null) {
                return null;
            }
            LockSupport.parkNanos(POLL_NANOS);
        } while (System.nanoTime() - deadline < 0 && !Thread.currentThread().isInterrupted());
        return "the replica of region " + rightId + " on " + missing + " did not hold its final data within merge.timeoutMs "
                + config.timeoutMs() + " ms";
    }

    /** The first node whose replica of region {@code rightId} is not ready, or null. */
    private String notReady(int rightId, int leftId, long preparedAt) {
        Region left = host.region(leftId); // a merge joins regions on the same peers: the left one's are the right one's
        for (String peer : left != null ? left.peers() : host.peers()) {
            if (peer.equals(host.endpoint())) {
                Region r = host.region(rightId);
                if (r == null || r.mergingInto() != leftId || r.state().getMergePreparedAt() != preparedAt || !r.mergeReady()) {
                    return peer;
                }
                continue;
            }
            try {
                RegionsResponse resp = peers.<RegionsResponse>call(peer, RegionsRequest.getDefaultInstance(), 2000)
                        .get(3, TimeUnit.SECONDS);
                boolean ready = false;
                for (RegionInfo info : resp.getRegionsList()) {
                    if (info.getId() == rightId) {
                        ready = info.getMergingInto() == leftId && info.getMergeReady();
                    }
                }
                if (!ready) {
                    return peer;
                }
            } catch (Exception e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                return peer + " (" + e.getClass().getSimpleName() + ")";
            }
        }
        return null;
    }

    /**
     * A proposal's outcome: {@code error} null when the entry applied (then {@code changed} and {@code state} say how);
     * {@code refused} when jraft refused it before appending it (EBUSY: a leadership transfer, or a full queue).
     */
    private record Outcome(Error error, boolean changed, RegionState state, boolean refused) {
        Outcome(Error error, boolean changed, RegionState state) {
            this(error, changed, state, false);
        }

        static Outcome of(Region region, Status status, boolean changed, RegionState state) {
            return status.isOk() ? new Outcome(null, changed, state)
                    : new Outcome(region.errorOf(status), false, null, status.getRaftError() == RaftError.EBUSY);
        }

        static Outcome failed(ErrorCode code, String hint, String detail) {
            return new Outcome(Errors.of(code, hint, detail), false, null);
        }

        String why() {
            return error == null ? "" : error.getCode() + ": " + error.getDetail();
        }
    }

    /** Proposes {@code op} on {@code region} (this node leads it) and waits for its outcome. */
    private static Outcome propose(Region region, WriteOp op) {
        if (!region.isLeader()) {
            return Outcome.failed(ErrorCode.NOT_LEADER, region.leaderHint(), "not the leader of region " + region.id());
        }
        CompletableFuture<Outcome> done = new CompletableFuture<>();
        region.propose(op, (status, changed, state, other) -> done.complete(Outcome.of(region, status, changed, state)));
        try {
            return done.get(PROPOSAL_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return Outcome.failed(ErrorCode.TIMEOUT, "", "no outcome within " + PROPOSAL_TIMEOUT_MS + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Outcome.failed(ErrorCode.SHUTTING_DOWN, "", "interrupted");
        } catch (java.util.concurrent.ExecutionException e) {
            return Outcome.failed(ErrorCode.INTERNAL, "", String.valueOf(e.getCause()));
        }
    }

    /**
     * Proposes {@code op} on {@code region}'s leader: here, or by a {@link MergeStepRequest} to the node the local
     * replica names, following leader hints for up to leaderMoveMs. Retried only after answers that prove it was not
     * taken; {@code peers}, for a prepare, are the left region's, which the right region's leader checks against its own.
     */
    private Outcome proposeOnLeader(Region region, WriteOp op, List<String> peers) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(leaderMoveMs);
        String hint = "";
        Outcome last = Outcome.failed(ErrorCode.NO_LEADER, "", "region " + region.id() + " has no leader");
        while (System.nanoTime() - deadline < 0 && !Thread.currentThread().isInterrupted()) {
            if (region.isLeader()) {
                if (!peers.isEmpty()) {
                    List<String> mine;
                    try {
                        mine = region.node().listPeers().stream().map(p -> p.getEndpoint().toString()).toList();
                    } catch (IllegalStateException leadershipJustLost) {
                        continue; // jraft lists peers on its leader only: ask whoever leads now
                    }
                    if (!new HashSet<>(mine).equals(new HashSet<>(peers))) {
                        return Outcome.failed(ErrorCode.INVALID_ARGUMENT, "", "region " + region.id() + " is on " + mine
                                + ", the region it would merge into on " + peers + ": only regions on the same peers merge");
                    }
                }
                Outcome here = propose(region, op);
                if (here.error() == null || here.error().getCode() != ErrorCode.NO_LEADER || !here.refused()) {
                    return here;
                }
                last = here; // refused before it was appended: the leadership is leaving this node; ask the next leader
                LockSupport.parkNanos(POLL_NANOS / 2);
                continue;
            }
            String target = !hint.isEmpty() ? hint : region.leaderHint();
            hint = "";
            if (target.isEmpty() || target.equals(host.endpoint())) {
                LockSupport.parkNanos(POLL_NANOS / 2);
                continue;
            }
            MergeStepResponse resp;
            try {
                resp = peers().<MergeStepResponse>call(target, MergeStepRequest.newBuilder().setRegionId(region.id())
                        .setOp(op).addAllPeers(peers).build(), PROPOSAL_TIMEOUT_MS).get(PROPOSAL_TIMEOUT_MS + 1000,
                        TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                io.kvraft.common.KvException k = io.kvraft.common.KvException.unwrap(
                        e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e);
                if (k.code().toWire() == ErrorCode.UNAVAILABLE && k.unsent()) {
                    last = Outcome.failed(ErrorCode.UNAVAILABLE, "", "region " + region.id() + "'s leader " + target
                            + " did not answer: " + k.getMessage());
                    LockSupport.parkNanos(POLL_NANOS);
                    continue;
                }
                return Outcome.failed(ErrorCode.TIMEOUT, "", "region " + region.id() + "'s leader " + target
                        + " gave no outcome: " + k.getMessage());
            }
            if (!resp.hasError() || resp.getError().getCode() == ErrorCode.OK) {
                return new Outcome(null, resp.getChanged(), resp.getState());
            }
            last = new Outcome(resp.getError(), false, null);
            switch (resp.getError().getCode()) {
                case NOT_LEADER, NO_LEADER, SHUTTING_DOWN, REGION_NOT_FOUND -> {
                    hint = resp.getError().getLeaderHint();
                    if (hint.isEmpty()) {
                        LockSupport.parkNanos(POLL_NANOS);
                    }
                }
                default -> {
                    return last;
                }
            }
        }
        return last;
    }

    private Transport peers() {
        return peers;
    }

    private static MergeResponse failed(ErrorCode code, String hint, String detail) {
        Error error = Errors.of(code, hint, detail);
        return MergeResponse.newBuilder().setError(error).build();
    }
}
