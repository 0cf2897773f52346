package io.kvraft.server.region;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteResponse;

import java.util.List;
import java.util.function.Consumer;

/**
 * One client write request waiting on the region leader to become part of a log entry.
 *
 * @param readKeys      gets that ride on the request's entry: answered from the store once it is applied (may be empty)
 * @param returnsValues the request has an op that answers with the value it found (GET_AND_PUT, PUT_IF_ABSENT)
 */
record WriteProposal(List<WriteOp> ops, List<ByteString> readKeys, int bytes, boolean returnsValues,
                     Consumer<WriteResponse> reply) {
}
