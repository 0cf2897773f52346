package io.kvraft.client.route;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.RegionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class RouteTableTest {

    private static final List<String> PEERS = List.of("n1:8181", "n2:8182", "n3:8183");

    private static RegionInfo region(int id, String startHex, String endHex, long epoch, String leader) {
        return RegionInfo.newBuilder()
                .setId(id)
                .setStartKey(ByteString.copyFrom(hex(startHex)))
                .setEndKey(ByteString.copyFrom(hex(endHex)))
                .setEpoch(epoch)
                .addAllPeers(PEERS)
                .setLeader(leader)
                .build();
    }

    private static byte[] hex(String h) {
        return HexFormat.of().parseHex(h);
    }

    /** Four regions split at 0x40, 0x80 and 0xc0: 0x80 and up are negative as signed bytes. */
    private static RouteTable fourRegions() {
        RouteTable t = new RouteTable();
        t.update(List.of(
                region(3, "80", "c0", 1, ""),
                region(1, "", "40", 1, ""),
                region(4, "c0", "", 1, ""),
                region(2, "40", "80", 1, "")));
        return t;
    }

    @ParameterizedTest(name = "key {0} -> region {1}")
    @CsvSource({
            "'',       1",
            "00,       1",
            "0000ff,   1",
            "3fffffff, 1",
            "40,       2",
            "4000,     2",
            "7f,       2",
            "7fffffff, 2",
            "80,       3",
            "8000,     3",
            "bfff,     3",
            "c0,       4",
            "fe,       4",
            "ff,       4",
            "ffffffff, 4",
    })
    void when_keyIsLookedUp_then_theRegionWithTheGreatestStartNotAboveItUnderUnsignedOrderHoldsIt(String keyHex, int regionId) {
        RouteTable t = fourRegions();

        RouteTable.Route r = t.lookup(hex(keyHex));

        assertThat(r).isNotNull();
        assertThat(r.regionId()).isEqualTo(regionId);
    }

    @Test
    void when_regionsAreListed_then_theyAreInUnsignedStartKeyOrder() {
        assertThat(fourRegions().routes()).extracting(RouteTable.Route::regionId).containsExactly(1, 2, 3, 4);
    }

    @ParameterizedTest(name = "key {0} falls in a gap")
    @CsvSource({"40", "50", "7fff"})
    void when_keyFallsBetweenTwoRegions_then_lookupReturnsNull(String keyHex) {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "40", 1, ""), region(3, "80", "", 1, "")));

        assertThat(t.lookup(hex(keyHex))).isNull();
        assertThat(t.lookup(hex("3f")).regionId()).isEqualTo(1);
        assertThat(t.lookup(hex("80")).regionId()).isEqualTo(3);
    }

    @ParameterizedTest(name = "keys just below {0} are in region {1}")
    @CsvSource({"'', 3", "81, 3", "80, 1", "40, 1", "01, 1"})
    void when_walkingDownwards_then_lookupBeforeFindsTheRegionOfTheKeysJustBelow(String keyHex, int region) {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "80", 1, ""), region(3, "80", "", 1, "")));

        assertThat(t.lookupBefore(hex(keyHex)).regionId()).isEqualTo(region);
    }

    @Test
    void when_keysJustBelowFallInAGapOrBelowEverything_then_lookupBeforeReturnsNull() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "10", "40", 1, ""), region(3, "80", "c0", 1, "")));

        assertThat(t.lookupBefore(hex("70"))).as("gap between 40 and 80").isNull();
        assertThat(t.lookupBefore(new byte[0])).as("above the last region's end").isNull();
        assertThat(t.lookupBefore(hex("10"))).as("below the first start").isNull();
        assertThat(t.lookupBefore(hex("40")).regionId()).isEqualTo(1);
    }

    @Test
    void when_keyIsBelowTheFirstStart_then_lookupReturnsNull() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(2, "40", "", 1, "")));

        assertThat(t.lookup(hex("3f"))).isNull();
        assertThat(t.lookup(new byte[0])).isNull();
    }

    @Test
    void when_tableIsEmpty_then_everyLookupReturnsNull() {
        RouteTable t = new RouteTable();

        assertThat(t.isEmpty()).isTrue();
        assertThat(t.lookup(hex("00"))).isNull();
        assertThat(t.routes()).isEmpty();
    }

    @Test
    void when_regionInfoNamesALeader_then_targetIsThatLeader() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "", 1, "n2:8182")));

        assertThat(t.byId(1).target()).isEqualTo("n2:8182");
    }

    @Test
    void when_aLeaderHintArrives_then_targetFollowsIt() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "", 1, "n1:8181")));
        RouteTable.Route r = t.byId(1);

        r.leader("n3:8183");

        assertThat(r.target()).isEqualTo("n3:8183");
        assertThat(t.lookup(hex("77")).target()).as("the same route object").isEqualTo("n3:8183");
    }

    @Test
    void when_leaderIsUnknown_then_targetRotatesThroughAllPeers() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "", 1, "n1:8181")));
        RouteTable.Route r = t.byId(1);

        r.leaderUnknown("n1:8181");

        List<String> targets = new ArrayList<>();
        for (int i = 0; i < 2 * PEERS.size(); i++) {
            targets.add(r.target());
        }
        assertThat(targets.subList(0, 3)).containsExactlyInAnyOrderElementsOf(PEERS);
        assertThat(targets.subList(3, 6)).as("the rotation repeats").isEqualTo(targets.subList(0, 3));
    }

    /**
     * A region answered with no leader, refreshed after each failed guess (a move's caller does so on REGION_NOT_FOUND):
     * the guesses go on through the peers instead of starting over with each new route, which would ask one replica
     * (one that lost its data, say) again and again.
     */
    @Test
    void when_aLeaderlessRegionIsRefreshedAfterEachGuess_then_theGuessesStillRotateThroughAllPeers() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "", 1, "")));

        List<String> targets = new ArrayList<>();
        for (int i = 0; i < PEERS.size(); i++) {
            RouteTable.Route r = t.byId(1);
            targets.add(r.target());
            r.leaderUnknown(targets.get(i));
            t.update(List.of(region(1, "", "", 1, "")));
        }
        assertThat(targets).containsExactlyInAnyOrderElementsOf(PEERS);
    }

    @Test
    void when_aFailureIsReportedForANodeThatIsNoLongerTheLeader_then_theNewerLeaderIsKept() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "", 1, "n1:8181")));
        RouteTable.Route r = t.byId(1);
        r.leader("n2:8182");

        r.leaderUnknown("n1:8181");

        assertThat(r.target()).isEqualTo("n2:8182");
    }

    @Test
    void when_leaderUnknownNamesNoTarget_then_theLeaderIsForgotten() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "", 1, "n1:8181")));
        RouteTable.Route r = t.byId(1);

        r.leaderUnknown(null);

        List<String> targets = List.of(r.target(), r.target(), r.target());
        assertThat(targets).containsExactlyInAnyOrderElementsOf(PEERS);
    }

    @Test
    void when_updateNamesNoLeaderAndTheEpochIsUnchanged_then_theKnownLeaderIsKept() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "80", 4, ""), region(2, "80", "", 4, "")));
        t.byId(1).leader("n3:8183");

        t.update(List.of(region(1, "", "80", 4, ""), region(2, "80", "", 4, "")));

        assertThat(t.byId(1).target()).isEqualTo("n3:8183");
        assertThat(t.lookup(hex("00")).target()).isEqualTo("n3:8183");
    }

    @Test
    void when_updateNamesNoLeaderAndTheEpochChanged_then_theOldLeaderIsForgotten() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "", 4, "")));
        t.byId(1).leader("n3:8183");

        t.update(List.of(region(1, "", "", 5, "")));

        RouteTable.Route r = t.byId(1);
        assertThat(r.epoch()).isEqualTo(5);
        assertThat(List.of(r.target(), r.target(), r.target()))
                .as("no leader known: each peer in turn").containsExactlyInAnyOrderElementsOf(PEERS);
    }

    @Test
    void when_updateNamesALeader_then_itReplacesTheKnownLeader() {
        RouteTable t = new RouteTable();
        t.update(List.of(region(1, "", "", 4, "")));
        t.byId(1).leader("n3:8183");

        t.update(List.of(region(1, "", "", 4, "n1:8181")));

        assertThat(t.byId(1).target()).isEqualTo("n1:8181");
    }

    @Test
    void when_updateOmitsARegion_then_itIsGoneByIdAndByKey() {
        RouteTable t = fourRegions();

        t.update(List.of(region(1, "", "80", 2, ""), region(3, "80", "", 2, "")));

        assertThat(t.byId(2)).isNull();
        assertThat(t.byId(4)).isNull();
        assertThat(t.lookup(hex("40")).regionId()).isEqualTo(1);
        assertThat(t.lookup(hex("ff")).regionId()).isEqualTo(3);
        assertThat(t.routes()).extracting(RouteTable.Route::regionId).containsExactly(1, 3);
    }

    @Test
    void when_aNodeReportsASplit_then_theNewerHalvesReplaceTheParentAndAStaleAnswerCannotRollThemBack() {
        RouteTable t = fourRegions();
        // region 2 [40, 80) split at 60 into 2 [40, 60) and 65537 [60, 80), both at epoch 2
        t.update(List.of(region(2, "40", "60", 2, "n2:8182"), region(65537, "60", "80", 2, "")));
        assertThat(t.lookup(hex("5f")).regionId()).isEqualTo(2);
        assertThat(t.lookup(hex("5f")).epoch()).isEqualTo(2);
        assertThat(t.lookup(hex("60")).regionId()).isEqualTo(65537);
        assertThat(t.lookup(hex("7f")).regionId()).isEqualTo(65537);
        assertThat(t.byId(65537)).isNotNull();

        // a node that has not applied the split yet still answers with region 2 at epoch 1 over [40, 80)
        t.update(List.of(region(1, "", "40", 1, ""), region(2, "40", "80", 1, ""), region(3, "80", "c0", 1, ""),
                region(4, "c0", "", 1, "")));
        assertThat(t.lookup(hex("60")).regionId()).isEqualTo(65537);
        assertThat(t.lookup(hex("40")).epoch()).isEqualTo(2);
        assertThat(t.routes()).hasSize(5);
    }

    @Test
    void when_onlyTheParentsNewerStateIsKnown_then_theChildsRangeIsAGapUntilItIsLearnt() {
        RouteTable t = fourRegions();
        t.update(List.of(region(3, "80", "a0", 2, "")));
        assertThat(t.lookup(hex("90")).regionId()).isEqualTo(3);
        assertThat(t.lookup(hex("a0"))).isNull(); // the client refreshes on a gap (REGION_NOT_FOUND)
        t.update(List.of(region(65540, "a0", "c0", 2, "")));
        assertThat(t.lookup(hex("b0")).regionId()).isEqualTo(65540);
    }
}
