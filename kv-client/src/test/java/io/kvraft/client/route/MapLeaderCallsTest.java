package io.kvraft.client.route;

import io.kvraft.common.KvException;
import com.google.protobuf.Message;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ClusterRequest;
import io.kvraft.common.proto.KvProto.ClusterResponse;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.NodeStateRequest;
import io.kvraft.common.proto.KvProto.NodeStateResponse;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link MapLeaderCalls} against fake nodes, on a fake clock whose pauses pass at once. */
class MapLeaderCallsTest {

    private static final String A = "a:1";
    private static final String B = "b:1";
    private static final String C = "c:1";

    /** Fake nodes: each answers by its function (which may throw a KvException: a failed connection). */
    private final Map<String, Function<Message, Message>> nodes = new HashMap<>();
    private final List<String> asked = new ArrayList<>();
    private final List<Long> timeouts = new ArrayList<>();
    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final List<Long> pauses = new ArrayList<>();

    private MapLeaderCalls admin(long timeoutMs, String... seeds) {
        MapLeaderCalls.Caller caller = (target, request, timeoutMillis) -> {
            asked.add(target);
            timeouts.add(timeoutMillis);
            Function<Message, Message> node = nodes.get(target);
            if (node == null) {
                return CompletableFuture.failedFuture(new KvException(ErrorCode.UNAVAILABLE, target
                        + ": connection refused", "", true));
            }
            try {
                return CompletableFuture.completedFuture(node.apply(request));
            } catch (KvException e) {
                return CompletableFuture.failedFuture(e);
            }
        };
        MapLeaderCalls.Timer timer = (task, delayNanos) -> {
            pauses.add(delayNanos);
            clock.addAndGet(delayNanos);
            task.run();
            return true;
        };
        return new MapLeaderCalls(() -> List.of(seeds), caller, timeoutMs, 3000, timer, clock::get);
    }

    private static Error error(ErrorCode code, String hint, String detail) {
        return Error.newBuilder().setCode(code.toWire()).setLeaderHint(hint).setDetail(detail).build();
    }

    /** A node that is not the map's leader: NOT_LEADER naming {@code leader}, or NO_LEADER when it is empty. */
    private static Function<Message, Message> follower(String leader) {
        Error e = leader.isEmpty() ? error(ErrorCode.NO_LEADER, "", "knows no leader")
                : error(ErrorCode.NOT_LEADER, leader, "does not lead the cluster map");
        return req -> req instanceof ClusterRequest ? ClusterResponse.newBuilder().setError(e).build()
                : NodeStateResponse.newBuilder().setError(e).build();
    }

    private static Function<Message, Message> leader(String self) {
        return req -> {
            ClusterMap map = ClusterMap.newBuilder().setClusterId("cid").setFactor(3).build();
            if (req instanceof NodeStateRequest) {
                return NodeStateResponse.newBuilder().setMap(map).build();
            }
            return ClusterResponse.newBuilder().setMap(map).setMetaLeader(self).build();
        };
    }

    private static KvException failure(CompletableFuture<?> f) {
        assertThat(f).isCompletedExceptionally();
        try {
            f.join();
        } catch (RuntimeException e) {
            return KvException.unwrap(e);
        }
        throw new AssertionError("not failed");
    }

    @Test
    void when_aNodeNamesTheLeader_then_theHintIsFollowed_andAskedFirstNextTime() {
        nodes.put(A, follower(C));
        nodes.put(B, follower(C));
        nodes.put(C, leader(C));
        MapLeaderCalls admin = admin(10_000, A, B);

        ClusterResponse r = admin.cluster().join();

        assertThat(r.getMetaLeader()).isEqualTo(C);
        assertThat(asked).containsExactly(A, C);
        assertThat(admin.leader()).isEqualTo(C);
        assertThat(pauses).isEmpty();

        asked.clear();
        admin.cluster().join();
        assertThat(asked).containsExactly(C);
    }

    @Test
    void when_noNodeKnowsALeader_then_roundsPauseAndRetry_untilOneAnswers() {
        nodes.put(A, follower(""));
        int[] calls = {0};
        nodes.put(B, req -> ++calls[0] < 3 ? follower("").apply(req) : leader(B).apply(req));
        MapLeaderCalls admin = admin(10_000, A, B);

        ClusterResponse r = admin.cluster().join();

        assertThat(r.getMetaLeader()).isEqualTo(B);
        assertThat(asked).containsExactly(A, B, A, B, A, B);
        assertThat(pauses).containsExactly(TimeUnit.MILLISECONDS.toNanos(MapLeaderCalls.ROUND_PAUSE_MS),
                TimeUnit.MILLISECONDS.toNanos(MapLeaderCalls.ROUND_PAUSE_MS));
    }

    @Test
    void when_aNodeDoesNotAnswer_then_theNextIsAsked_withoutAPause() {
        nodes.put(B, leader(B)); // A: connection refused
        MapLeaderCalls admin = admin(10_000, A, B);

        assertThat(admin.cluster().join().getMetaLeader()).isEqualTo(B);
        assertThat(asked).containsExactly(A, B);
        assertThat(pauses).isEmpty();
    }

    @Test
    void when_theLeaderRefusesTheChange_then_itFailsAtOnce_withItsCodeAndDetail() {
        nodes.put(A, follower(B));
        nodes.put(B, req -> NodeStateResponse.newBuilder().setError(error(ErrorCode.INVALID_ARGUMENT, "",
                "draining b:1 would leave 2 UP nodes for replication.factor 3")).build());
        nodes.put(C, leader(C));
        MapLeaderCalls admin = admin(10_000, A, B, C);

        KvException e = failure(admin.nodeState(B, NodeState.DRAINING, false));

        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(e.getMessage()).contains("would leave 2 UP nodes for replication.factor 3");
        assertThat(asked).containsExactly(A, B);
    }

    @Test
    void when_theRequestIsSent_then_itCarriesTheNodeStateAndForce() {
        List<Message> got = new ArrayList<>();
        nodes.put(A, req -> {
            got.add(req);
            return leader(A).apply(req);
        });

        NodeStateResponse r = admin(10_000, A).nodeState(B, NodeState.REMOVED, true).join();

        assertThat(r.getMap().getClusterId()).isEqualTo("cid");
        assertThat(got).containsExactly(NodeStateRequest.newBuilder().setEndpoint(B).setState(NodeState.REMOVED)
                .setForce(true).build());
    }

    @Test
    void when_theEndpointIsNotHostPort_then_invalidArgument_andNoNodeIsAsked() {
        KvException e = failure(admin(10_000, A).nodeState("nope", NodeState.DRAINING, false));

        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(e.getMessage()).contains("expected host:port");
        assertThat(asked).isEmpty();
    }

    @Test
    void when_noLeaderAnswersByTheDeadline_then_itFailsWithTheLastCode_namingTheNodesAsked() {
        nodes.put(A, follower(""));
        nodes.put(B, follower("")); // C: connection refused
        MapLeaderCalls admin = admin(1_000, A, B, C);

        KvException e = failure(admin.cluster());

        assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE); // C, the last asked, refused the connection
        assertThat(e.getMessage()).contains("no leader of the cluster map answered within 1000 ms")
                .contains("[" + A + ", " + B + ", " + C + "]");
        assertThat(pauses).hasSize(5); // 5 pauses of 200 ms make the second
        assertThat(asked).hasSize(15);
        assertThat(timeouts).allSatisfy(t -> assertThat(t).isBetween(1L, 1000L));
    }

    @Test
    void when_theLastNodeSaysNoLeader_then_theDeadlineErrorIsNoLeader() {
        nodes.put(A, follower(""));
        KvException e = failure(admin(500, A).cluster());

        assertThat(e.code()).isEqualTo(ErrorCode.NO_LEADER);
        assertThat(e.getMessage()).contains("knows no leader");
    }

    @Test
    void when_hintsGoRoundInACircle_then_theyAreFollowedOncePerRound_untilTheDeadline() {
        nodes.put(A, follower(B));
        nodes.put(B, follower(A));
        KvException e = failure(admin(400, A).cluster());

        assertThat(e.code()).isEqualTo(ErrorCode.NOT_LEADER);
        assertThat(pauses).hasSize(2);
        assertThat(asked).containsExactly(A, B, A, B, A, B, A, B); // per round: A, its hint B, B's hint A, then B

    }

    @Test
    void when_noSeeds_then_unavailableAtOnce() {
        KvException e = failure(admin(10_000).cluster());

        assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE);
        assertThat(asked).isEmpty();
    }
}
