package io.kvraft.server.region;

import io.kvraft.client.proto.KvProto.WriteOp;
import io.kvraft.client.proto.KvProto.WriteResponse;

import java.util.List;
import java.util.function.Consumer;

/**
 * One client write request waiting on the region leader to become part of a log entry.
 *
 * @param returnsValues the request has an op that answers with the value it found (GET_AND_PUT, PUT_IF_ABSENT)
 */
record WriteProposal(List<WriteOp> ops, int bytes, boolean returnsValues, Consumer<WriteResponse> reply) {
}
