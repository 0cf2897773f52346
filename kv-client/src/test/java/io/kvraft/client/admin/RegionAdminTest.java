package io.kvraft.client.admin;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.client.route.RouteTable;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Where an admin call (a replica move, a rebuild) goes next. */
class RegionAdminTest {

    private static final List<String> PEERS = List.of("n1:1", "n2:2", "n3:3");

    private static RouteTable.Route route(String leader) {
        RouteTable t = new RouteTable();
        t.update(List.of(RegionInfo.newBuilder().setId(7).setStartKey(ByteString.EMPTY).setEndKey(ByteString.EMPTY)
                .setEpoch(1).addAllPeers(PEERS).setLeader(leader).build()));
        return t.byId(7);
    }

    @Test
    void when_theRouteStillNamesTheNodeThatHasNoReplica_then_anotherPeerIsAsked() {
        // a route lookup that still names, as leader, a node that came back wiped and answered REGION_NOT_FOUND
        assertThat(RegionAdmin.target(route("n2:2"), null, "n2:2")).isIn("n1:1", "n3:3");
        // no leader known: the peer in turn is that node, so the next one is asked
        RouteTable.Route leaderless = route("");
        for (int i = 0; i < 2 * PEERS.size(); i++) {
            assertThat(RegionAdmin.target(leaderless, null, "n2:2")).isIn("n1:1", "n3:3");
        }
    }

    @Test
    void when_aLeaderIsHintedOrNoNodeFailed_then_theHintOrTheRoutesLeaderIsAsked() {
        assertThat(RegionAdmin.target(route("n2:2"), "n3:3", null)).isEqualTo("n3:3");
        assertThat(RegionAdmin.target(route("n2:2"), "", null)).isEqualTo("n2:2");
        assertThat(RegionAdmin.target(route("n2:2"), null, "n1:1")).isEqualTo("n2:2");
    }
}
