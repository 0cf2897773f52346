package io.kvraft.server.rpc;

import io.kvraft.client.proto.KvProto.Error;
import io.kvraft.client.proto.KvProto.ErrorCode;

/** Builders for wire errors: a code, a leader hint, one line of detail. */
public final class Responses {

    private Responses() {
    }

    public static Error error(ErrorCode code, String leaderHint, String detail) {
        return Error.newBuilder()
                .setCode(code)
                .setLeaderHint(leaderHint == null ? "" : leaderHint)
                .setDetail(detail == null ? "" : detail)
                .build();
    }

    public static Error error(ErrorCode code, String detail) {
        return error(code, "", detail);
    }
}
