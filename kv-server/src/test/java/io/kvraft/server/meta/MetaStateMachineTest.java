package io.kvraft.server.meta;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.MetaCommand;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionRecords;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.EnumOutter.ErrorType;
import com.alipay.sofa.jraft.error.RaftError;
import com.alipay.sofa.jraft.error.RaftException;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

class MetaStateMachineTest {

    private static NodeRecord node(String ep, String id, NodeState s) {
        return NodeRecord.newBuilder().setEndpoint(ep).setNodeId(id).setState(s).build();
    }

    @Test
    void theFirstInitWinsAndJoinsAndStatesAreRecorded() {
        ClusterMap m = MetaStateMachine.apply(ClusterMap.getDefaultInstance(), MetaCommand.newBuilder()
                .setInit(ClusterMap.newBuilder().setClusterId("one").setFactor(3).addNodes(node("a", "", NodeState.UP)))
                .build(), 1);
        assertThat(m.getClusterId()).isEqualTo("one");
        assertThat(m.getVersion()).isEqualTo(1);
        ClusterMap again = MetaStateMachine.apply(m, MetaCommand.newBuilder()
                .setInit(ClusterMap.newBuilder().setClusterId("two")).build(), 2);
        assertThat(again).isEqualTo(m);
        ClusterMap joined = MetaStateMachine.apply(m, MetaCommand.newBuilder().setJoin(node("b", "id-b", NodeState.UP))
                .build(), 3);
        assertThat(joined.getNodesList()).extracting(NodeRecord::getEndpoint).containsExactly("a", "b");
        ClusterMap filled = MetaStateMachine.apply(joined, MetaCommand.newBuilder().setJoin(node("a", "id-a", NodeState.UP))
                .build(), 4);
        assertThat(filled.getNodes(0).getNodeId()).isEqualTo("id-a");
        ClusterMap drained = MetaStateMachine.apply(filled, MetaCommand.newBuilder()
                .setSetState(node("b", "ignored", NodeState.DRAINING)).build(), 5);
        assertThat(drained.getNodes(1).getState()).isEqualTo(NodeState.DRAINING);
        assertThat(drained.getNodes(1).getNodeId()).isEqualTo("id-b"); // a state change keeps the node's id
        assertThat(drained.getVersion()).isEqualTo(filled.getVersion() + 1);
        ClusterMap unknown = MetaStateMachine.apply(drained, MetaCommand.newBuilder()
                .setSetState(node("zz", "", NodeState.REMOVED)).build(), 6);
        assertThat(unknown.getNodesList()).extracting(NodeRecord::getEndpoint).containsExactly("a", "b");
    }

    @Test
    void theRegionRecordIsReplacedWhole_andTheSameRecordAgainChangesNothing() {
        ClusterMap m = MetaStateMachine.apply(ClusterMap.getDefaultInstance(), MetaCommand.newBuilder()
                .setInit(ClusterMap.newBuilder().setClusterId("one").setFactor(3).addNodes(node("a", "", NodeState.UP)))
                .build(), 1);
        RegionInfo whole = RegionInfo.newBuilder().setId(1).setEpoch(1).addPeers("a").build();
        ClusterMap one = MetaStateMachine.apply(m, regions(whole), 2);
        assertThat(one.getRegionsList()).containsExactly(whole);
        assertThat(one.getVersion()).isEqualTo(m.getVersion() + 1);
        assertThat(one.getNodesList()).isEqualTo(m.getNodesList());
        assertThat(MetaStateMachine.apply(one, regions(whole), 3)).isSameAs(one);

        RegionInfo left = whole.toBuilder().setEpoch(2).setEndKey(ByteString.copyFromUtf8("m")).build();
        RegionInfo right = RegionInfo.newBuilder().setId(2).setEpoch(2).setStartKey(ByteString.copyFromUtf8("m"))
                .addPeers("a").build();
        ClusterMap split = MetaStateMachine.apply(one, regions(left, right), 4);
        assertThat(split.getRegionsList()).containsExactly(left, right);
        assertThat(split.getVersion()).isEqualTo(one.getVersion() + 1);
    }

    @Test
    void aNodeFoundDownIsRecorded_andClearedWhenItIsBack() {
        ClusterMap m = MetaStateMachine.apply(ClusterMap.getDefaultInstance(), MetaCommand.newBuilder()
                .setInit(ClusterMap.newBuilder().setClusterId("one").setFactor(3).addNodes(node("a", "id-a", NodeState.UP))
                        .addNodes(node("b", "id-b", NodeState.DRAINING))).build(), 1);
        ClusterMap down = MetaStateMachine.apply(m, setDown("b", 1234), 2);
        assertThat(down.getNodes(1).getDownSinceMs()).isEqualTo(1234);
        assertThat(down.getNodes(1).getState()).as("its state is kept").isEqualTo(NodeState.DRAINING);
        assertThat(down.getNodes(1).getNodeId()).isEqualTo("id-b");
        assertThat(down.getNodes(0).getDownSinceMs()).isZero();
        assertThat(down.getVersion()).isEqualTo(m.getVersion() + 1);
        assertThat(MetaStateMachine.apply(down, setDown("b", 1234), 3)).isSameAs(down);
        assertThat(MetaStateMachine.apply(down, setDown("zz", 99), 4)).isSameAs(down);
        ClusterMap back = MetaStateMachine.apply(down, setDown("b", 0), 5);
        assertThat(back.getNodes(1).getDownSinceMs()).isZero();
        assertThat(back.getVersion()).isEqualTo(down.getVersion() + 1);
    }

    private static MetaCommand setDown(String endpoint, long sinceMs) {
        return MetaCommand.newBuilder().setSetDown(NodeRecord.newBuilder().setEndpoint(endpoint).setDownSinceMs(sinceMs))
                .build();
    }

    @Test
    void theMapRecordsOnlyARegionsShapeAndVoters() {
        RegionInfo reported = RegionInfo.newBuilder().setId(3).setStartKey(ByteString.copyFromUtf8("a"))
                .setEndKey(ByteString.copyFromUtf8("b")).setEpoch(4).setConfVer(2).addPeers("n3").addPeers("n1")
                .setLeader("n3").setTerm(9).setRole("LEADER").setAppliedIndex(77).build();
        RegionInfo rec = MapRecords.recordOf(reported);
        assertThat(rec).isEqualTo(RegionInfo.newBuilder().setId(3).setStartKey(ByteString.copyFromUtf8("a"))
                .setEndKey(ByteString.copyFromUtf8("b")).setEpoch(4).setConfVer(2).addPeers("n1").addPeers("n3").build());
    }

    private static MetaCommand regions(RegionInfo... rs) {
        return MetaCommand.newBuilder().setRegions(RegionRecords.newBuilder().addAllRegions(java.util.List.of(rs)))
                .build();
    }

    @Test
    void when_jraftStopsTheGroupForItsStorage_then_theNodeIsTold_andForAnEntryItCannotApply_not() {
        List<String> told = new CopyOnWriteArrayList<>();
        MetaStateMachine fsm = new MetaStateMachine(m -> { }, () -> { }, told::add);
        fsm.onError(new RaftException(ErrorType.ERROR_TYPE_STATE_MACHINE, new Status(RaftError.ESTATEMACHINE, "bad entry")));
        assertThat(told).as("an entry that cannot be applied fails alike on every replica: no node stop").isEmpty();
        fsm.onError(new RaftException(ErrorType.ERROR_TYPE_LOG, new Status(RaftError.EIO, "fsync failed")));
        fsm.onError(new RaftException(ErrorType.ERROR_TYPE_SNAPSHOT, new Status(RaftError.EIO, "snapshot not written")));
        assertThat(told).hasSize(2);
        assertThat(told.get(0)).contains("ERROR_TYPE_LOG").contains("fsync failed");
        assertThat(told.get(1)).contains("ERROR_TYPE_SNAPSHOT");
    }
}
