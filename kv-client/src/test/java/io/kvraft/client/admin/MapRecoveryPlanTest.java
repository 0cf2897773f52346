package io.kvraft.client.admin;

import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto.MapReplicaResponse;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link MapRecovery#plan}: when a forced recovery of the cluster map's group is refused, and whom it keeps. */
class MapRecoveryPlanTest {

    private static final String A = "10.0.0.1:8001";
    private static final String B = "10.0.0.2:8001";
    private static final String C = "10.0.0.3:8001";
    private static final String D = "10.0.0.4:8001";
    private static final String E = "10.0.0.5:8001";

    private static MapReplicaResponse replica(String node, String role, String leader, long lastLogIndex,
                                              String... voters) {
        return MapReplicaResponse.newBuilder().setNode(node).setRole(role).setLeader(leader)
                .setLastLogIndex(lastLogIndex).addAllVoters(List.of(voters)).build();
    }

    private static Map<String, MapReplicaResponse> answers(MapReplicaResponse... replicas) {
        Map<String, MapReplicaResponse> out = new TreeMap<>();
        for (MapReplicaResponse r : replicas) {
            out.put(r.getNode(), r);
        }
        return out;
    }

    private static void assertRefused(Map<String, MapReplicaResponse> answers, String words) {
        assertThatThrownBy(() -> MapRecovery.plan(answers)).isInstanceOfSatisfying(KvException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(e.getMessage()).startsWith("INVALID_ARGUMENT: cluster map not recovered: ").contains(words);
        });
    }

    @Test
    void when_oneOfThreeVotersAnswers_then_itIsTheSurvivorAndTheOtherTwoAreLost() {
        MapRecoveryPlan plan = MapRecovery.plan(answers(replica(B, "CANDIDATE", "", 42, A, B, C),
                replica(D, "LEARNER", "", 40, A, B, C)));
        assertThat(plan.voters()).containsExactly(A, B, C);
        assertThat(plan.survivors()).containsExactly(B);
        assertThat(plan.lost()).containsExactly(A, C);
        assertThat(plan.lastLogIndex()).isEqualTo(42);
        assertThat(plan.replicas()).containsOnlyKeys(B);
    }

    @Test
    void when_twoOfFiveVotersAnswer_then_bothSurvive_andTheVotersAreTheLongestLogs() {
        // C's log is behind: it still has the voters before D and E came in
        MapRecoveryPlan plan = MapRecovery.plan(answers(replica(A, "FOLLOWER", "", 90, A, B, C, D, E),
                replica(C, "FOLLOWER", "", 70, A, B, C)));
        assertThat(plan.voters()).containsExactly(A, B, C, D, E);
        assertThat(plan.survivors()).containsExactly(A, C);
        assertThat(plan.lost()).containsExactly(B, D, E);
        assertThat(plan.lastLogIndex()).isEqualTo(90);
    }

    @Test
    void when_aReplicaKnowsALeader_then_itIsRefused() {
        assertRefused(answers(replica(B, "FOLLOWER", A, 42, A, B, C)), "has a leader, " + A);
        assertRefused(answers(replica(B, "LEADER", "", 42, B)), "has a leader, " + B);
    }

    @Test
    void when_aMajorityOfVotersAnswers_then_itIsRefused() {
        assertRefused(answers(replica(A, "CANDIDATE", "", 42, A, B, C), replica(B, "CANDIDATE", "", 42, A, B, C)),
                "2 of its 3 voters [" + A + ", " + B + "] are live, a majority");
    }

    @Test
    void when_noVoterAnswers_then_itIsRefused_namingTheVoters() {
        assertRefused(answers(replica(D, "LEARNER", "", 40, A, B, C)), "holds a voter of the map's group; its voters"
                + " are [" + A + ", " + B + ", " + C + "]: bring one of them back");
    }
}
