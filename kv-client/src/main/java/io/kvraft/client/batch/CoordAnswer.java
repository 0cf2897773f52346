package io.kvraft.client.batch;

import io.kvraft.common.proto.KvProto.CoordResult;

/** The answer to one sequence or lock op: whether it took effect, and what the server reported. */
public record CoordAnswer(boolean succeeded, CoordResult result) {
}
