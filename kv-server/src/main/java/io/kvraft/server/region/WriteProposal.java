package io.kvraft.server.region;

import io.kvraft.client.proto.KvProto.WriteOp;
import io.kvraft.client.proto.KvProto.WriteResponse;

import java.util.List;
import java.util.function.Consumer;

/** One client write request waiting on the region leader to become part of a log entry. */
record WriteProposal(List<WriteOp> ops, int bytes, Consumer<WriteResponse> reply) {
}
