package io.kvraft.server.region;

import com.google.protobuf.InvalidProtocolBufferException;
import io.kvraft.common.Errors;
import io.kvraft.common.WriteKind;
import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.WriteBatch;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.server.coord.Locks;
import io.kvraft.server.coord.Sequences;
import io.kvraft.server.store.KeyRange;

import java.util.Arrays;

/**
 * Every data operation a log entry may carry, in one place: what the leader checks before the op enters the log
 * ({@link #check}), whether its key is still the region's when the entry applies ({@link #inside}), and what applying
 * it does to the store and its answer ({@link #apply}), the same on every replica. Ops that change the region's shape
 * go alone in an entry and are applied by {@link ShapeChanges}. An op type missing here is refused by the leader and
 * stops a replica's state machine: a log entry is never skipped.
 */
public enum WriteOps {

    PUT(WriteKind.PUT) {
        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) {
            WriteOp op = batch.getOps(i);
            entry.put(op.getKey().toByteArray(), op.getValue().toByteArray());
            entry.succeeded(i, true);
            return 1;
        }
    },

    DELETE(WriteKind.DELETE) {
        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) {
            byte[] key = batch.getOps(i).getKey().toByteArray();
            entry.succeeded(i, entry.get(key) != null);
            entry.delete(key);
            return 1;
        }
    },

    /** With {@code group_size} > 1, this op and the next ones take effect together or not at all. */
    COMPARE_AND_PUT(WriteKind.COMPARE_AND_PUT) {
        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) {
            int group = Math.max(1, batch.getOps(i).getGroupSize());
            int end = Math.min(i + group, batch.getOpsCount());
            boolean all = i + group <= batch.getOpsCount();
            for (int j = i; all && j < end; j++) {
                all = matches(batch.getOps(j), entry);
            }
            for (int j = i; j < end; j++) {
                entry.succeeded(j, all);
                if (all) {
                    WriteOp member = batch.getOps(j);
                    entry.put(member.getKey().toByteArray(), member.getValue().toByteArray());
                }
            }
            return group;
        }
    },

    DELETE_RANGE(WriteKind.DELETE_RANGE) {
        @Override
        Error check(Region region, WriteRequest req, int i, RequestChecks checks) {
            WriteOp op = req.getOps(i);
            return checks.range(region, rangeOf(op), op.getKey(), op.getEndKey());
        }

        @Override
        boolean inside(WriteOp op, KeyRange region) {
            return region.covers(rangeOf(op));
        }

        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) {
            KeyRange range = rangeOf(batch.getOps(i));
            // checked on the leader before proposing; checked again here, where every replica decides alike
            boolean inside = entry.regionRange().covers(range);
            entry.succeeded(i, inside);
            if (inside) {
                entry.deleteRange(range);
            }
            return 1;
        }
    },

    GET_AND_PUT(WriteKind.GET_AND_PUT) {
        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) {
            WriteOp op = batch.getOps(i);
            byte[] key = op.getKey().toByteArray();
            byte[] value = op.getValue().toByteArray();
            entry.previous(i, entry.get(key));
            entry.put(key, value);
            entry.succeeded(i, true);
            return 1;
        }
    },

    PUT_IF_ABSENT(WriteKind.PUT_IF_ABSENT) {
        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) {
            WriteOp op = batch.getOps(i);
            byte[] key = op.getKey().toByteArray();
            byte[] current = entry.get(key);
            entry.previous(i, current);
            entry.succeeded(i, current == null);
            if (current == null) {
                entry.put(key, op.getValue().toByteArray());
            }
            return 1;
        }
    },

    /** RheaKV's merge: the value goes on the end of the key's value, within the leader's limits.maxValueBytes. */
    APPEND(WriteKind.APPEND) {
        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) {
            WriteOp op = batch.getOps(i);
            byte[] key = op.getKey().toByteArray();
            byte[] current = entry.get(key);
            int length = (current == null ? 0 : current.length) + op.getValue().size();
            boolean fits = batch.getMaxValueBytes() == 0 || length <= batch.getMaxValueBytes();
            entry.succeeded(i, fits);
            if (fits) {
                byte[] value = new byte[length];
                int at = current == null ? 0 : current.length;
                if (current != null) {
                    System.arraycopy(current, 0, value, 0, at);
                }
                op.getValue().copyTo(value, at);
                entry.put(key, value);
            }
            return 1;
        }
    },

    GET_SEQUENCE(WriteKind.GET_SEQUENCE) {
        @Override
        Error check(Region region, WriteRequest req, int i, RequestChecks checks) {
            return checkSequence(region, req.getOps(i), checks);
        }

        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) throws InvalidProtocolBufferException {
            WriteOp op = batch.getOps(i);
            return coord(i, entry, op, record -> Sequences.take(record, op.getStep()));
        }
    },

    RESET_SEQUENCE(WriteKind.RESET_SEQUENCE) {
        @Override
        Error check(Region region, WriteRequest req, int i, RequestChecks checks) {
            WriteOp op = req.getOps(i);
            Error error = checkSequence(region, op, checks);
            return error == null && op.getKey().equals(Sequences.REGION_IDS)
                    ? Errors.of(ErrorCode.INVALID_ARGUMENT, "the sequence of region ids is reserved: it is never"
                            + " reset, so no region id is handed out twice")
                    : error;
        }

        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) throws InvalidProtocolBufferException {
            WriteOp op = batch.getOps(i);
            return coord(i, entry, op, Sequences::reset);
        }
    },

    LOCK_ACQUIRE(WriteKind.LOCK_ACQUIRE) {
        @Override
        Error check(Region region, WriteRequest req, int i, RequestChecks checks) {
            return checkLock(region, req.getOps(i), checks);
        }

        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) throws InvalidProtocolBufferException {
            WriteOp op = batch.getOps(i);
            return coord(i, entry, op, record -> Locks.acquire(record, op.getHolder(), op.getLeaseMs(), entry.clock()));
        }
    },

    LOCK_RENEW(WriteKind.LOCK_RENEW) {
        @Override
        Error check(Region region, WriteRequest req, int i, RequestChecks checks) {
            return checkLock(region, req.getOps(i), checks);
        }

        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) throws InvalidProtocolBufferException {
            WriteOp op = batch.getOps(i);
            return coord(i, entry, op, record -> Locks.renew(record, op.getHolder(), op.getToken(), op.getLeaseMs(),
                    entry.clock()));
        }
    },

    LOCK_RELEASE(WriteKind.LOCK_RELEASE) {
        @Override
        Error check(Region region, WriteRequest req, int i, RequestChecks checks) {
            return checkLock(region, req.getOps(i), checks);
        }

        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) throws InvalidProtocolBufferException {
            WriteOp op = batch.getOps(i);
            return coord(i, entry, op, record -> Locks.release(record, op.getHolder(), op.getToken(), entry.clock()));
        }
    },

    RESTORE_COORD(WriteKind.RESTORE_COORD) {
        @Override
        Error check(Region region, WriteRequest req, int i, RequestChecks checks) {
            WriteOp op = req.getOps(i);
            Error error = checks.key(region, op.getKey());
            return error != null ? error : checks.restoredRecord(op);
        }

        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) throws InvalidProtocolBufferException {
            WriteOp op = batch.getOps(i);
            CoordRecord given;
            try {
                given = CoordRecord.parseFrom(op.getValue());
            } catch (InvalidProtocolBufferException e) {
                return 1; // refused on the leader; never expected here, and changes nothing on any replica
            }
            return coord(i, entry, op, record -> Sequences.restore(record, given));
        }
    },

    /** No data: the leader that proposed it captures the store when it applies the entry. */
    BACKUP_POINT(WriteKind.BACKUP_POINT) {
        @Override
        Error check(Region region, WriteRequest req, int i, RequestChecks checks) {
            return proposedByLeaders(req, i);
        }

        @Override
        boolean inside(WriteOp op, KeyRange region) {
            return true;
        }

        @Override
        int apply(WriteBatch batch, int i, EntryApply entry) {
            entry.succeeded(i, true);
            return 1;
        }
    };

    private static final WriteOps[] BY_NUMBER = new WriteOps[64];

    static {
        for (WriteOps op : values()) {
            BY_NUMBER[op.kind.type().getNumber()] = op;
        }
    }

    private final WriteKind kind;

    WriteOps(WriteKind kind) {
        this.kind = kind;
    }

    /** The data op of {@code type}, or null (an unknown number, or an op that changes the region's shape). */
    static WriteOps of(WriteOpType type) {
        int n = type == WriteOpType.UNRECOGNIZED ? -1 : type.getNumber();
        return n < 0 || n >= BY_NUMBER.length ? null : BY_NUMBER[n];
    }

    WriteKind kind() {
        return kind;
    }

    /**
     * Checks op {@code i} of a client's write request on the leader, before it enters the log: key or range, sizes,
     * op-specific fields; null when it may go. By default a write of one key: its key, value and expected value.
     */
    Error check(Region region, WriteRequest req, int i, RequestChecks checks) {
        return checks.keyedWrite(region, req, i);
    }

    /** Whether the op's keys lie in {@code region}, the region's range when its entry applies. */
    boolean inside(WriteOp op, KeyRange region) {
        return region.contains(op.getKey());
    }

    /**
     * Applies op {@code i} of the entry (and the ops it takes with it), through {@code entry}; returns how many ops it
     * took: the state machine goes on after them.
     */
    abstract int apply(WriteBatch batch, int i, EntryApply entry) throws InvalidProtocolBufferException;

    /** Checks op {@code i} of a request from a client: an op of a type clients may not send is refused by name. */
    public static Error checkFromClient(Region region, WriteRequest req, int i, RequestChecks checks) {
        WriteOp op = req.getOps(i);
        WriteOps data = of(op.getType());
        WriteKind kind = WriteKind.of(op.getType());
        if (kind != null && !kind.fromClients()) {
            return proposedByLeaders(req, i);
        }
        if (data == null) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "op " + i + " has an unknown type " + op.getTypeValue());
        }
        return data.check(region, req, i, checks);
    }

    private static Error proposedByLeaders(WriteRequest req, int i) {
        return Errors.of(ErrorCode.INVALID_ARGUMENT, "op " + i + ": " + req.getOps(i).getType()
                + " entries are proposed by region leaders only");
    }

    private static KeyRange rangeOf(WriteOp op) {
        return new KeyRange(op.getKey().toByteArray(), op.getEndKey().toByteArray());
    }

    private static boolean matches(WriteOp cas, EntryApply entry) {
        byte[] current = entry.get(cas.getKey().toByteArray());
        return cas.getExpectAbsent() ? current == null
                : current != null && Arrays.equals(current, cas.getExpect().toByteArray());
    }

    private static Error checkSequence(Region region, WriteOp op, RequestChecks checks) {
        Error error = checks.key(region, op.getKey());
        if (error == null && Long.compareUnsigned(op.getStep(), Sequences.MAX_STEP) > 0) {
            error = Errors.of(ErrorCode.INVALID_ARGUMENT, "sequence step " + Long.toUnsignedString(op.getStep())
                    + " exceeds " + Sequences.MAX_STEP);
        }
        return error;
    }

    private static Error checkLock(Region region, WriteOp op, RequestChecks checks) {
        Error error = checks.key(region, op.getKey());
        return error != null ? error : RequestChecks.lockOp(op);
    }

    /** A sequence or lock op's step on the key's system record (null: none yet). */
    private interface CoordStep {
        Sequences.Outcome apply(CoordRecord record);
    }

    /** Applies a sequence or lock op: its answer, and the key's system record when the step changed it. */
    private static int coord(int i, EntryApply entry, WriteOp op, CoordStep step) throws InvalidProtocolBufferException {
        byte[] key = op.getKey().toByteArray();
        byte[] stored = entry.getSystem(key);
        CoordRecord record = stored == null ? null : CoordRecord.parseFrom(stored);
        Sequences.Outcome outcome = step.apply(record);
        entry.succeeded(i, outcome.succeeded());
        entry.coord(i, outcome.result());
        CoordRecord next = Sequences.orNull(outcome.record());
        if (next == null ? stored != null : !next.equals(record)) {
            entry.putSystem(key, next == null ? null : next.toByteArray());
        }
        return 1;
    }
}
