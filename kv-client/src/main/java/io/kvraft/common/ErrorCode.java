package io.kvraft.common;

import io.kvraft.common.proto.KvProto;

/**
 * Why an operation failed, as {@link KvException#code()} carries it: the constants of the wire's {@code ErrorCode}
 * (kv.proto), with the same names and numbers. Retriable codes are listed by the client's {@code RetryPolicy}.
 */
public enum ErrorCode {
    OK,
    /** Retriable: the leader hint names the leader when known. */
    NOT_LEADER,
    /** Retriable after a pause: the region is electing. */
    NO_LEADER,
    /** The region id is unknown to the node asked. */
    REGION_NOT_FOUND,
    /** The key is not in the region the request was sent to. */
    KEY_OUT_OF_RANGE,
    /** The client's region epoch differs from the server's, or its conf version is older. */
    STALE_EPOCH,
    /** An empty key, an oversized key or value, an empty batch, a refused admin change, ... */
    INVALID_ARGUMENT,
    /** Retriable: the deadline passed or no answer came; a write's outcome is then unknown. */
    TIMEOUT,
    /** Retriable after a pause: too much work in flight. */
    BUSY,
    /** A bug or an unexpected failure; see the server log. */
    INTERNAL,
    /** Retriable elsewhere: the node is stopping. */
    SHUTTING_DOWN,
    /** Retriable: the connection failed or was lost; a write's outcome is then unknown unless it was never sent. */
    UNAVAILABLE,
    /** An unlock or renewal by one that does not hold the lock (never held, released, or expired). */
    LOCK_NOT_HELD,
    /** The node holds no backup session of that id (ended, expired, or the node restarted). */
    SESSION_NOT_FOUND,
    /** A node whose data directory belongs to another cluster. */
    WRONG_CLUSTER,
    /** The node was removed from the cluster for good; it may not come back with its data. */
    NODE_REMOVED,
    /**
     * The region leader's store has no room for more data (MemoryDB: its heap past {@code store.maxHeapFraction} after
     * a collection): a write that would add data is refused, deletes pass. Not retried: room comes from deletes or a
     * larger heap, not from waiting.
     */
    STORE_FULL;

    private static final ErrorCode[] BY_NUMBER = values();

    /** The code of a wire error; a number this client does not know (a newer server's) is INTERNAL. */
    public static ErrorCode fromWire(KvProto.ErrorCode wire) {
        int n = wire == KvProto.ErrorCode.UNRECOGNIZED ? -1 : wire.getNumber();
        return n >= 0 && n < BY_NUMBER.length ? BY_NUMBER[n] : INTERNAL;
    }

    /** This code on the wire. */
    public KvProto.ErrorCode toWire() {
        return KvProto.ErrorCode.forNumber(ordinal());
    }
}
