package io.kvraft.common.rpc;

import com.alipay.remoting.CustomSerializer;
import com.alipay.remoting.DefaultCustomSerializer;
import com.alipay.remoting.InvokeContext;
import com.alipay.remoting.exception.DeserializationException;
import com.alipay.remoting.exception.SerializationException;
import com.alipay.remoting.rpc.RequestCommand;
import com.alipay.remoting.rpc.ResponseCommand;
import com.alipay.remoting.rpc.protocol.RpcRequestCommand;
import com.alipay.remoting.rpc.protocol.RpcResponseCommand;
import com.alipay.remoting.CustomSerializerManager;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import io.kvraft.common.proto.KvProto;

import java.util.Map;

/**
 * Registers the kv protobuf messages with bolt, the transport under jraft's RPC. jraft's own
 * ProtobufSerializer only parses the messages of jraft's descriptor set, so ours get a serializer
 * of their own: protobuf bytes in, protobuf bytes out, no Java or Hessian serialization.
 */
public final class WireProtocol {

    private static final Map<String, Parser<? extends Message>> PARSERS = Map.ofEntries(
            parser(KvProto.BackupOpenRequest.class, KvProto.BackupOpenRequest.parser()),
            parser(KvProto.BackupOpenResponse.class, KvProto.BackupOpenResponse.parser()),
            parser(KvProto.BackupPageRequest.class, KvProto.BackupPageRequest.parser()),
            parser(KvProto.BackupPageResponse.class, KvProto.BackupPageResponse.parser()),
            parser(KvProto.BackupCloseRequest.class, KvProto.BackupCloseRequest.parser()),
            parser(KvProto.WriteRequest.class, KvProto.WriteRequest.parser()),
            parser(KvProto.WriteResponse.class, KvProto.WriteResponse.parser()),
            parser(KvProto.ReadRequest.class, KvProto.ReadRequest.parser()),
            parser(KvProto.ReadResponse.class, KvProto.ReadResponse.parser()),
            parser(KvProto.ScanRequest.class, KvProto.ScanRequest.parser()),
            parser(KvProto.ScanResponse.class, KvProto.ScanResponse.parser()),
            parser(KvProto.RegionsRequest.class, KvProto.RegionsRequest.parser()),
            parser(KvProto.RegionsResponse.class, KvProto.RegionsResponse.parser()),
            parser(KvProto.TransferLeaderRequest.class, KvProto.TransferLeaderRequest.parser()),
            parser(KvProto.AdminResponse.class, KvProto.AdminResponse.parser()),
            parser(KvProto.SplitRequest.class, KvProto.SplitRequest.parser()),
            parser(KvProto.SplitResponse.class, KvProto.SplitResponse.parser()),
            parser(KvProto.MergeRequest.class, KvProto.MergeRequest.parser()),
            parser(KvProto.MergeResponse.class, KvProto.MergeResponse.parser()),
            parser(KvProto.MoveReplicaRequest.class, KvProto.MoveReplicaRequest.parser()),
            parser(KvProto.MoveReplicaResponse.class, KvProto.MoveReplicaResponse.parser()),
            parser(KvProto.ReplicaRequest.class, KvProto.ReplicaRequest.parser()),
            parser(KvProto.RecoverRegionRequest.class, KvProto.RecoverRegionRequest.parser()),
            parser(KvProto.RecoverRegionResponse.class, KvProto.RecoverRegionResponse.parser()),
            parser(KvProto.JoinRequest.class, KvProto.JoinRequest.parser()),
            parser(KvProto.JoinResponse.class, KvProto.JoinResponse.parser()),
            parser(KvProto.ClusterRequest.class, KvProto.ClusterRequest.parser()),
            parser(KvProto.ClusterResponse.class, KvProto.ClusterResponse.parser()),
            parser(KvProto.NodeStateRequest.class, KvProto.NodeStateRequest.parser()),
            parser(KvProto.NodeStateResponse.class, KvProto.NodeStateResponse.parser()),
            parser(KvProto.NodeReport.class, KvProto.NodeReport.parser()),
            parser(KvProto.NodeReportResponse.class, KvProto.NodeReportResponse.parser()),
            parser(KvProto.MergeStepRequest.class, KvProto.MergeStepRequest.parser()),
            parser(KvProto.MergeStepResponse.class, KvProto.MergeStepResponse.parser()),
            parser(KvProto.NodeBeatRequest.class, KvProto.NodeBeatRequest.parser()),
            parser(KvProto.NodeBeatResponse.class, KvProto.NodeBeatResponse.parser()),
            parser(KvProto.MapReplicaRequest.class, KvProto.MapReplicaRequest.parser()),
            parser(KvProto.MapReplicaResponse.class, KvProto.MapReplicaResponse.parser()),
            parser(KvProto.RecoverMapRequest.class, KvProto.RecoverMapRequest.parser()),
            parser(KvProto.RecoverMapResponse.class, KvProto.RecoverMapResponse.parser()));

    private static Map.Entry<String, Parser<? extends Message>> parser(Class<? extends Message> type,
                                                                      Parser<? extends Message> parser) {
        return Map.entry(type.getName(), parser);
    }

    private static final CustomSerializer SERIALIZER = new ProtoSerializer();

    private static volatile boolean registered;

    private WireProtocol() {
    }

    /** Idempotent; call before the first RPC on either side (it also applies {@link BoltDefaults}). */
    public static synchronized void register() {
        if (registered) {
            return;
        }
        BoltDefaults.apply();
        for (String className : PARSERS.keySet()) {
            CustomSerializerManager.registerCustomSerializer(className, SERIALIZER);
        }
        registered = true;
    }

    private static Message parse(String className, byte[] bytes) throws DeserializationException {
        Parser<? extends Message> parser = PARSERS.get(className);
        if (parser == null) {
            throw new DeserializationException("unknown message class " + className);
        }
        try {
            return parser.parseFrom(bytes == null ? new byte[0] : bytes);
        } catch (InvalidProtocolBufferException e) {
            throw new DeserializationException("malformed " + className + ": " + e.getMessage());
        }
    }

    private static final class ProtoSerializer extends DefaultCustomSerializer {

        @Override
        public <T extends RequestCommand> boolean serializeContent(T request, InvokeContext ctx) throws SerializationException {
            RpcRequestCommand cmd = (RpcRequestCommand) request;
            cmd.setContent(((Message) cmd.getRequestObject()).toByteArray());
            return true;
        }

        @Override
        public <T extends ResponseCommand> boolean serializeContent(T response) throws SerializationException {
            RpcResponseCommand cmd = (RpcResponseCommand) response;
            Object body = cmd.getResponseObject();
            if (!(body instanceof Message msg)) {
                return false;  // bolt's own error responses keep bolt's default serializer
            }
            cmd.setContent(msg.toByteArray());
            return true;
        }

        @Override
        public <T extends RequestCommand> boolean deserializeContent(T request) throws DeserializationException {
            RpcRequestCommand cmd = (RpcRequestCommand) request;
            cmd.setRequestObject(parse(cmd.getRequestClass(), cmd.getContent()));
            return true;
        }

        @Override
        public <T extends ResponseCommand> boolean deserializeContent(T response, InvokeContext ctx)
                throws DeserializationException {
            RpcResponseCommand cmd = (RpcResponseCommand) response;
            if (!PARSERS.containsKey(cmd.getResponseClass())) {
                return false;
            }
            cmd.setResponseObject(parse(cmd.getResponseClass(), cmd.getContent()));
            return true;
        }
    }
}
