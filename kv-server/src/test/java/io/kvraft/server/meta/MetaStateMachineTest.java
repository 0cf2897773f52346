package io.kvraft.server.meta;

import io.kvraft.client.proto.KvProto.ClusterMap;
import io.kvraft.client.proto.KvProto.MetaCommand;
import io.kvraft.client.proto.KvProto.NodeRecord;
import io.kvraft.client.proto.KvProto.NodeState;
import org.junit.jupiter.api.Test;

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
}
