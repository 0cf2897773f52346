package io.kvraft.client.route;

import io.kvraft.common.KvException;
import com.google.protobuf.Message;
import io.kvraft.common.config.HostPort;
import io.kvraft.common.proto.KvProto.ClusterRequest;
import io.kvraft.common.proto.KvProto.ClusterResponse;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.NodeStateRequest;
import io.kvraft.common.proto.KvProto.NodeStateResponse;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Requests to the leader of the cluster map (the {@code kv-meta} Raft group): {@link #cluster} and
 * {@link #nodeState}. Any node answers them, the map's leader with the answer and any other node with NOT_LEADER and
 * the leader's host:port as hint (NO_LEADER without one while it knows none). A call asks the node that led the map
 * last time first, then the seed nodes in turn, following each hint at once. A node that knows no leader or does not
 * answer (NO_LEADER, UNAVAILABLE, TIMEOUT, SHUTTING_DOWN, a failed connection) sends it to the next node; after a full
 * round it pauses {@value #ROUND_PAUSE_MS} ms, and it gives up at its deadline with the last error's code and the nodes
 * it asked. Any other error (e.g. INVALID_ARGUMENT for a refused state change) fails the call at once.
 *
 * <p>Sending, pausing and the clock are given, so a test can fake the nodes; see
 * {@link #MapLeaderCalls(Supplier, Caller, long, long, Timer, LongSupplier)}.
 */
public final class MapLeaderCalls {

    /** The pause after a round in which no node knew the map's leader. */
    public static final long ROUND_PAUSE_MS = 200;

    /** Sends one request to one node; failures complete the future with a {@link KvException}. */
    @FunctionalInterface
    public interface Caller {
        CompletableFuture<? extends Message> call(String target, Message request, long timeoutMs);
    }

    /** Runs a task after a pause; false when it cannot (the owner closed). */
    @FunctionalInterface
    public interface Timer {
        boolean later(Runnable task, long delayNanos);

        /** A timer on {@link CompletableFuture#delayedExecutor}. */
        static Timer delayed() {
            return (task, delayNanos) -> {
                CompletableFuture.delayedExecutor(delayNanos, TimeUnit.NANOSECONDS).execute(task);
                return true;
            };
        }
    }

    private final Supplier<? extends Collection<String>> seeds;
    private final Caller caller;
    private final long timeoutMs;
    private final long requestTimeoutMs;
    private final Timer timer;
    private final LongSupplier nanoClock;
    /** The node that answered as the map's leader last time (or named as its leader), "" when none. */
    private volatile String leader = "";

    /**
     * @param seeds            the nodes to ask, looked up at each call (e.g. the configured servers and the route table's)
     * @param caller           sends one request
     * @param timeoutMs        a call's whole time: it gives up after this
     * @param requestTimeoutMs one request's time (bounded by what is left of the call's)
     * @param timer            runs the next round after its pause
     * @param nanoClock        {@link System#nanoTime} or a test's clock
     */
    public MapLeaderCalls(Supplier<? extends Collection<String>> seeds, Caller caller, long timeoutMs,
                        long requestTimeoutMs, Timer timer, LongSupplier nanoClock) {
        this.seeds = seeds;
        this.caller = caller;
        this.timeoutMs = timeoutMs;
        this.requestTimeoutMs = requestTimeoutMs;
        this.timer = timer;
        this.nanoClock = nanoClock;
    }

    /** Asks {@code seeds}; a call gives up after {@code timeoutMs}, each request after at most 3 s. */
    public MapLeaderCalls(Collection<String> seeds, Caller caller, long timeoutMs) {
        this(() -> seeds, caller, timeoutMs, Math.min(timeoutMs, 3000), Timer.delayed(), System::nanoTime);
    }

    /** The node last seen leading the map ("" when none yet); asked first by the next call. */
    public String leader() {
        return leader;
    }

    /** The cluster map with the map leader's view of every node, its replica moves in progress and the regions. */
    public CompletableFuture<ClusterResponse> cluster() {
        return send(ClusterRequest.getDefaultInstance(), ClusterResponse::getError);
    }

    /**
     * Sets node {@code endpoint}'s state in the map: DRAINING (its replicas move away), UP (undrain) or REMOVED (out for
     * good; {@code force} only for a node that is down). Completes with the map after the change; fails with
     * INVALID_ARGUMENT when the map's leader refused it (nothing changed) or the endpoint is not host:port.
     */
    public CompletableFuture<NodeStateResponse> nodeState(String endpoint, NodeState state, boolean force) {
        try {
            HostPort.parse(endpoint);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(new KvException(ErrorCode.INVALID_ARGUMENT, e.getMessage()));
        }
        if (state == null || state == NodeState.UNRECOGNIZED) {
            return CompletableFuture.failedFuture(new KvException(ErrorCode.INVALID_ARGUMENT,
                    "node state must be UP, DRAINING or REMOVED"));
        }
        return send(NodeStateRequest.newBuilder().setEndpoint(endpoint).setState(state).setForce(force).build(),
                NodeStateResponse::getError);
    }

    /** Sends {@code request} to the map's leader; {@code error} reads a response's error (code OK: none). */
    public <R extends Message> CompletableFuture<R> send(Message request, Function<R, Error> error) {
        Set<String> order = new LinkedHashSet<>();
        String last = leader;
        if (!last.isEmpty()) {
            order.add(last);
        }
        order.addAll(seeds.get());
        if (order.isEmpty()) {
            return CompletableFuture.failedFuture(new KvException(ErrorCode.UNAVAILABLE,
                    "no nodes to ask for the cluster map's leader"));
        }
        Attempt<R> a = new Attempt<>(request, error, new ArrayList<>(order),
                nanoClock.getAsLong() + TimeUnit.MILLISECONDS.toNanos(timeoutMs));
        a.ask(0, null);
        return a.result;
    }

    /** One call's state; its steps run one after the other (each in the previous one's callback). */
    private final class Attempt<R extends Message> {
        private final Message request;
        private final Function<R, Error> error;
        private final List<String> nodes;
        private final long deadline;
        private final CompletableFuture<R> result = new CompletableFuture<>();
        private final Set<String> asked = new LinkedHashSet<>();
        /** Hints followed in this round: one seen twice goes round in a circle (or its node failed already). */
        private final Set<String> followed = new HashSet<>();
        private ErrorCode lastCode = ErrorCode.UNAVAILABLE;
        private String lastDetail = "no answer";

        Attempt(Message request, Function<R, Error> error, List<String> nodes, long deadline) {
            this.request = request;
            this.error = error;
            this.nodes = nodes;
            this.deadline = deadline;
        }

        /** Asks {@code hint} when given, else the {@code i}-th node of the round. */
        void ask(int i, String hint) {
            long left = deadline - nanoClock.getAsLong();
            if (left <= 0) {
                giveUp();
                return;
            }
            String target = hint != null ? hint : nodes.get(i);
            asked.add(target);
            long timeout = Math.max(1, Math.min(requestTimeoutMs, TimeUnit.NANOSECONDS.toMillis(left)));
            CompletableFuture<? extends Message> f;
            try {
                f = caller.call(target, request, timeout);
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            f.whenComplete((resp, err) -> answered(i, target, resp, err));
        }

        @SuppressWarnings("unchecked")
        private void answered(int i, String target, Message resp, Throwable err) {
            if (err != null) {
                KvException e = KvException.unwrap(err);
                if (e.permanent()) { // e.g. TLS refused: every node shares the CA and would refuse it too
                    forget(target);
                    result.completeExceptionally(e);
                    return;
                }
                failedOn(target, e.code(), e.getMessage());
                next(i);
                return;
            }
            Error e = error.apply((R) resp);
            ErrorCode code = e == null ? ErrorCode.OK : ErrorCode.fromWire(e.getCode());
            switch (code) {
                case OK -> {
                    leader = target;
                    result.complete((R) resp);
                }
                case NOT_LEADER -> {
                    String hint = e.getLeaderHint();
                    failedOn(target, code, e.getDetail());
                    if (!hint.isEmpty() && !hint.equals(target) && followed.add(hint)) {
                        leader = hint;
                        if (!nodes.contains(hint)) {
                            nodes.add(hint); // a node the seeds did not name: asked in the next rounds too
                        }
                        ask(i, hint);
                    } else {
                        next(i);
                    }
                }
                case NO_LEADER, UNAVAILABLE, TIMEOUT, SHUTTING_DOWN -> {
                    failedOn(target, code, e.getDetail());
                    next(i);
                }
                default -> {
                    result.completeExceptionally(new KvException(code, e.getDetail(), e.getLeaderHint()));
                }
            }
        }

        private void failedOn(String target, ErrorCode code, String detail) {
            forget(target);
            lastCode = code;
            lastDetail = target + ": " + detail;
        }

        private void forget(String target) {
            if (target.equals(leader)) {
                leader = "";
            }
        }

        /** The node after the {@code i}-th; after the last one, the first again after a pause. */
        private void next(int i) {
            if (i + 1 < nodes.size()) {
                ask(i + 1, null);
                return;
            }
            long left = deadline - nanoClock.getAsLong();
            if (left <= 0) {
                giveUp();
                return;
            }
            long pause = Math.min(TimeUnit.MILLISECONDS.toNanos(ROUND_PAUSE_MS), left);
            if (!timer.later(() -> {
                followed.clear();
                ask(0, null);
            }, pause)) {
                result.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "client closed"));
            }
        }

        private void giveUp() {
            result.completeExceptionally(new KvException(lastCode, "no leader of the cluster map answered within "
                    + timeoutMs + " ms; asked " + asked + "; last: " + lastDetail));
        }
    }
}
