package io.kvraft.benchmark.nemesis;

import com.google.protobuf.ByteString;
import io.kvraft.benchmark.nemesis.RegionMapCheck.NodeView;
import io.kvraft.common.proto.KvProto.RegionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** The end-of-run region-map check on made-up node views: agreeing maps pass, each kind of difference fails. */
@Timeout(30)
class RegionMapCheckTest {

    private static RegionInfo region(int id, String start, String end, long epoch) {
        return RegionInfo.newBuilder().setId(id).setStartKey(ByteString.copyFrom(start, StandardCharsets.UTF_8))
                .setEndKey(ByteString.copyFrom(end, StandardCharsets.UTF_8)).setEpoch(epoch)
                .setLeader("n1").setRole("FOLLOWER").build();
    }

    /** Three regions after one split of region 2 at "m": [, g) [g, m) [m, ). */
    private static List<RegionInfo> split() {
        return List.of(region(1, "", "g", 1), region(2, "g", "m", 2), region(65537, "m", "", 2));
    }

    private static List<NodeView> nodes(List<RegionInfo> a, List<RegionInfo> b, List<RegionInfo> c) {
        return List.of(NodeView.of("n1", a), NodeView.of("n2", b), NodeView.of("n3", c));
    }

    @Test
    void when_allNodesListTheSameTilingRegions_then_noProblem() {
        assertThat(RegionMapCheck.compare(nodes(split(), split(), split()))).isEmpty();
    }

    @Test
    void when_nodesDifferOnlyInLeaderRoleOrOrder_then_noProblem() {
        List<RegionInfo> other = new ArrayList<>();
        for (RegionInfo r : split()) {
            other.add(0, r.toBuilder().setRole("LEADER").setLeader("n3").setTerm(7).setAppliedIndex(99).build());
        }
        assertThat(RegionMapCheck.compare(nodes(split(), other, split()))).isEmpty();
    }

    @Test
    void when_oneNodeHasAnOtherEpoch_then_thatNodeAndRegionAreNamed() {
        List<RegionInfo> stale = List.of(region(1, "", "g", 1), region(2, "g", "m", 1), region(65537, "m", "", 2));
        List<String> problems = RegionMapCheck.compare(nodes(split(), split(), stale));
        assertThat(problems).hasSize(1);
        assertThat(problems.get(0)).contains("node n3 differs from node n1",
                "has region 2 [\"g\", \"m\") epoch 1 where node n1 has region 2 [\"g\", \"m\") epoch 2");
    }

    @Test
    void when_theOddNodeIsTheFirst_then_itIsTheOneNamed() {
        List<RegionInfo> before = List.of(region(1, "", "g", 1), region(2, "g", "", 1));
        List<String> problems = RegionMapCheck.compare(nodes(before, split(), split()));
        assertThat(problems).hasSize(1);
        assertThat(problems.get(0)).startsWith("node n1 differs from node n2")
                .contains("lacks region 65537 [\"m\", +inf) epoch 2")
                .contains("has region 2 [\"g\", +inf) epoch 1 where node n2 has region 2 [\"g\", \"m\") epoch 2");
    }

    @Test
    void when_aNodeLacksARegion_then_itsGapAndTheMissingRegionAreNamed() {
        List<RegionInfo> missing = List.of(region(1, "", "g", 1), region(65537, "m", "", 2));
        List<String> problems = RegionMapCheck.compare(nodes(split(), missing, split()));
        assertThat(problems).anySatisfy(p -> assertThat(p).contains("node n2: gap between region 1", "and region 65537"));
        assertThat(problems).anySatisfy(p -> assertThat(p)
                .contains("node n2 differs from node n1: lacks region 2 [\"g\", \"m\") epoch 2"));
    }

    @Test
    void when_aNodeHasAnExtraRegion_then_itIsNamed() {
        List<RegionInfo> extra = List.of(region(1, "", "g", 1), region(2, "g", "m", 2), region(65537, "m", "t", 3),
                region(65538, "t", "", 3));
        List<String> problems = RegionMapCheck.compare(nodes(split(), split(), extra));
        assertThat(problems).singleElement().asString().contains("node n3 differs from node n1",
                "has region 65538 [\"t\", +inf) epoch 3 that node n1 lacks");
    }

    @Test
    void when_allNodesAgreeOnAMapWithAGap_then_eachNodeIsNamed() {
        List<RegionInfo> gap = List.of(region(1, "", "g", 1), region(2, "h", "", 2));
        List<String> problems = RegionMapCheck.compare(nodes(gap, gap, gap));
        assertThat(problems).hasSize(3).allSatisfy(p -> assertThat(p).contains("gap between region 1 [\"\", \"g\") epoch 1"
                + " and region 2 [\"h\", +inf) epoch 2"));
        assertThat(problems.get(1)).startsWith("node n2: ");
    }

    @Test
    void when_twoRegionsOverlap_then_theOverlapIsNamed() {
        List<RegionInfo> overlap = List.of(region(1, "", "m", 1), region(2, "g", "", 2));
        assertThat(RegionMapCheck.compare(nodes(overlap, overlap, overlap)))
                .contains("node n1: overlap of region 1 [\"\", \"m\") epoch 1 and region 2 [\"g\", +inf) epoch 2");
    }

    @Test
    void when_theKeySpaceIsNotCoveredAtAnEnd_then_theOpenEndIsNamed() {
        List<RegionInfo> ends = List.of(region(1, "a", "g", 1), region(2, "g", "z", 1));
        List<String> problems = RegionMapCheck.compare(List.of(NodeView.of("n1", ends)));
        assertThat(problems).containsExactly(
                "node n1: gap before the first region: region 1 [\"a\", \"g\") epoch 1 does not start at the empty key",
                "node n1: gap after the last region: region 2 [\"g\", \"z\") epoch 1 does not end at +inf");
    }

    @Test
    void when_aNodeDoesNotAnswer_then_itIsAProblem() {
        List<String> problems = RegionMapCheck.compare(List.of(NodeView.of("n1", split()),
                NodeView.failed("n2", "UNAVAILABLE: connection refused"), NodeView.of("n3", split())));
        assertThat(problems).containsExactly("node n2: no answer (UNAVAILABLE: connection refused)");
    }

    @Test
    void when_theNodesConvergeWithinTheLimit_then_theWaitPasses() throws Exception {
        AtomicInteger rounds = new AtomicInteger();
        List<RegionInfo> before = List.of(region(1, "", "g", 1), region(2, "g", "", 1));
        RegionMapCheck.Result r = RegionMapCheck.await(() -> rounds.incrementAndGet() < 3
                ? nodes(split(), split(), before) : nodes(split(), split(), split()), Duration.ofSeconds(20), Duration.ZERO);
        assertThat(r.ok()).isTrue();
        assertThat(rounds).hasValue(3);
        assertThat(r.regions()).isEqualTo(3);
        assertThat(r.text()).startsWith("3 nodes agree on 3 regions tiling the key space");
    }

    // ---- more nodes than replicas: each node lists the regions it holds ----------------------------------------

    /** Four regions [, d) [d, g) [g, m) [m, ) on four nodes, three replicas each: node i lacks region i (1-based). */
    private static List<NodeView> fourNodes() {
        List<RegionInfo> all = List.of(region(1, "", "d", 1), region(2, "d", "g", 1), region(3, "g", "m", 2),
                region(65537, "m", "", 2));
        List<NodeView> views = new ArrayList<>();
        for (int n = 0; n < 4; n++) {
            List<RegionInfo> held = new ArrayList<>(all);
            held.remove(n);
            views.add(NodeView.of("n" + (n + 1), held));
        }
        return views;
    }

    private static List<NodeView> replace(List<NodeView> views, int node, List<RegionInfo> regions) {
        List<NodeView> out = new ArrayList<>(views);
        out.set(node, NodeView.of(views.get(node).node(), regions));
        return out;
    }

    @Test
    void when_eachRegionIsOnThreeOfFourNodes_andTheyTileTheKeySpaceTogether_then_noProblem() {
        assertThat(RegionMapCheck.compare(fourNodes(), 3)).isEmpty();
        // the same views checked as if every node held every region: each has a gap and lacks one
        assertThat(RegionMapCheck.compare(fourNodes())).isNotEmpty();
    }

    @Test
    void when_aRegionIsOnTwoOrFourNodes_then_itAndItsNodesAreNamed() {
        // n1 drops region 2 (a move under way, or a replica lost): region 2 on n3 and n4 only
        List<NodeView> two = replace(fourNodes(), 0, List.of(region(3, "g", "m", 2), region(65537, "m", "", 2)));
        assertThat(RegionMapCheck.compare(two, 3)).containsExactly(
                "region 2 [\"d\", \"g\") epoch 1 is listed by 2 nodes [n3, n4], not by 3");
        // n1 holds region 1 too: on all four nodes
        List<NodeView> four = replace(fourNodes(), 0, List.of(region(1, "", "d", 1), region(2, "d", "g", 1),
                region(3, "g", "m", 2), region(65537, "m", "", 2)));
        assertThat(RegionMapCheck.compare(four, 3)).containsExactly(
                "region 1 [\"\", \"d\") epoch 1 is listed by 4 nodes [n1, n2, n3, n4], not by 3");
    }

    @Test
    void when_aNodeListsARegionWithAnotherEpochOrRange_then_thatNodeIsNamed() {
        List<NodeView> stale = replace(fourNodes(), 3, List.of(region(1, "", "d", 1), region(2, "d", "g", 1),
                region(3, "g", "", 1)));
        List<String> problems = RegionMapCheck.compare(stale, 3);
        // region 3 is on n1, n2 and n4: the two that agree are the reference
        assertThat(problems).containsExactly("node n4 has region 3 [\"g\", +inf) epoch 1 where node n1 has region 3"
                + " [\"g\", \"m\") epoch 2");
    }

    @Test
    void when_noNodeHoldsAPartOfTheKeySpace_then_theGapIsNamed() {
        List<NodeView> views = new ArrayList<>();
        for (NodeView v : fourNodes()) {
            views.add(NodeView.of(v.node(), v.regions().stream().filter(r -> r.getId() != 2).toList()));
        }
        assertThat(RegionMapCheck.compare(views, 3)).containsExactly("the nodes' regions together: gap between"
                + " region 1 [\"\", \"d\") epoch 1 and region 3 [\"g\", \"m\") epoch 2");
    }

    @Test
    void when_aRegionKeepsALearner_then_theRegionTheLearnerAndTheNodesListingItAreNamed() {
        // region 1 is on n2, n3 and n4; n2 and n3 still list the learner n5 a move left (n4 has applied its removal)
        List<NodeView> views = fourNodes();
        for (int n : new int[]{1, 2}) {
            views = replace(views, n, views.get(n).regions().stream()
                    .map(r -> r.getId() == 1 ? r.toBuilder().addLearners("n5").build() : r).toList());
        }
        assertThat(RegionMapCheck.compare(views, 3)).containsExactly(
                "region 1 keeps learners [n5] (listed by [n2, n3]): a replica move's, not taken out");
        // every node holding every region: the same check
        List<NodeView> full = nodes(split(), split(), split());
        full = replace(full, 0, full.get(0).regions().stream()
                .map(r -> r.getId() == 2 ? r.toBuilder().addLearners("n9").build() : r).toList());
        assertThat(RegionMapCheck.compare(full)).containsExactly(
                "region 2 keeps learners [n9] (listed by [n1]): a replica move's, not taken out");
    }

    @Test
    void when_aNodeListsOverlappingRegions_then_theOverlapIsNamed() {
        // n1 still lists region 3 as it was before a split it has not applied, and the region split off it
        List<NodeView> overlap = replace(fourNodes(), 0, List.of(region(2, "d", "g", 1), region(3, "g", "", 1),
                region(65537, "m", "", 2)));
        assertThat(RegionMapCheck.compare(overlap, 3)).contains("node n1: overlap of region 3 [\"g\", +inf) epoch 1 and"
                + " region 65537 [\"m\", +inf) epoch 2");
    }

    @Test
    void when_aNodeListsARegionTwiceOrDoesNotAnswer_then_itIsAProblem() {
        List<NodeView> twice = replace(fourNodes(), 0, List.of(region(2, "d", "g", 1), region(2, "d", "g", 1),
                region(3, "g", "m", 2), region(65537, "m", "", 2)));
        assertThat(RegionMapCheck.compare(twice, 3)).contains("node n1: region 2 listed twice");
        List<NodeView> silent = new ArrayList<>(fourNodes());
        silent.set(1, NodeView.failed("n2", "TIMEOUT"));
        assertThat(RegionMapCheck.compare(silent, 3)).contains("node n2: no answer (TIMEOUT)");
    }

    @Test
    void when_partialViewsConverge_then_theResultCountsTheRegionsOfAllNodes() throws Exception {
        AtomicInteger rounds = new AtomicInteger();
        List<NodeView> moving = replace(fourNodes(), 0, List.of(region(3, "g", "m", 2), region(65537, "m", "", 2)));
        RegionMapCheck.Result r = RegionMapCheck.await(() -> rounds.incrementAndGet() < 3 ? moving : fourNodes(), 3,
                Duration.ofSeconds(20), Duration.ZERO);
        assertThat(r.ok()).isTrue();
        assertThat(r.regions()).isEqualTo(4);
        assertThat(r.text()).startsWith("4 nodes agree on 4 regions tiling the key space, 3 replicas each (after ");
    }

    @Test
    void when_theNodesNeverConverge_then_theWaitFailsWithTheLastProblems() throws Exception {
        List<RegionInfo> before = List.of(region(1, "", "g", 1), region(2, "g", "", 1));
        RegionMapCheck.Result r = RegionMapCheck.await(() -> nodes(split(), split(), before), Duration.ofMillis(50),
                Duration.ofMillis(10));
        assertThat(r.ok()).isFalse();
        assertThat(r.text()).startsWith("DIFFERS after").contains("node n3 differs from node n1");
    }
}
