package io.kvraft.server.balance;

import io.kvraft.common.proto.KvProto.RegionInfo;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link LeaderBalancer#chainEnd}: which node a hand-over by way of a peer serves, from the peer's own list of its
 * regions. The layout is one CI met on five nodes, ten regions of three replicas: A led 3 (1, 2, 6), E led 1 (9), and
 * no region A led had a replica on E, so no direct hand-over narrowed the gap.
 */
class LeaderBalancerChainTest {

    private static final String A = "10.0.0.1:8001"; // leads 3
    private static final String B = "10.0.0.2:8001"; // leads 2
    private static final String C = "10.0.0.3:8001"; // leads 2 (3 and 8, both with a replica on E)
    private static final String D = "10.0.0.4:8001"; // leads 2
    private static final String E = "10.0.0.5:8001"; // leads 1

    private static RegionInfo region(int id, String leader, String self, String... peers) {
        return RegionInfo.newBuilder().setId(id).setLeader(leader).setRole(leader.equals(self) ? "LEADER" : "FOLLOWER")
                .addAllPeers(List.of(peers)).build();
    }

    /** C's list: it leads 3 and 8 (replicas on A, C, E) and follows in 2, 4, 7 and 9. */
    private static List<RegionInfo> cRegions() {
        return List.of(region(2, A, C, B, A, C), region(3, C, C, A, C, E), region(4, D, C, D, C, E),
                region(7, B, C, B, A, C), region(8, C, C, A, C, E), region(9, E, C, C, D, E));
    }

    /** A's own count of each node's leaders, from its regions 1, 2, 3, 6, 7, 8. */
    private static final Map<String, Integer> A_COUNTS = Map.of(A, 3, C, 2, B, 1, D, 0, E, 0);

    @Test
    void when_thePeerLeadsARegionWithAReplicaOnANodeTwoBelow_then_thatNodeIsTheEnd() {
        assertThat(LeaderBalancer.chainEnd(A, C, 3, cRegions(), A_COUNTS, Set.of())).isEqualTo(E);
    }

    @Test
    void when_everyReplicaOfThePeersRegionsLeadsAtMostOneFewer_then_thereIsNoEnd() {
        // E leads 2 as another list shows: a hand-over to C would only move the gap
        Map<String, Integer> counts = Map.of(A, 3, C, 2, E, 2);
        assertThat(LeaderBalancer.chainEnd(A, C, 3, cRegions(), counts, Set.of())).isNull();
        // and at 2 leaders here, E's 1 is no gap of two
        assertThat(LeaderBalancer.chainEnd(A, C, 2, cRegions(), A_COUNTS, Set.of())).isNull();
    }

    @Test
    void when_theLowNodeIsDraining_orOnlyInRegionsThePeerFollows_then_itIsNoEnd() {
        assertThat(LeaderBalancer.chainEnd(A, C, 3, cRegions(), A_COUNTS, Set.of(E))).isNull();
        // D leads none as A sees it, but only shares region 4 with C, which C does not lead
        List<RegionInfo> followsOnly = List.of(region(4, D, C, D, C, B), region(3, C, C, A, C, B));
        assertThat(LeaderBalancer.chainEnd(A, C, 3, followsOnly, Map.of(A, 3, C, 2, B, 2, D, 0), Set.of()))
                .isNull();
    }

    @Test
    void when_twoNodesQualify_then_theOneLeadingFewestIsTheEnd_thenTheFirstByAddress() {
        List<RegionInfo> regions = List.of(region(3, C, C, A, C, E), region(8, C, C, C, D, B));
        assertThat(LeaderBalancer.chainEnd(A, C, 4, regions, Map.of(E, 2, D, 1, B, 1), Set.of())).isEqualTo(B);
        assertThat(LeaderBalancer.chainEnd(A, C, 4, regions, Map.of(E, 0, D, 1, B, 1), Set.of())).isEqualTo(E);
    }
}
