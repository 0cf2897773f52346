package io.kvraft.server.coord;

import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.common.proto.KvProto.CoordResult;

/**
 * The sequence ops on a key's system record, as pure functions: the state machine reads the record,
 * calls one of these, and writes what comes back in the same atomic batch as the entry's other writes.
 * A sequence is a counter that only grows: every number below {@code next_sequence} has been handed
 * out, so a range is never handed out twice, across leader changes, restarts and snapshot installs
 * (the record is replicated state), until an operator resets it.
 */
public final class Sequences {

    /**
     * The sequence region ids come from when regions split: reserved, never reset, so no region id is handed out
     * twice, whichever node splits.
     */
    public static final com.google.protobuf.ByteString REGION_IDS =
            com.google.protobuf.ByteString.copyFrom("\u0000kv/region-ids", java.nio.charset.StandardCharsets.US_ASCII);

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

    /**
     * RESTORE_COORD: {@code given} (the key's record in a backup) moves the key's counters forward, never back: the
     * next sequence number becomes the larger of both, and the fencing tokens carry on above the backup's (see
     * {@link Locks#raiseToken}). Nothing else is taken: a lock held in the backup is not restored (its lease was on
     * the old leader's clock). Succeeded when a counter moved; applying it again changes nothing.
     */
    public static Outcome restore(CoordRecord record, CoordRecord given) {
        CoordRecord current = record == null ? CoordRecord.getDefaultInstance() : record;
        CoordRecord next = current;
        if (given.getNextSequence() > current.getNextSequence()) { // signed: a value of 2^63 or more is never taken
            next = next.toBuilder().setNextSequence(given.getNextSequence()).build();
        }
        next = Locks.raiseToken(next, Math.max(given.getLockToken(), given.getLockTokenFloor()));
        return new Outcome(next, !next.equals(current), CoordResult.getDefaultInstance());
    }

    /** Null when the record holds nothing worth keeping, so the store forgets the key. */
    public static CoordRecord orNull(CoordRecord record) {
        return record.equals(CoordRecord.getDefaultInstance()) ? null : record;
    }
}
