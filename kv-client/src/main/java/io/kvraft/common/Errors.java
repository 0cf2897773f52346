package io.kvraft.common;

import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;

/** Builders for wire errors: a code, a leader hint, one line of detail. */
public final class Errors {

    private Errors() {
    }

    public static Error of(ErrorCode code, String leaderHint, String detail) {
        return Error.newBuilder()
                .setCode(code)
                .setLeaderHint(leaderHint == null ? "" : leaderHint)
                .setDetail(detail == null ? "" : detail)
                .build();
    }

    public static Error of(ErrorCode code, String detail) {
        return of(code, "", detail);
    }

    /** A call that failed before any answer (a timeout, a lost connection), as a wire error: its code and message. */
    public static Error of(KvException failure) {
        return of(failure.code().toWire(), "", failure.getMessage());
    }
}
