package io.kvraft.common;

import io.kvraft.common.proto.KvProto;

/** A failed operation: its {@link ErrorCode}, and the leader hint when the server knew one. */
public final class KvException extends RuntimeException {

    private final ErrorCode code;
    private final String leaderHint;
    private final boolean unsent;
    private final boolean permanent;

    public KvException(ErrorCode code, String message) {
        this(code, message, "");
    }

    public KvException(ErrorCode code, String message, String leaderHint) {
        this(code, message, leaderHint, false);
    }

    /**
     * @param unsent the request never left this client (e.g. the connection could not be opened), so a
     *               write that failed this way was certainly not applied
     */
    public KvException(ErrorCode code, String message, String leaderHint, boolean unsent) {
        this(code, message, leaderHint, unsent, false);
    }

    private KvException(ErrorCode code, String message, String leaderHint, boolean unsent, boolean permanent) {
        super(code + ": " + message, null, false, false);
        this.code = code;
        this.leaderHint = leaderHint == null ? "" : leaderHint;
        this.unsent = unsent;
        this.permanent = permanent;
    }

    /** The failure a wire error reports: its code, detail and leader hint. */
    public static KvException fromWire(KvProto.Error error) {
        return new KvException(ErrorCode.fromWire(error.getCode()), error.getDetail(), error.getLeaderHint());
    }

    /**
     * A request that never left this client and never will with these settings (e.g. the server refused
     * the TLS handshake), whatever its code: retrying until the deadline cannot help.
     */
    public static KvException permanent(ErrorCode code, String message) {
        return new KvException(code, message, "", true, true);
    }

    /** True when trying again with the same settings cannot succeed; see {@link #permanent}. */
    public boolean permanent() {
        return permanent;
    }

    /** True when the request never left the client: a write that failed so was not applied. */
    public boolean unsent() {
        return unsent;
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
