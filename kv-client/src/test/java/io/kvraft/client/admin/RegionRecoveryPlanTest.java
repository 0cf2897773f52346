package io.kvraft.client.admin;

import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.RegionInfo;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link RegionRecovery#plan}: when a forced recovery is refused, and whom it makes the region's voters. */
class RegionRecoveryPlanTest {

    private static final String A = "10.0.0.1:8001";
    private static final String B = "10.0.0.2:8001";
    private static final String C = "10.0.0.3:8001";
    private static final String D = "10.0.0.4:8001";
    private static final String E = "10.0.0.5:8001";

    private static ClusterMap map(Map<String, NodeState> states) {
        ClusterMap.Builder b = ClusterMap.newBuilder().setClusterId("c").setFactor(3);
        states.forEach((n, s) -> b.addNodes(NodeRecord.newBuilder().setEndpoint(n).setState(s)));
        return b.build();
    }

    private static RegionInfo replica(long confVer, long applied, String leader, String role, String... peers) {
        return RegionInfo.newBuilder().setId(7).setConfVer(confVer).setAppliedIndex(applied).setTerm(3)
                .setLeader(leader).setRole(role).addAllPeers(List.of(peers)).build();
    }

    private static Map<String, RegionInfo> replicas(Object... nodeAndReplica) {
        Map<String, RegionInfo> out = new TreeMap<>();
        for (int i = 0; i < nodeAndReplica.length; i += 2) {
            out.put((String) nodeAndReplica[i], (RegionInfo) nodeAndReplica[i + 1]);
        }
        return out;
    }

    private static void assertRefused(Runnable plan, ErrorCode code, String... words) {
        assertThatThrownBy(plan::run).isInstanceOfSatisfying(KvException.class, e -> {
            assertThat(e.code()).isEqualTo(code);
            assertThat(e.getMessage()).contains(words);
        });
    }

    @Test
    void when_oneOfThreeSurvivesAndTheOthersAreRemoved_then_itBecomesTheOnlyVoter() {
        ClusterMap m = map(Map.of(A, NodeState.UP, B, NodeState.REMOVED, C, NodeState.REMOVED, D, NodeState.UP));
        RecoveryPlan plan = RegionRecovery.plan(7, m, replicas(A, replica(4, 120, "", "FOLLOWER", C, B, A)));

        assertThat(plan.survivors()).containsExactly(A);
        assertThat(plan.lost()).containsExactly(B, C);
        assertThat(plan.voters()).containsExactly(A, B, C);
        assertThat(plan.confVer()).isEqualTo(4);
        assertThat(plan.applied()).isEqualTo(120);
        assertThat(plan.replicas()).containsOnlyKeys(A);
    }

    @Test
    void when_twoOfFiveSurvive_then_bothBecomeVoters_andTheHighestAppliedIndexIsNamed() {
        ClusterMap m = map(Map.of(A, NodeState.UP, B, NodeState.UP, C, NodeState.REMOVED, D, NodeState.REMOVED,
                E, NodeState.REMOVED));
        RecoveryPlan plan = RegionRecovery.plan(7, m, replicas(
                B, replica(2, 90, "", "CANDIDATE", A, B, C, D, E), A, replica(2, 95, "", "FOLLOWER", A, B, C, D, E)));

        assertThat(plan.survivors()).containsExactly(A, B);
        assertThat(plan.lost()).containsExactly(C, D, E);
        assertThat(plan.applied()).isEqualTo(95);
    }

    @Test
    void when_aReplicaLagsAConfigurationBehind_then_itIsNoSurvivor() {
        // D holds an old replica (conf version 1, before D was moved off): the newest configuration is A, B, C
        ClusterMap m = map(Map.of(A, NodeState.UP, B, NodeState.REMOVED, C, NodeState.REMOVED, D, NodeState.UP));
        RecoveryPlan plan = RegionRecovery.plan(7, m, replicas(
                A, replica(2, 50, "", "FOLLOWER", A, B, C), D, replica(1, 10, "", "FOLLOWER", A, B, D)));

        assertThat(plan.survivors()).containsExactly(A);
        assertThat(plan.voters()).containsExactly(A, B, C);
    }

    @Test
    void when_aReplicaKnowsALeader_then_itIsRefused() {
        ClusterMap m = map(Map.of(A, NodeState.UP, B, NodeState.REMOVED, C, NodeState.REMOVED));
        assertRefused(() -> RegionRecovery.plan(7, m, replicas(A, replica(1, 5, B, "FOLLOWER", A, B, C))),
                ErrorCode.INVALID_ARGUMENT, "region 7 not recovered", "has a leader, " + B);
        assertRefused(() -> RegionRecovery.plan(7, m, replicas(A, replica(1, 5, "", "LEADER", A, B, C))),
                ErrorCode.INVALID_ARGUMENT, "has a leader, " + A);
    }

    @Test
    void when_aMajorityIsLive_then_itIsRefused() {
        ClusterMap m = map(Map.of(A, NodeState.UP, B, NodeState.UP, C, NodeState.REMOVED));
        assertRefused(() -> RegionRecovery.plan(7, m, replicas(A, replica(1, 5, "", "CANDIDATE", A, B, C),
                B, replica(1, 5, "", "CANDIDATE", A, B, C))), ErrorCode.INVALID_ARGUMENT, "2 of its 3 voters",
                "a majority");
    }

    @Test
    void when_aLostVoterIsNotRemoved_then_itIsRefused_namingIt() {
        ClusterMap m = map(Map.of(A, NodeState.UP, B, NodeState.REMOVED, C, NodeState.UP));
        assertRefused(() -> RegionRecovery.plan(7, m, replicas(A, replica(1, 5, "", "FOLLOWER", A, B, C))),
                ErrorCode.INVALID_ARGUMENT, "its voter " + C + " is up in the cluster map",
                "node remove " + C + " --force");
        ClusterMap without = map(Map.of(A, NodeState.UP, B, NodeState.REMOVED));
        assertRefused(() -> RegionRecovery.plan(7, without, replicas(A, replica(1, 5, "", "FOLLOWER", A, B, C))),
                ErrorCode.INVALID_ARGUMENT, C + " is not a node of the cluster map");
    }

    private static io.kvraft.common.proto.KvProto.RegionsResponse listing(RegionInfo... regions) {
        return io.kvraft.common.proto.KvProto.RegionsResponse.newBuilder().addAllRegions(List.of(regions)).build();
    }

    @Test
    void when_noReplicaIsListed_whileALiveNodeDidNotAnswer_then_itIsUnavailable_notNotFound() {
        ClusterMap m = map(Map.of(A, NodeState.UP, B, NodeState.UP, C, NodeState.UP));
        Map<String, io.kvraft.common.proto.KvProto.RegionsResponse> answers = new TreeMap<>();
        answers.put(A, listing());
        answers.put(B, null);
        answers.put(C, listing());

        assertRefused(() -> RegionRecovery.planFromAnswers(7, m, answers), ErrorCode.UNAVAILABLE,
                "live nodes [" + B + "] did not list their regions", "try again");
        assertRefused(() -> RegionRecovery.planFromAnswers(7, m, new TreeMap<>()), ErrorCode.UNAVAILABLE,
                "takes no node as live");
        // once every live node answered, none holding one: not found
        answers.put(B, listing());
        assertRefused(() -> RegionRecovery.planFromAnswers(7, m, answers), ErrorCode.REGION_NOT_FOUND,
                "no live node holds a replica of region 7");
    }

    @Test
    void when_aLiveNodeDidNotAnswer_butAReplicaIsListed_then_thePlanComesFromTheAnswers() {
        ClusterMap m = map(Map.of(A, NodeState.UP, B, NodeState.REMOVED, C, NodeState.REMOVED, D, NodeState.UP));
        Map<String, io.kvraft.common.proto.KvProto.RegionsResponse> answers = new TreeMap<>();
        answers.put(A, listing(replica(4, 120, "", "FOLLOWER", C, B, A)));
        answers.put(D, null);

        RecoveryPlan plan = RegionRecovery.planFromAnswers(7, m, answers);

        assertThat(plan.survivors()).containsExactly(A);
        assertThat(plan.lost()).containsExactly(B, C);
    }

    @Test
    void when_noLiveNodeHoldsAReplica_then_itIsNotFound() {
        assertRefused(() -> RegionRecovery.plan(7, map(Map.of(A, NodeState.UP)), Map.of()),
                ErrorCode.REGION_NOT_FOUND, "no live node holds a replica of region 7", "backup");
    }

    @Test
    void when_noLiveNodeHoldsAReplica_butItsVotersAreNotRemoved_then_theyAreNamedToBringBack() {
        ClusterMap m = map(Map.of(A, NodeState.UP, B, NodeState.UP, C, NodeState.REMOVED, D, NodeState.UP)).toBuilder()
                .addRegions(RegionInfo.newBuilder().setId(7).addAllPeers(List.of(B, C, D))).build();
        assertRefused(() -> RegionRecovery.plan(7, m, Map.of()), ErrorCode.REGION_NOT_FOUND,
                "its voters [" + B + ", " + D + "] are not removed", "bring back those that are down");
        ClusterMap gone = map(Map.of(A, NodeState.UP, B, NodeState.REMOVED, C, NodeState.REMOVED, E,
                NodeState.REMOVED)).toBuilder().addRegions(RegionInfo.newBuilder().setId(7).addAllPeers(List.of(B, C,
                E))).build();
        assertThatThrownBy(() -> RegionRecovery.plan(7, gone, Map.of())).hasMessageContaining(
                "none survives to recover it from");
    }
}
