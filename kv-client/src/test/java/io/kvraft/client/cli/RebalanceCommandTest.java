package io.kvraft.client.cli;

import io.kvraft.client.admin.RegionInfo;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class RebalanceCommandTest {

    private static RegionInfo region(int id, String leader, String... peers) {
        return new RegionInfo(id, new byte[0], new byte[0], 0, List.of(peers), leader, 0, 0, "", 0, false, 0, List.of());
    }

    /** Leaders per node after the plan's moves. */
    private static Map<String, Integer> after(List<RegionInfo> regions, List<RebalanceCommand.Move> moves) {
        Map<Integer, String> leader = new HashMap<>();
        regions.forEach(r -> leader.put(r.id(), r.leader()));
        moves.forEach(m -> leader.put(m.region().id(), m.to()));
        Map<String, Integer> counts = new HashMap<>();
        regions.forEach(r -> r.peers().forEach(p -> counts.putIfAbsent(p, 0)));
        leader.values().forEach(l -> counts.merge(l, 1, Integer::sum));
        return counts;
    }

    @Test
    void when_everyNodeHoldsEveryRegion_then_theLeadersEndEven() {
        List<RegionInfo> regions = new ArrayList<>();
        for (int i = 1; i <= 24; i++) {
            regions.add(region(i, "a:1", "a:1", "b:1", "c:1"));
        }

        List<RebalanceCommand.Move> moves = RebalanceCommand.plan(regions);

        assertThat(after(regions, moves)).containsEntry("a:1", 8).containsEntry("b:1", 8).containsEntry("c:1", 8);
        assertThat(moves).hasSize(16);
    }

    @Test
    void when_regionsAreOnSomeNodes_then_leadersMoveOnlyToTheirReplicas_andEndWithinOne() {
        List<String> nodes = List.of("a:1", "b:1", "c:1", "d:1", "e:1");
        List<RegionInfo> regions = new ArrayList<>();
        for (int i = 0; i < 10; i++) { // region i on nodes i, i+1, i+2; all led by their first node but two
            String[] peers = {nodes.get(i % 5), nodes.get((i + 1) % 5), nodes.get((i + 2) % 5)};
            regions.add(region(i + 1, i < 8 ? peers[0] : "a:1", peers));
        }
        // a leads regions 1, 6, 9 and 10; but 9 and 10 (nodes d, e, a and e, a, b) can go to e, d or b only

        List<RebalanceCommand.Move> moves = RebalanceCommand.plan(regions);

        assertThat(moves).allSatisfy(m -> assertThat(m.region().peers()).contains(m.to()));
        Map<String, Integer> counts = after(regions, moves);
        assertThat(java.util.Collections.max(counts.values()) - java.util.Collections.min(counts.values()))
                .as("leaders per node %s", counts).isLessThanOrEqualTo(1);
    }

    @Test
    void when_theMostLoadedNodeLeadsNoRegionWithAReplicaOnTheLeast_then_aRegionGoesByWayOfAThirdNode() {
        // five nodes, ten regions: a leads 1, 2, 6 (none on e); c leads 3 and 8 (both on e); e leads 9
        String a = "a:1", b = "b:1", c = "c:1", d = "d:1", e = "e:1";
        List<RegionInfo> regions = List.of(region(1, a, d, b, a), region(2, a, b, a, c), region(3, c, a, c, e),
                region(4, d, d, c, e), region(5, d, d, b, e), region(6, a, d, b, a), region(7, b, b, a, c),
                region(8, c, a, c, e), region(9, e, c, d, e), region(10, b, d, b, e));

        List<RebalanceCommand.Move> moves = RebalanceCommand.plan(regions);

        assertThat(after(regions, moves)).containsEntry(a, 2).containsEntry(b, 2).containsEntry(c, 2)
                .containsEntry(d, 2).containsEntry(e, 2);
        assertThat(moves).hasSize(2).allSatisfy(m -> assertThat(m.region().peers()).contains(m.to()));
        // the second move starts where the first ended: its leader is the node the first moved a region to
        assertThat(moves.get(0).region().leader()).isEqualTo(a);
        assertThat(moves.get(1).region().leader()).isEqualTo(moves.get(0).to());
        assertThat(moves.get(1).to()).isEqualTo(e);
    }
}
