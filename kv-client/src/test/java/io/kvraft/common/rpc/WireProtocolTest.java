package io.kvraft.common.rpc;

import com.alipay.remoting.CustomSerializer;
import com.alipay.remoting.CustomSerializerManager;
import com.alipay.remoting.InvokeContext;
import com.alipay.remoting.exception.DeserializationException;
import com.alipay.remoting.rpc.protocol.RpcRequestCommand;
import com.alipay.remoting.rpc.protocol.RpcResponseCommand;
import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.AdminResponse;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.Pair;
import io.kvraft.common.proto.KvProto.ReadRequest;
import io.kvraft.common.proto.KvProto.ScanRequest;
import io.kvraft.common.proto.KvProto.ScanResponse;
import io.kvraft.common.proto.KvProto.ReadResponse;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.proto.KvProto.TransferLeaderRequest;
import io.kvraft.common.proto.KvProto.Value;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.common.proto.KvProto.WriteResponse;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WireProtocolTest {

    @BeforeAll
    static void register() {
        WireProtocol.register();
    }

    private static ByteString bytes(String s) {
        return ByteString.copyFrom(s, StandardCharsets.UTF_8);
    }

    private static Error error() {
        return Error.newBuilder().setCode(ErrorCode.NOT_LEADER).setLeaderHint("10.0.0.2:8182").setDetail("ask elsewhere").build();
    }

    static Stream<Named<Message>> requests() {
        return named(
                WriteRequest.newBuilder().setRegionId(7).setRegionEpoch(3)
                        .addOps(WriteOp.newBuilder().setType(WriteOpType.PUT).setKey(bytes("k1")).setValue(bytes("v1")))
                        .addOps(WriteOp.newBuilder().setType(WriteOpType.DELETE).setKey(bytes("k2")))
                        .addOps(WriteOp.newBuilder().setType(WriteOpType.COMPARE_AND_PUT).setKey(bytes("k3"))
                                .setValue(ByteString.copyFrom(new byte[]{0, (byte) 0xff, 0x7f})).setExpect(bytes("old")))
                        .addOps(WriteOp.newBuilder().setType(WriteOpType.COMPARE_AND_PUT).setKey(bytes("k4"))
                                .setValue(bytes("new")).setExpectAbsent(true))
                        .build(),
                ReadRequest.newBuilder().setRegionId(24).setRegionEpoch(Long.MAX_VALUE)
                        .addKeys(bytes("a")).addKeys(ByteString.EMPTY).addKeys(ByteString.copyFrom(new byte[]{(byte) 0x80}))
                        .setMode(ReadMode.LEADER_LEASE)
                        .build(),
                ScanRequest.newBuilder().setRegionId(3).setRegionEpoch(2).setStartKey(bytes("a"))
                        .setEndKey(ByteString.copyFrom(new byte[]{(byte) 0xff, 0})).setLimit(1000).setReverse(true)
                        .setKeysOnly(true).setMode(ReadMode.FOLLOWER).build(),
                WriteRequest.newBuilder().setRegionId(2).setRegionEpoch(1)
                        .addOps(WriteOp.newBuilder().setType(WriteOpType.DELETE_RANGE).setKey(bytes("a")).setEndKey(bytes("b")))
                        .addOps(WriteOp.newBuilder().setType(WriteOpType.COMPARE_AND_PUT).setKey(bytes("c"))
                                .setExpectAbsent(true).setValue(bytes("x")).setGroupSize(2))
                        .addOps(WriteOp.newBuilder().setType(WriteOpType.COMPARE_AND_PUT).setKey(bytes("d"))
                                .setExpect(bytes("y")).setValue(bytes("z")))
                        .addOps(WriteOp.newBuilder().setType(WriteOpType.GET_AND_PUT).setKey(bytes("e")).setValue(bytes("1")))
                        .addOps(WriteOp.newBuilder().setType(WriteOpType.PUT_IF_ABSENT).setKey(bytes("f")).setValue(bytes("2")))
                        .build(),
                RegionsRequest.getDefaultInstance(),
                TransferLeaderRequest.newBuilder().setRegionId(5).setTarget("10.0.0.3:8183").build(),
                KvProto.BackupOpenRequest.newBuilder().setRegionId(4).setRegionEpoch(1).build(),
                KvProto.BackupPageRequest.newBuilder().setSessionId(Long.MAX_VALUE).setStartKey(bytes("k"))
                        .setLimit(1000).build(),
                KvProto.BackupCloseRequest.newBuilder().setSessionId(7).build(),
                KvProto.SplitRequest.newBuilder().setRegionId(65_537).setRegionEpoch(3).setSplitKey(bytes("user42")).build(),
                KvProto.MergeRequest.newBuilder().setLeftId(5).setRightId(65_537).setLeftEpoch(3).setRightEpoch(4).build(),
                KvProto.MergeStepRequest.newBuilder().setRegionId(65_537).setOp(KvProto.WriteOp.newBuilder()
                        .setType(KvProto.WriteOpType.PREPARE_MERGE).setRegionId(5).setEpoch(4)).addPeers("10.0.0.1:8181")
                        .addPeers("10.0.0.2:8182").build(),
                KvProto.MoveReplicaRequest.newBuilder().setRegionId(5).setFrom("10.0.0.2:8182").setTo("10.0.0.4:8184").build(),
                KvProto.ReplicaRequest.newBuilder().setOp(KvProto.ReplicaRequest.Op.DROP).setRegion(RegionInfo.newBuilder()
                        .setId(5).setStartKey(bytes("a")).setEpoch(3).addPeers("10.0.0.1:8181").addPeers("10.0.0.4:8184"))
                        .build(),
                KvProto.RecoverRegionRequest.newBuilder().setRegionId(5).addVoters("10.0.0.1:8181").setConfVer(4).build(),
                KvProto.JoinRequest.newBuilder().setEndpoint("10.0.0.5:8185").setNodeId("9a3f").setClusterId("c1").build(),
                KvProto.ClusterRequest.getDefaultInstance(),
                KvProto.NodeStateRequest.newBuilder().setEndpoint("10.0.0.4:8184").setState(KvProto.NodeState.REMOVED)
                        .setForce(true).build(),
                KvProto.NodeBeatRequest.newBuilder().setFrom("10.0.0.1:8181")
                        .addRegions(KvProto.RegionTerm.newBuilder().setRegion(5).setTerm(7))
                        .addRegions(KvProto.RegionTerm.newBuilder().setRegion(65_537).setTerm(2)).build(),
                KvProto.MapReplicaRequest.getDefaultInstance(),
                KvProto.RecoverMapRequest.newBuilder().addVoters("10.0.0.1:8181").build());
    }

    static Stream<Named<Message>> responses() {
        return named(
                WriteResponse.newBuilder().setError(error()).addSucceeded(true).addSucceeded(false).addSucceeded(true).build(),
                WriteResponse.newBuilder().addSucceeded(true).build(),
                ReadResponse.newBuilder()
                        .addValues(Value.newBuilder().setFound(true).setValue(bytes("v")))
                        .addValues(Value.newBuilder().setFound(false))
                        .addValues(Value.newBuilder().setFound(true).setValue(ByteString.EMPTY))
                        .build(),
                ReadResponse.newBuilder().setError(error()).build(),
                ScanResponse.newBuilder().addPairs(Pair.newBuilder().setKey(bytes("a")).setValue(bytes("1")))
                        .addPairs(Pair.newBuilder().setKey(ByteString.copyFrom(new byte[]{(byte) 0x80}))).setMore(true).build(),
                ScanResponse.newBuilder().setError(error()).build(),
                WriteResponse.newBuilder().addSucceeded(false).addSucceeded(true)
                        .addPrevious(Value.newBuilder().setFound(true).setValue(bytes("old")))
                        .addPrevious(Value.getDefaultInstance()).build(),
                RegionsResponse.newBuilder().setNode("10.0.0.1:8181").setWriteOps(123_456_789_012L).setReadOps(42)
                        .addRegions(RegionInfo.newBuilder().setId(1).setEndKey(ByteString.copyFrom(new byte[]{0x0a, (byte) 0xaa}))
                                .setEpoch(2).addPeers("10.0.0.1:8181").addPeers("10.0.0.2:8182").setLeader("10.0.0.1:8181")
                                .setTerm(9).setAppliedIndex(1_000_000).setRole("LEADER"))
                        .addRegions(RegionInfo.newBuilder().setId(2).setStartKey(ByteString.copyFrom(new byte[]{0x0a, (byte) 0xaa}))
                                .setEpoch(2).addPeers("10.0.0.1:8181").setRole("FOLLOWER"))
                        .build(),
                AdminResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.INVALID_ARGUMENT).setDetail("no such peer")).build(),
                AdminResponse.getDefaultInstance(),
                KvProto.BackupOpenResponse.newBuilder().setSessionId(3).setAppliedIndex(1234).setTerm(2)
                        .setStartKey(bytes("a")).setEndKey(ByteString.copyFrom(new byte[]{(byte) 0xff})).setEpoch(1)
                        .setKeyCount(41_666).setStoreId("6f1c").build(),
                KvProto.BackupOpenResponse.newBuilder().setError(error()).build(),
                KvProto.BackupPageResponse.newBuilder().addPairs(Pair.newBuilder().setKey(bytes("a")).setValue(bytes("1")))
                        .setMore(true).build(),
                KvProto.BackupPageResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.SESSION_NOT_FOUND)
                        .setDetail("expired")).build(),
                RegionsResponse.newBuilder().setNode("10.0.0.1:8181").setStoreId("0b9d6c1e").build(),
                KvProto.SplitResponse.newBuilder()
                        .setLeft(RegionInfo.newBuilder().setId(1).setEndKey(bytes("m")).setEpoch(2).addPeers("10.0.0.1:8181"))
                        .setRight(RegionInfo.newBuilder().setId(65_537).setStartKey(bytes("m")).setEpoch(2).setRole("STARTING"))
                        .build(),
                KvProto.SplitResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.INVALID_ARGUMENT)
                        .setDetail("split key is not strictly inside region 1")).build(),
                KvProto.RecoverRegionResponse.newBuilder().setRegion(RegionInfo.newBuilder().setId(5).setEpoch(3)
                        .addPeers("10.0.0.1:8181").setTerm(9)).build(),
                KvProto.RecoverRegionResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.INVALID_ARGUMENT)
                        .setDetail("region 5 not recovered: it has a leader, 10.0.0.2:8182")).build(),
                KvProto.MoveReplicaResponse.newBuilder().setRegion(RegionInfo.newBuilder().setId(5).setEpoch(3)
                        .addPeers("10.0.0.1:8181").addPeers("10.0.0.4:8184").setLeader("10.0.0.1:8181")).build(),
                KvProto.MoveReplicaResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.BUSY)
                        .setDetail("region 5 is in a merge or another replica move")).build(),
                KvProto.MergeResponse.newBuilder().setMerged(RegionInfo.newBuilder().setId(5).setStartKey(bytes("a"))
                        .setEpoch(6).addPeers("10.0.0.1:8181").setRole("LEADER")).build(),
                KvProto.MergeResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.UNAVAILABLE)
                        .setDetail("merge of region 65537 into region 5 rolled back")).build(),
                RegionsResponse.newBuilder().addRegions(RegionInfo.newBuilder().setId(65_537).setEpoch(4)
                        .setMergingInto(5).setMergeReady(true)).build(),
                KvProto.MergeStepResponse.newBuilder().setChanged(true).setState(KvProto.RegionState.newBuilder()
                        .setId(65_537).setStartKey(bytes("m")).setEpoch(5).setMergingInto(5).setMergePreparedAt(1234)).build(),
                KvProto.MergeStepResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.NOT_LEADER)
                        .setLeaderHint("10.0.0.2:8182")).build(),
                KvProto.JoinResponse.newBuilder().setMap(clusterMap()).build(),
                KvProto.JoinResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.NODE_REMOVED)
                        .setDetail("node 10.0.0.4:8184 was removed")).build(),
                KvProto.ClusterResponse.newBuilder().setMap(clusterMap())
                        .addStatus(KvProto.NodeStatus.newBuilder().setEndpoint("10.0.0.1:8181").setLive(true).setReplicas(24)
                                .setLeaders(8).setDiskBytes(3L << 30).setLastReportMs(400))
                        .setMetaLeader("10.0.0.1:8181").addMetaVoters("10.0.0.1:8181").addMetaLearners("10.0.0.4:8184")
                        .addMoves(KvProto.ReplicaMove.newBuilder().setRegionId(3).setFrom("10.0.0.4:8184")
                                .setTo("10.0.0.2:8182").setReason("drain").setRunningMs(1500))
                        .setMovesDone(12).addRegions(RegionInfo.newBuilder().setId(3).addPeers("10.0.0.1:8181")).build(),
                KvProto.ClusterResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.NOT_LEADER)
                        .setLeaderHint("10.0.0.2:8182")).build(),
                KvProto.NodeStateResponse.newBuilder().setMap(clusterMap()).build(),
                KvProto.NodeStateResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.INVALID_ARGUMENT)
                        .setDetail("would leave 2 UP nodes")).build(),
                KvProto.NodeReportResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.WRONG_CLUSTER))
                        .build(),
                KvProto.NodeBeatResponse.newBuilder().addFollowed(5).addFollowed(65_537).build(),
                mapReplica(),
                KvProto.MapReplicaResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.SHUTTING_DOWN))
                        .build(),
                KvProto.RecoverMapResponse.newBuilder().setReplica(mapReplica()).addRemoved("10.0.0.2:8182")
                        .addRemoved("10.0.0.3:8183").build(),
                KvProto.RecoverMapResponse.newBuilder().setError(Error.newBuilder().setCode(ErrorCode.INVALID_ARGUMENT)
                        .setDetail("cluster map not recovered: the map's group has a leader, 10.0.0.2:8182")).build());
    }

    private static KvProto.MapReplicaResponse mapReplica() {
        return KvProto.MapReplicaResponse.newBuilder().setNode("10.0.0.1:8181").setRole("CANDIDATE")
                .addVoters("10.0.0.1:8181").addVoters("10.0.0.2:8182").addVoters("10.0.0.3:8183")
                .addLearners("10.0.0.4:8184").setLastLogIndex(42).setMap(clusterMap()).build();
    }

    private static KvProto.ClusterMap clusterMap() {
        return KvProto.ClusterMap.newBuilder().setClusterId("c1").setFactor(3).setVersion(9)
                .addNodes(KvProto.NodeRecord.newBuilder().setEndpoint("10.0.0.1:8181").setNodeId("ab12")
                        .setState(KvProto.NodeState.UP).setSinceMs(1_700_000_000_000L))
                .addNodes(KvProto.NodeRecord.newBuilder().setEndpoint("10.0.0.4:8184").setNodeId("cd34")
                        .setState(KvProto.NodeState.DRAINING).setSinceMs(1_700_000_100_000L))
                .build();
    }

    private static Stream<Named<Message>> named(Message... messages) {
        return Stream.of(messages).map(m -> Named.of(m.getClass().getSimpleName()
                + (m.equals(m.getDefaultInstanceForType()) ? " (empty)" : ""), m));
    }

    private static CustomSerializer serializerFor(Message m) {
        CustomSerializer s = CustomSerializerManager.getCustomSerializer(m.getClass().getName());
        assertThat(s).as("serializer registered for " + m.getClass().getName()).isNotNull();
        return s;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("requests")
    void when_aRequestIsSerializedAndDeserialized_then_itComesBackEqual(Message request) throws Exception {
        CustomSerializer serializer = serializerFor(request);
        RpcRequestCommand sent = new RpcRequestCommand(request);
        sent.setRequestClass(request.getClass().getName());

        assertThat(serializer.serializeContent(sent, new InvokeContext())).isTrue();
        assertThat(sent.getContent()).as("plain protobuf bytes").isEqualTo(request.toByteArray());

        RpcRequestCommand received = new RpcRequestCommand();
        received.setRequestClass(request.getClass().getName());
        received.setContent(sent.getContent());
        assertThat(serializer.deserializeContent(received)).isTrue();

        assertThat(received.getRequestObject()).isEqualTo(request);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("responses")
    void when_aResponseIsSerializedAndDeserialized_then_itComesBackEqual(Message response) throws Exception {
        CustomSerializer serializer = serializerFor(response);
        RpcResponseCommand sent = new RpcResponseCommand(response);
        sent.setResponseClass(response.getClass().getName());

        assertThat(serializer.serializeContent(sent)).isTrue();
        assertThat(sent.getContent()).as("plain protobuf bytes").isEqualTo(response.toByteArray());

        RpcResponseCommand received = new RpcResponseCommand();
        received.setResponseClass(response.getClass().getName());
        received.setContent(sent.getContent());
        assertThat(serializer.deserializeContent(received, new InvokeContext())).isTrue();

        assertThat(received.getResponseObject()).isEqualTo(response);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("requests")
    void when_boltSerializesARequestCommand_then_itUsesTheRegisteredSerializerBothWays(Message request) throws Exception {
        RpcRequestCommand sent = new RpcRequestCommand(request);
        sent.setRequestClass(request.getClass().getName());  // as bolt's RpcRemoting does
        sent.serializeClazz();
        sent.serializeContent(new InvokeContext());

        RpcRequestCommand received = new RpcRequestCommand();
        received.setClazz(sent.getClazz());
        received.setContent(sent.getContent());
        received.deserializeClazz();
        received.deserializeContent(new InvokeContext());

        assertThat(sent.getContent()).isEqualTo(request.toByteArray());
        assertThat(received.getRequestObject()).isEqualTo(request);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("responses")
    void when_boltSerializesAResponseCommand_then_itUsesTheRegisteredSerializerBothWays(Message response) throws Exception {
        RpcResponseCommand sent = new RpcResponseCommand(response);
        sent.setResponseClass(response.getClass().getName());  // as bolt's RpcCommandFactory does
        sent.serializeClazz();
        sent.serializeContent(new InvokeContext());

        RpcResponseCommand received = new RpcResponseCommand();
        received.setClazz(sent.getClazz());
        received.setContent(sent.getContent());
        received.deserializeClazz();
        received.deserializeContent(new InvokeContext());

        assertThat(sent.getContent()).isEqualTo(response.toByteArray());
        assertThat(received.getResponseObject()).isEqualTo(response);
    }

    static Stream<Arguments> garbage() {
        byte[][] payloads = {
                {0x00},                                          // tag zero
                {0x0f, 0x01},                                    // field 1 with wire type 7
                {0x1a, 0x05, 0x01},                              // length-delimited field cut short
                {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff,
                        (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff}, // endless varint
        };
        Map<Class<?>, Message> onePerClass = new LinkedHashMap<>();
        Stream.concat(requests(), responses()).map(Named::getPayload).forEach(m -> onePerClass.putIfAbsent(m.getClass(), m));
        return onePerClass.values().stream()
                .flatMap(m -> Stream.of(payloads).map(p -> Arguments.of(m.getClass().getSimpleName(), m, p)));
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @MethodSource("garbage")
    void when_theContentIsGarbage_then_deserializationFailsWithDeserializationException(String name, Message m, byte[] content) {
        CustomSerializer serializer = serializerFor(m);
        String className = m.getClass().getName();

        RpcRequestCommand request = new RpcRequestCommand();
        request.setRequestClass(className);
        request.setContent(content);
        RpcResponseCommand response = new RpcResponseCommand();
        response.setResponseClass(className);
        response.setContent(content);

        assertThatThrownBy(() -> serializer.deserializeContent(request))
                .isExactlyInstanceOf(DeserializationException.class)
                .hasMessageContaining(className);
        assertThatThrownBy(() -> serializer.deserializeContent(response, new InvokeContext()))
                .isExactlyInstanceOf(DeserializationException.class)
                .hasMessageContaining(className);
    }

    @Test
    void when_aStringFieldHoldsInvalidUtf8_then_deserializationFailsWithDeserializationException() {
        CustomSerializer serializer = serializerFor(TransferLeaderRequest.getDefaultInstance());
        RpcRequestCommand request = new RpcRequestCommand();
        request.setRequestClass(TransferLeaderRequest.class.getName());
        request.setContent(new byte[]{0x12, 0x02, (byte) 0xc3, (byte) 0x28});  // target = invalid UTF-8

        assertThatThrownBy(() -> serializer.deserializeContent(request)).isExactlyInstanceOf(DeserializationException.class);
    }

    @Test
    void when_aRequestHasNoContent_then_itDeserializesToTheDefaultMessage() throws Exception {
        CustomSerializer serializer = serializerFor(RegionsRequest.getDefaultInstance());
        RpcRequestCommand request = new RpcRequestCommand();
        request.setRequestClass(RegionsRequest.class.getName());

        assertThat(serializer.deserializeContent(request)).isTrue();
        assertThat(request.getRequestObject()).isEqualTo(RegionsRequest.getDefaultInstance());
    }

    @Test
    void when_aResponseBodyIsNotAKvMessage_then_boltsDefaultSerializerIsLeftToHandleIt() throws Exception {
        CustomSerializer serializer = serializerFor(AdminResponse.getDefaultInstance());
        RpcResponseCommand notOurs = new RpcResponseCommand("bolt's own error text");
        notOurs.setResponseClass(String.class.getName());

        assertThat(serializer.serializeContent(notOurs)).isFalse();
        assertThat(serializer.deserializeContent(notOurs, new InvokeContext())).isFalse();
    }

    @Test
    void when_registered_then_everyRequestAndResponseMessageOfTheProtoHasASerializerAndIsCoveredHere() {
        List<String> rpcMessages = KvProto.getDescriptor().getMessageTypes().stream()
                .map(Descriptors.Descriptor::getName)
                .filter(n -> n.endsWith("Request") || n.endsWith("Response"))
                .map(n -> KvProto.class.getName() + "$" + n)
                .toList();
        List<String> tested = Stream.concat(requests(), responses()).map(n -> n.getPayload().getClass().getName())
                .distinct().toList();

        assertThat(rpcMessages).allSatisfy(c -> assertThat(CustomSerializerManager.getCustomSerializer(c)).as(c).isNotNull());
        assertThat(tested).containsExactlyInAnyOrderElementsOf(rpcMessages);
    }

    @Test
    void when_registerIsCalledAgain_then_theSameSerializerStaysRegistered() {
        CustomSerializer before = CustomSerializerManager.getCustomSerializer(WriteRequest.class.getName());

        WireProtocol.register();

        assertThat(CustomSerializerManager.getCustomSerializer(WriteRequest.class.getName())).isSameAs(before);
    }
}
