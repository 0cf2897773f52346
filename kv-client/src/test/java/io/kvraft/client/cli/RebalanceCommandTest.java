package io.kvraft.client.cli;

import io.kvraft.client.proto.KvProto.RegionInfo;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class RebalanceCommandTest {

    private static RegionInfo region(int id, String leader, String... peers) {
        return RegionInfo.newBuilder().setId(id).setLeader(leader).addAllPeers(List.of(peers)).build();
    }

    /** Leaders per node after the plan's moves. */
    private static Map<String, Integer> after(List<RegionInfo> regions, List<RebalanceCommand.Move> moves) {
        Map<Integer, String> leader = new HashMap<>();
        regions.forEach(r -> leader.put(r.getId(), r.getLeader()));
        moves.forEach(m -> leader.put(m.region().getId(), m.to()));
        Map<String, Integer> counts = new HashMap<>();
        regions.forEach(r -> r.getPeersList().forEach(p -> counts.putIfAbsent(p, 0)));
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

        assertThat(moves).allSatisfy(m -> assertThat(m.region().getPeersList()).contains(m.to()));
        Map<String, Integer> counts = after(regions, moves);
        assertThat(java.util.Collections.max(counts.values()) - java.util.Collections.min(counts.values()))
                .as("leaders per node %s", counts).isLessThanOrEqualTo(1);
    }
}
