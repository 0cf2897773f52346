package io.kvraft.server.coord;

import io.kvraft.client.proto.KvProto.CoordRecord;
import io.kvraft.client.proto.KvProto.CoordResult;

/**
 * The sequence ops on a key's system record, as pure functions: the state machine reads the record,
 * calls one of these, and writes what comes back in the same atomic batch as the entry's other writes.
 * A sequence is a counter that only grows: every number below {@code next_sequence} has been handed
 * out, so a range is never handed out twice, across leader changes, restarts and snapshot installs
 * (the record is replicated state), until an operator resets it.
 */
public final class Sequences {

    /** The most numbers one call may take: more is a mistake, not a need (INVALID_ARGUMENT on the leader). */
    public static final long MAX_STEP = 1L << 40;

    /** The result of one op: the record to store (null = delete it), whether it took effect, and the answer. */
    public record Outcome(CoordRecord record, boolean succeeded, CoordResult result) {
    }

    private Sequences() {
    }

    /**
     * Takes {@code step} numbers: [next, next + step). Step 0 takes none and answers the latest value.
     * Refused (nothing changes, succeeded false) when the end would pass {@link Long#MAX_VALUE}.
     */
    public static Outcome take(CoordRecord record, long step) {
        CoordRecord current = record == null ? CoordRecord.getDefaultInstance() : record;
        long start = current.getNextSequence();
        if (step < 0 || start > Long.MAX_VALUE - step) {
            return new Outcome(current, false, CoordResult.newBuilder().setStart(start).setEnd(start).build());
        }
        long end = start + step;
        CoordRecord next = step == 0 ? current : current.toBuilder().setNextSequence(end).build();
        return new Outcome(next, true, CoordResult.newBuilder().setStart(start).setEnd(end).build());
    }

    /** The sequence starts again at 0; succeeded when it had handed out any number. */
    public static Outcome reset(CoordRecord record) {
        CoordRecord current = record == null ? CoordRecord.getDefaultInstance() : record;
        boolean used = current.getNextSequence() > 0;
        CoordRecord next = current.toBuilder().clearNextSequence().build();
        return new Outcome(next, used, CoordResult.getDefaultInstance());
    }

    /** Null when the record holds nothing worth keeping, so the store forgets the key. */
    public static CoordRecord orNull(CoordRecord record) {
        return record.equals(CoordRecord.getDefaultInstance()) ? null : record;
    }
}
