package io.kvraft.client;

import io.kvraft.common.proto.KvProto.CoordResult;

/** The answer to one sequence or lock op: whether it took effect, and what the server reported. */
record CoordAnswer(boolean succeeded, CoordResult result) {
}
