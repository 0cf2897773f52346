package io.kvraft.server.balance;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.RegionInfo;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class PlacementTest {

    private static ClusterMap map(Map<String, NodeState> nodes) {
        ClusterMap.Builder b = ClusterMap.newBuilder().setClusterId("c").setFactor(3);
        nodes.forEach((n, s) -> b.addNodes(NodeRecord.newBuilder().setEndpoint(n).setState(s)));
        return b.build();
    }

    /** Regions 1..n, region i of [i, i+1) on the given nodes. */
    private static List<RegionInfo> regions(List<List<String>> peers) {
        List<RegionInfo> out = new ArrayList<>();
        for (int i = 0; i < peers.size(); i++) {
            out.add(RegionInfo.newBuilder().setId(i + 1).setStartKey(i == 0 ? ByteString.EMPTY : ByteString.copyFrom(new byte[]{(byte) i}))
                    .setEndKey(i == peers.size() - 1 ? ByteString.EMPTY : ByteString.copyFrom(new byte[]{(byte) (i + 1)}))
                    .setEpoch(1).addAllPeers(peers.get(i)).build());
        }
        return out;
    }

    private static final List<String> ABC = List.of("a", "b", "c");

    @Test
    void aNewNodeGetsReplicasUntilCountsAreEven() {
        ClusterMap m = map(Map.of("a", NodeState.UP, "b", NodeState.UP, "c", NodeState.UP, "d", NodeState.UP));
        List<RegionInfo> rs = regions(List.of(ABC, ABC, ABC, ABC));
        Optional<Placement.Move> move = Placement.next(m, new Placement.View(rs, Set.of("a", "b", "c", "d"), Set.of()),
                true, Set.of());
        assertThat(move).isPresent();
        assertThat(move.get().to()).isEqualTo("d");
        assertThat(move.get().reason()).isEqualTo("balance");
        // 12 replicas on 4 nodes, 3 each: nothing to do
        List<RegionInfo> even = regions(List.of(List.of("a", "b", "c"), List.of("a", "b", "d"), List.of("a", "c", "d"),
                List.of("b", "c", "d")));
        assertThat(Placement.next(m, new Placement.View(even, Set.of("a", "b", "c", "d"), Set.of()), true, Set.of()))
                .isEmpty();
    }

    @Test
    void balancingWaitsWhileANodeHoldingReplicasDoesNotAnswer() {
        ClusterMap m = map(Map.of("a", NodeState.UP, "b", NodeState.UP, "c", NodeState.UP, "d", NodeState.UP));
        List<RegionInfo> rs = regions(List.of(ABC, ABC, ABC, ABC));
        assertThat(Placement.next(m, new Placement.View(rs, Set.of("b", "c", "d"), Set.of()), true, Set.of())).isEmpty();
    }

    @Test
    void aMissingReplicaIsRebuiltInPlaceAndAShortRegionGetsOneMore() {
        ClusterMap m = map(Map.of("a", NodeState.UP, "b", NodeState.UP, "c", NodeState.UP));
        Set<String> all = Set.of("a", "b", "c");
        assertThat(Placement.next(m, new Placement.View(regions(List.of(ABC)), all, Set.of(),
                Set.of(Placement.missingKey(1, "c"))), true, Set.of())).contains(new Placement.Move(1, "c", "c", "rebuild"));
        assertThat(Placement.next(m, new Placement.View(regions(List.of(List.of("a", "b"))), all, Set.of()), true,
                Set.of())).contains(new Placement.Move(1, "", "c", "add"));
    }

    @Test
    void aRegionShortOfACopyGoesBeforeADrain_andAMissingReplicaOnADrainingNodeMovesOff() {
        ClusterMap m = map(Map.of("a", NodeState.DRAINING, "b", NodeState.UP, "c", NodeState.UP, "d", NodeState.UP));
        Set<String> all = Set.of("a", "b", "c", "d");
        // region 1 drains off a; region 2's replica on d was wiped: it is rebuilt first, though region 1 comes first
        List<RegionInfo> rs = regions(List.of(List.of("a", "b", "c"), List.of("b", "c", "d")));
        assertThat(Placement.next(m, new Placement.View(rs, all, Set.of(), Set.of(Placement.missingKey(2, "d"))), true,
                Set.of())).contains(new Placement.Move(2, "d", "d", "rebuild"));
        // a wiped replica on the draining node itself moves off it, before region 1's drain
        List<RegionInfo> wipedOnA = regions(List.of(List.of("b", "c", "d"), List.of("a", "b", "c")));
        ClusterMap n = map(Map.of("a", NodeState.DRAINING, "b", NodeState.UP, "c", NodeState.UP, "d", NodeState.UP,
                "e", NodeState.UP));
        assertThat(Placement.next(n, new Placement.View(wipedOnA, Set.of("a", "b", "c", "d", "e"), Set.of(),
                Set.of(Placement.missingKey(2, "a"))), true, Set.of())).contains(new Placement.Move(2, "a", "e", "drain"));
        // a region of 2 voters, one of them wiped: one more first, the rebuild after (taking the wiped voter out first
        // would leave one)
        ClusterMap up = map(Map.of("a", NodeState.UP, "b", NodeState.UP, "c", NodeState.UP));
        assertThat(Placement.next(up, new Placement.View(regions(List.of(List.of("a", "b"))), Set.of("a", "b", "c"),
                Set.of(), Set.of(Placement.missingKey(1, "b"))), true, Set.of()))
                .contains(new Placement.Move(1, "", "c", "add"));
        // a region with a replica on a down node and nowhere to move it: no rebuild of its other voter meanwhile
        assertThat(Placement.next(up, new Placement.View(regions(List.of(ABC)), Set.of("a", "b"), Set.of("c"),
                Set.of(Placement.missingKey(1, "b"))), true, Set.of())).isEmpty();
    }

    @Test
    void aRegionWithoutALiveMajority_isLeftAlone_untilRecoveredToItsSurvivor() {
        // b and c died with their disks and were removed: region 1 has one replica, on a, and no leader to move it
        ClusterMap m = map(Map.of("a", NodeState.UP, "b", NodeState.REMOVED, "c", NodeState.REMOVED, "d", NodeState.UP,
                "e", NodeState.UP));
        Set<String> live = Set.of("a", "d", "e");
        List<RegionInfo> broken = regions(List.of(ABC, List.of("a", "b", "d")));
        // region 2 (two of three live) moves its replica off removed b; region 1 is never asked for one
        assertThat(Placement.next(m, new Placement.View(broken, live, Set.of()), true, Set.of()))
                .contains(new Placement.Move(2, "b", "e", "removed"));
        assertThat(Placement.next(m, new Placement.View(broken, live, Set.of()), true, Set.of(2))).isEmpty();
        // recover-region made a its only voter: it gets two more
        assertThat(Placement.next(m, new Placement.View(regions(List.of(List.of("a"), List.of("a", "d", "e"))), live,
                Set.of()), true, Set.of())).contains(new Placement.Move(1, "", "d", "add"));
    }

    @Test
    void movesUnderWayLeaveTheirRegionsAlone_countAsDoneForTargets_andHoldBackBalancing() {
        ClusterMap m = map(Map.of("a", NodeState.UP, "b", NodeState.UP, "c", NodeState.UP, "d", NodeState.UP));
        Set<String> all = Set.of("a", "b", "c", "d");
        List<RegionInfo> wiped = regions(List.of(List.of("a", "b", "d"), List.of("a", "c", "d"), ABC));
        Placement.View v = new Placement.View(wiped, all, Set.of(),
                Set.of(Placement.missingKey(1, "d"), Placement.missingKey(2, "d")));
        Placement.Move first = Placement.next(m, v, true, Set.of()).orElseThrow();
        assertThat(first).isEqualTo(new Placement.Move(1, "d", "d", "rebuild"));
        assertThat(Placement.next(m, v, true, Set.of(), List.of(first)))
                .contains(new Placement.Move(2, "d", "d", "rebuild"));
        // a drain of a, each replica onto the node that holds fewest: d (1) first; with that move under way d holds 2,
        // as many as c, so region 2 goes to c (by name), not to d as well
        ClusterMap draining = map(Map.of("a", NodeState.DRAINING, "b", NodeState.UP, "c", NodeState.UP, "d", NodeState.UP,
                "e", NodeState.UP));
        List<RegionInfo> rs = regions(List.of(List.of("a", "b", "c"), List.of("a", "b", "e"), List.of("c", "d", "e")));
        Placement.View dv = new Placement.View(rs, Set.of("a", "b", "c", "d", "e"), Set.of());
        Placement.Move one = Placement.next(draining, dv, true, Set.of()).orElseThrow();
        assertThat(one).isEqualTo(new Placement.Move(1, "a", "d", "drain"));
        assertThat(Placement.next(draining, dv, true, Set.of(1))).as("region 1 only skipped, no move under way")
                .contains(new Placement.Move(2, "a", "d", "drain"));
        assertThat(Placement.next(draining, dv, true, Set.of(), List.of(one)))
                .contains(new Placement.Move(2, "a", "c", "drain"));
        // an uneven cluster: a balancing move, but none while another move runs
        List<RegionInfo> uneven = regions(List.of(ABC, ABC, ABC, ABC));
        Placement.View uv = new Placement.View(uneven, all, Set.of());
        assertThat(Placement.next(m, uv, true, Set.of()).map(Placement.Move::reason)).contains("balance");
        assertThat(Placement.next(m, uv, true, Set.of(), List.of(new Placement.Move(9, "a", "d", "drain")))).isEmpty();
    }

    @Test
    void balancingWaitsForTheWholeKeySpaceAndSkipsRegionsAsked() {
        ClusterMap m = map(Map.of("a", NodeState.UP, "b", NodeState.UP, "c", NodeState.UP, "d", NodeState.UP));
        List<RegionInfo> rs = regions(List.of(ABC, ABC));
        Placement.View v = new Placement.View(rs, Set.of("a", "b", "c", "d"), Set.of());
        assertThat(Placement.next(m, v, false, Set.of())).isEmpty();
        assertThat(Placement.next(m, v, true, Set.of(1)).map(Placement.Move::regionId)).contains(2);
        assertThat(Placement.next(m, v, true, Set.of(1, 2))).isEmpty();
    }

    @Test
    void replicasLeaveDrainingRemovedAndDownNodesForLiveUpOnes() {
        ClusterMap m = map(Map.of("a", NodeState.DRAINING, "b", NodeState.UP, "c", NodeState.UP, "d", NodeState.UP,
                "e", NodeState.UP));
        List<RegionInfo> rs = regions(List.of(List.of("b", "c", "d"), List.of("a", "b", "c")));
        Placement.Move move = Placement.next(m, new Placement.View(rs, Set.of("a", "b", "c", "d", "e"), Set.of()), true,
                Set.of()).orElseThrow();
        assertThat(move).isEqualTo(new Placement.Move(2, "a", "e", "drain")); // e holds fewest
        // a down node's replicas go too, but never to a node that is not live
        ClusterMap up = map(Map.of("a", NodeState.UP, "b", NodeState.UP, "c", NodeState.UP, "d", NodeState.UP));
        Placement.Move down = Placement.next(up, new Placement.View(regions(List.of(ABC)), Set.of("b", "c", "d"),
                Set.of("a")), true, Set.of()).orElseThrow();
        assertThat(down).isEqualTo(new Placement.Move(1, "a", "d", "down"));
        assertThat(Placement.next(up, new Placement.View(regions(List.of(ABC)), Set.of("b", "c"), Set.of("a")), true,
                Set.of())).isEmpty(); // d not live: nowhere to go
    }

    @Test
    void theMapsVotersLeaveDrainingNodesAndGrowToThree() {
        ClusterMap m = map(Map.of("a", NodeState.DRAINING, "b", NodeState.UP, "c", NodeState.UP, "d", NodeState.UP));
        assertThat(Placement.metaVoters(m, List.of("a", "b", "c"), Set.of("a", "b", "c", "d"), Set.of()))
                .contains(new Placement.MetaChange("d", "a"));
        ClusterMap up = map(Map.of("a", NodeState.UP, "b", NodeState.UP));
        assertThat(Placement.metaVoters(up, List.of("a"), Set.of("a", "b"), Set.of()))
                .contains(new Placement.MetaChange("b", null));
        assertThat(Placement.metaVoters(m, List.of("b", "c", "d"), Set.of("a", "b", "c", "d"), Set.of())).isEmpty();
    }
}
