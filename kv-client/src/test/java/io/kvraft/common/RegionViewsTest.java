package io.kvraft.common;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.RegionInfo;
import org.junit.jupiter.api.Test;

import java.util.HexFormat;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class RegionViewsTest {

    private static RegionInfo region(int id, String startHex, String endHex, long epoch, long term, String leader,
                                     String role) {
        return RegionInfo.newBuilder().setId(id).setStartKey(ByteString.copyFrom(HexFormat.of().parseHex(startHex)))
                .setEndKey(ByteString.copyFrom(HexFormat.of().parseHex(endHex))).setEpoch(epoch).setTerm(term)
                .setLeader(leader).setRole(role).build();
    }

    private static RegionInfo region(int id, String startHex, String endHex) {
        return region(id, startHex, endHex, 1, 1, "", "FOLLOWER");
    }

    @Test
    void when_oneAnswerHoldsEveryRegion_then_itCovers() {
        RegionViews v = new RegionViews();
        v.add(List.of(region(1, "", "40"), region(2, "40", "80"), region(3, "80", "")));

        assertThat(v.covers()).isTrue();
        assertThat(v.regions()).extracting(RegionInfo::getId).containsExactly(1, 2, 3);
    }

    @Test
    void when_eachAnswerHoldsSomeRegions_then_onlyTheirUnionCovers() {
        RegionViews v = new RegionViews();
        v.add(List.of(region(1, "", "40"), region(3, "80", "")));
        assertThat(v.covers()).as("region 2's keys are missing").isFalse();

        v.add(List.of(region(2, "40", "80"), region(3, "80", "")));
        assertThat(v.covers()).isTrue();
        assertThat(v.regions()).extracting(RegionInfo::getId).containsExactly(1, 2, 3);
    }

    @Test
    void when_theFirstOrLastRegionIsMissing_then_itDoesNotCover() {
        RegionViews noStart = new RegionViews();
        noStart.add(List.of(region(2, "40", "80"), region(3, "80", "")));
        RegionViews noEnd = new RegionViews();
        noEnd.add(List.of(region(1, "", "40"), region(2, "40", "80")));

        assertThat(noStart.covers()).isFalse();
        assertThat(noEnd.covers()).isFalse();
        assertThat(new RegionViews().covers()).isFalse();
    }

    @Test
    void when_aNodeLagsBehindAChangeOfVoters_then_theNewerConfVersionWins_evenFromAFollower() {
        RegionInfo lagging = region(1, "", "", 3, 9, "a:1", "LEADER").toBuilder().setConfVer(4)
                .addAllPeers(List.of("a:1", "b:1", "c:1")).build();
        RegionInfo current = region(1, "", "", 3, 8, "a:1", "FOLLOWER").toBuilder().setConfVer(5)
                .addAllPeers(List.of("a:1", "b:1", "d:1")).build();
        RegionViews v = new RegionViews();
        v.add(List.of(lagging));
        v.add(List.of(current));
        RegionViews reversed = new RegionViews();
        reversed.add(List.of(current));
        reversed.add(List.of(lagging));

        assertThat(v.regions()).containsExactly(current);
        assertThat(reversed.regions()).containsExactly(current);
    }

    @Test
    void when_anAnswerPredatesASplit_then_theNewerShapesWin() {
        RegionViews v = new RegionViews();
        v.add(List.of(region(1, "", "", 1, 1, "a:1", "LEADER"))); // a node that has not applied the split yet
        v.add(List.of(region(1, "", "80", 2, 1, "a:1", "FOLLOWER"), region(65537, "80", "", 2, 1, "", "STARTING")));

        assertThat(v.covers()).isTrue();
        assertThat(v.regions()).extracting(RegionInfo::getId, RegionInfo::getEpoch)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(1, 2L), org.assertj.core.groups.Tuple.tuple(65537, 2L));
    }

    @Test
    void when_answersDisagreeOnTheLeader_then_theHigherTermThenTheLeadersOwnAnswerWins() {
        RegionViews v = new RegionViews();
        v.add(List.of(region(1, "", "", 1, 3, "b:1", "FOLLOWER")));
        v.add(List.of(region(1, "", "", 1, 2, "a:1", "LEADER"))); // an old leader, a term behind
        assertThat(v.regions().get(0).getLeader()).isEqualTo("b:1");

        v.add(List.of(region(1, "", "", 1, 3, "b:1", "LEADER")));
        assertThat(v.regions().get(0).getRole()).isEqualTo("LEADER");
        v.add(List.of(region(1, "", "", 1, 3, "", "FOLLOWER")));
        assertThat(v.regions().get(0).getRole()).as("a later answer that knows less does not replace it").isEqualTo("LEADER");
    }

    @Test
    void when_theMapsRecordAndAReplicaThatHeardFromNoLeaderTie_then_theRecordWinsInEitherOrder() {
        RegionInfo record = RegionInfo.newBuilder().setId(1).setEpoch(2).setConfVer(3).addPeers("a:1").addPeers("b:1")
                .addPeers("c:1").build();
        RegionInfo fresh = RegionInfo.newBuilder().setId(1).setEpoch(2).setConfVer(3).addPeers("d:1").setTerm(0)
                .setRole("LEARNER").build(); // just made for a move: lists only what it was made with

        RegionViews recordFirst = new RegionViews();
        recordFirst.add(List.of(record));
        recordFirst.add(List.of(fresh));
        RegionViews freshFirst = new RegionViews();
        freshFirst.add(List.of(fresh));
        freshFirst.add(List.of(record));

        assertThat(recordFirst.regions()).containsExactly(record);
        assertThat(freshFirst.regions()).containsExactly(record);
    }

    @Test
    void when_aReplicaKnowsALeaderOrTheTermMovedOn_then_itsAnswerBeatsTheRecord() {
        RegionInfo record = RegionInfo.newBuilder().setId(1).setEpoch(2).setConfVer(3).addPeers("a:1").build();
        RegionInfo knowsLeader = record.toBuilder().setLeader("a:1").setRole("FOLLOWER").build();
        RegionInfo laterTerm = record.toBuilder().setTerm(4).setRole("FOLLOWER").build();

        for (RegionInfo report : List.of(knowsLeader, laterTerm)) {
            RegionViews v = new RegionViews();
            v.add(List.of(record));
            v.add(List.of(report));
            assertThat(v.regions()).containsExactly(report);
        }
    }
}
