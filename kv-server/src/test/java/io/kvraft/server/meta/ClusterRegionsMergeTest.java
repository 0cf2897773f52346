package io.kvraft.server.meta;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.NodeReport;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.RegionViews;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;

/**
 * The rule by which the cluster map's leader answers a route lookup from the nodes' reports ({@link NodeReports#merged}):
 * per region the report of its leader, the highest epoch winning; a replica's report when no node reports itself the
 * leader; whatever the order the reports arrived in.
 */
class ClusterRegionsMergeTest {

    private static RegionInfo region(int id, String startHex, String endHex, long epoch, long term, String leader,
                                     String role, long applied) {
        return RegionInfo.newBuilder().setId(id).setStartKey(ByteString.copyFrom(HexFormat.of().parseHex(startHex)))
                .setEndKey(ByteString.copyFrom(HexFormat.of().parseHex(endHex))).setEpoch(epoch).setTerm(term)
                .setLeader(leader).setRole(role).setAppliedIndex(applied).addAllPeers(List.of("a:1", "b:1", "c:1"))
                .build();
    }

    private static NodeReport report(String node, RegionInfo... regions) {
        return NodeReport.newBuilder().setEndpoint(node).addAllRegions(List.of(regions)).build();
    }

    /** The merge of {@code reports} in every order they could be held in (the leader keeps them in a hash map). */
    private static List<List<RegionInfo>> mergedInAnyOrder(NodeReport... reports) {
        List<List<RegionInfo>> results = new ArrayList<>();
        List<NodeReport> list = new ArrayList<>(List.of(reports));
        for (int i = 0; i < list.size(); i++) {
            Collections.rotate(list, 1);
            results.add(NodeReports.merged(list).regions());
            List<NodeReport> reversed = new ArrayList<>(list);
            Collections.reverse(reversed);
            results.add(NodeReports.merged(reversed).regions());
        }
        return results;
    }

    @Test
    void when_followersAndTheLeaderReportARegion_then_theLeadersReportWins() {
        NodeReport a = report("a:1", region(1, "", "80", 1, 4, "a:1", "LEADER", 100), region(2, "80", "", 1, 4, "b:1",
                "FOLLOWER", 50));
        NodeReport b = report("b:1", region(1, "", "80", 1, 4, "a:1", "FOLLOWER", 99), region(2, "80", "", 1, 4, "b:1",
                "LEADER", 52));
        NodeReport c = report("c:1", region(1, "", "80", 1, 4, "", "FOLLOWER", 98), region(2, "80", "", 1, 4, "",
                "CANDIDATE", 51));

        for (List<RegionInfo> merged : mergedInAnyOrder(a, b, c)) {
            assertThat(merged).extracting(RegionInfo::getId, RegionInfo::getRole, RegionInfo::getLeader,
                    RegionInfo::getAppliedIndex).containsExactly(tuple(1, "LEADER", "a:1", 100L),
                    tuple(2, "LEADER", "b:1", 52L));
        }
        assertThat(NodeReports.merged(List.of(a, b, c)).covers()).isTrue();
    }

    @Test
    void when_severalNodesReportThemselvesTheLeader_then_theHighestEpochThenTheLatestTermWins() {
        // a:1 led region 1 before it split (its report is older); b:1 leads it since, at term 5
        NodeReport a = report("a:1", region(1, "", "", 1, 4, "a:1", "LEADER", 100));
        NodeReport b = report("b:1", region(1, "", "80", 2, 5, "b:1", "LEADER", 120),
                region(7, "80", "", 2, 5, "b:1", "LEADER", 3));
        for (List<RegionInfo> merged : mergedInAnyOrder(a, b)) {
            assertThat(merged).extracting(RegionInfo::getId, RegionInfo::getEpoch, RegionInfo::getLeader)
                    .containsExactly(tuple(1, 2L, "b:1"), tuple(7, 2L, "b:1"));
        }

        // one epoch, two nodes that each last said they lead: the later term is the leader now
        NodeReport old = report("a:1", region(1, "", "", 3, 4, "a:1", "LEADER", 100));
        NodeReport now = report("c:1", region(1, "", "", 3, 6, "c:1", "LEADER", 90));
        for (List<RegionInfo> merged : mergedInAnyOrder(old, now)) {
            assertThat(merged).extracting(RegionInfo::getLeader, RegionInfo::getTerm).containsExactly(tuple("c:1", 6L));
        }
    }

    @Test
    void when_noNodeReportsARegionsLeader_then_theReplicaWithTheHighestEpochWins() {
        // region 2 is electing: its replicas report no leader; b:1 applied the split of region 2 (into 2 and 9)
        NodeReport a = report("a:1", region(1, "", "40", 1, 2, "a:1", "LEADER", 10),
                region(2, "40", "", 1, 2, "", "FOLLOWER", 20));
        NodeReport b = report("b:1", region(2, "40", "c0", 2, 2, "", "CANDIDATE", 21),
                region(9, "c0", "", 2, 2, "", "FOLLOWER", 1));
        for (List<RegionInfo> merged : mergedInAnyOrder(a, b)) {
            assertThat(merged).extracting(RegionInfo::getId, RegionInfo::getEpoch, RegionInfo::getAppliedIndex)
                    .containsExactly(tuple(1, 1L, 10L), tuple(2, 2L, 21L), tuple(9, 2L, 1L));
        }
        RegionViews views = NodeReports.merged(List.of(a, b));
        assertThat(views.covers()).isTrue();
    }

    @Test
    void when_aLeadersReportPredatesASplitAReplicaApplied_then_theNewerShapeWins_andTheMapStillCoversTheKeySpace() {
        // the leader's last report is from before the split; a follower already reports both halves
        NodeReport leader = report("a:1", region(1, "", "", 1, 3, "a:1", "LEADER", 100));
        NodeReport follower = report("b:1", region(1, "", "80", 2, 3, "a:1", "FOLLOWER", 101),
                region(65537, "80", "", 2, 3, "", "STARTING", 0));
        for (List<RegionInfo> merged : mergedInAnyOrder(leader, follower)) {
            assertThat(merged).extracting(RegionInfo::getId, RegionInfo::getEpoch).containsExactly(tuple(1, 2L),
                    tuple(65537, 2L));
        }
        assertThat(NodeReports.merged(List.of(leader, follower)).covers()).isTrue();
    }

    @Test
    void when_theReportsLeaveAGap_then_theyDoNotCover() {
        NodeReport a = report("a:1", region(1, "", "40", 1, 2, "a:1", "LEADER", 10));
        NodeReport c = report("c:1", region(3, "80", "", 1, 2, "c:1", "LEADER", 10));
        assertThat(NodeReports.merged(List.of(a, c)).covers()).isFalse();
        assertThat(NodeReports.merged(List.of()).covers()).isFalse();
    }
}
