package io.kvraft.common;

import io.kvraft.common.proto.KvProto.WriteOpType;

/**
 * What each write op type is on the wire, read alike by the client (how to read its answer, whether to ask again
 * when an answer was lost) and by the server (who may send it, how it is counted): one row per op type, so a type
 * cannot mean one thing on one side and another on the other.
 */
public enum WriteKind {

    PUT(WriteOpType.PUT, Answer.SUCCEEDED, Counted.PUT, false, true, true),
    DELETE(WriteOpType.DELETE, Answer.SUCCEEDED, Counted.DELETE, false, true, false),
    COMPARE_AND_PUT(WriteOpType.COMPARE_AND_PUT, Answer.SUCCEEDED, Counted.CAS, false, true, true),
    DELETE_RANGE(WriteOpType.DELETE_RANGE, Answer.SUCCEEDED, Counted.DELETE, false, true, false),
    GET_AND_PUT(WriteOpType.GET_AND_PUT, Answer.PREVIOUS, Counted.PUT, false, true, true),
    PUT_IF_ABSENT(WriteOpType.PUT_IF_ABSENT, Answer.PREVIOUS, Counted.PUT, false, true, true),
    APPEND(WriteOpType.APPEND, Answer.SUCCEEDED, Counted.PUT, false, true, true),
    /** Taking numbers again only skips the range whose answer was lost: nobody ever gets it, none is handed out twice. */
    GET_SEQUENCE(WriteOpType.GET_SEQUENCE, Answer.COORD, Counted.NONE, true, true, true),
    RESET_SEQUENCE(WriteOpType.RESET_SEQUENCE, Answer.COORD, Counted.NONE, false, true, false),
    LOCK_ACQUIRE(WriteOpType.LOCK_ACQUIRE, Answer.COORD, Counted.NONE, false, true, true),
    /** Renewing a lease twice is renewing it once, later. */
    LOCK_RENEW(WriteOpType.LOCK_RENEW, Answer.COORD, Counted.NONE, true, true, false),
    LOCK_RELEASE(WriteOpType.LOCK_RELEASE, Answer.COORD, Counted.NONE, false, true, false),
    /** A restored record's counters only move forward, to the same values: applying it again changes nothing. */
    RESTORE_COORD(WriteOpType.RESTORE_COORD, Answer.SUCCEEDED, Counted.NONE, true, true, true),
    BACKUP_POINT(WriteOpType.BACKUP_POINT, Answer.SUCCEEDED, Counted.NONE, false, false, false),
    SPLIT(WriteOpType.SPLIT, Answer.SUCCEEDED, Counted.NONE, false, false, false),
    PREPARE_MERGE(WriteOpType.PREPARE_MERGE, Answer.SUCCEEDED, Counted.NONE, false, false, false),
    COMMIT_MERGE(WriteOpType.COMMIT_MERGE, Answer.SUCCEEDED, Counted.NONE, false, false, false),
    MERGE_ABORT(WriteOpType.MERGE_ABORT, Answer.SUCCEEDED, Counted.NONE, false, false, false),
    MERGE_ROLLBACK(WriteOpType.MERGE_ROLLBACK, Answer.SUCCEEDED, Counted.NONE, false, false, false),
    CONF_CHANGED(WriteOpType.CONF_CHANGED, Answer.SUCCEEDED, Counted.NONE, false, false, false);

    /** What the answer carries for an op of the kind, besides its error. */
    public enum Answer {
        /** {@code WriteResponse.succeeded}: whether it took effect (for a delete, whether the key existed). */
        SUCCEEDED,
        /** {@code WriteResponse.previous}: the value the key had before the op. */
        PREVIOUS,
        /** {@code WriteResponse.coord}: a sequence's range or a lock's state. */
        COORD
    }

    /** Which count of acknowledged writes a node's metrics add an op to. */
    public enum Counted {
        PUT, DELETE, CAS, NONE
    }

    private static final WriteKind[] BY_NUMBER = new WriteKind[64];

    static {
        for (WriteKind k : values()) {
            BY_NUMBER[k.type.getNumber()] = k;
        }
    }

    private final WriteOpType type;
    private final Answer answer;
    private final Counted counted;
    private final boolean retriedWhenUnknown;
    private final boolean fromClients;
    private final boolean grows;

    WriteKind(WriteOpType type, Answer answer, Counted counted, boolean retriedWhenUnknown, boolean fromClients,
              boolean grows) {
        this.type = type;
        this.answer = answer;
        this.counted = counted;
        this.retriedWhenUnknown = retriedWhenUnknown;
        this.fromClients = fromClients;
        this.grows = grows;
    }

    /** The kind of {@code type}, or null for a number this side does not know. */
    public static WriteKind of(WriteOpType type) {
        int n = type == WriteOpType.UNRECOGNIZED ? -1 : type.getNumber();
        return n < 0 || n >= BY_NUMBER.length ? null : BY_NUMBER[n];
    }

    public WriteOpType type() {
        return type;
    }

    public Answer answer() {
        return answer;
    }

    public Counted counted() {
        return counted;
    }

    /**
     * Whether an op of the kind may be sent again after its answer was lost (a timeout, a lost connection after
     * sending). No other write may: applied once with its answer lost, then again after another client's write to
     * the key, it would undo that write.
     */
    public boolean retriedWhenUnknown() {
        return retriedWhenUnknown;
    }

    /** Whether clients may send it; the others are proposed by region leaders only. */
    public boolean fromClients() {
        return fromClients;
    }

    /** Whether it may add data to the store (a value, a sequence or lock record): refused while the store is full. */
    public boolean grows() {
        return grows;
    }
}
