package io.kvraft.client;

import io.kvraft.client.proto.KvProto.ErrorCode;

/** A failed operation: the wire error code, and the leader hint when the server knew one. */
public final class KvException extends RuntimeException {

    private final ErrorCode code;
    private final String leaderHint;

    public KvException(ErrorCode code, String message) {
        this(code, message, "");
    }

    public KvException(ErrorCode code, String message, String leaderHint) {
        super(code + ": " + message, null, false, false);
        this.code = code;
        this.leaderHint = leaderHint == null ? "" : leaderHint;
    }

    public ErrorCode code() {
        return code;
    }

    public String leaderHint() {
        return leaderHint;
    }

    /** The KvException inside a CompletionException (or the given throwable wrapped as INTERNAL). */
    public static KvException unwrap(Throwable t) {
        Throwable c = t;
        while (c instanceof java.util.concurrent.CompletionException && c.getCause() != null) {
            c = c.getCause();
        }
        if (c instanceof KvException kv) {
            return kv;
        }
        return new KvException(ErrorCode.INTERNAL, String.valueOf(c));
    }
}
