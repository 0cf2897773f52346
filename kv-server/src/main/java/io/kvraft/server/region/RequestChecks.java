package io.kvraft.server.region;

import com.google.protobuf.ByteString;
import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteRequest;
import io.kvraft.server.config.ServerConfig.LimitsConfig;
import io.kvraft.server.coord.Locks;
import io.kvraft.server.store.KeyRange;

import java.util.HashSet;
import java.util.Set;

/**
 * What the leader checks of a request's keys, ranges and ops against its region and the node's limits before
 * anything enters the log; each check answers null or the wire error a client gets. The per-op rules are in
 * {@link WriteOps}; these are the pieces they share.
 */
public final class RequestChecks {

    private final LimitsConfig limits;

    public RequestChecks(LimitsConfig limits) {
        this.limits = limits;
    }

    /** A key: not empty, at most {@code limits.maxKeyBytes}, inside the region. */
    public Error key(Region region, ByteString key) {
        if (key.isEmpty()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "empty key");
        }
        if (key.size() > limits.maxKeyBytes()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT,
                    "key of " + key.size() + " bytes exceeds limits.maxKeyBytes " + limits.maxKeyBytes());
        }
        if (!region.range().contains(key.toByteArray())) {
            return Errors.of(ErrorCode.KEY_OUT_OF_RANGE, "key is outside region " + region.id() + " " + region.range());
        }
        return null;
    }

    /**
     * A range in the region: bounds of legal size (one byte more than a key, to name the key just past one),
     * start below end, and no bound past the region's.
     */
    public Error range(Region region, KeyRange range, ByteString start, ByteString end) {
        if (start.size() > limits.maxKeyBytes() + 1 || end.size() > limits.maxKeyBytes() + 1) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "a range bound exceeds limits.maxKeyBytes "
                    + limits.maxKeyBytes() + " + 1");
        }
        if (range.isEmpty()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "range start is not below its end: " + range);
        }
        if (!region.range().covers(range)) {
            return Errors.of(ErrorCode.KEY_OUT_OF_RANGE, "range " + range + " is not inside region "
                    + region.id() + " " + region.range());
        }
        return null;
    }

    /**
     * A write of one key (put, delete, compare-and-put and their kin): its key, its value and expected value of at most
     * {@code limits.maxValueBytes}, and the compare-and-put group it opens, if any.
     */
    Error keyedWrite(Region region, WriteRequest req, int i) {
        WriteOp op = req.getOps(i);
        Error error = key(region, op.getKey());
        if (error != null) {
            return error;
        }
        if (op.getType() != WriteOpType.DELETE && op.getValue().size() > limits.maxValueBytes()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT,
                    "value of " + op.getValue().size() + " bytes exceeds limits.maxValueBytes " + limits.maxValueBytes());
        }
        if (op.getType() == WriteOpType.COMPARE_AND_PUT && op.getExpect().size() > limits.maxValueBytes()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "expected value exceeds limits.maxValueBytes");
        }
        return op.getGroupSize() > 1 ? group(req, i) : null;
    }

    /** The longest value a store holds ({@code limits.maxValueBytes}). */
    int maxValueBytes() {
        return limits.maxValueBytes();
    }

    /** A RESTORE_COORD's value: a CoordRecord (of sane size) whose counters are numbers a sequence or lock can reach. */
    Error restoredRecord(WriteOp op) {
        if (op.getValue().size() > limits.maxValueBytes()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT,
                    "value of " + op.getValue().size() + " bytes exceeds limits.maxValueBytes " + limits.maxValueBytes());
        }
        CoordRecord record;
        try {
            record = CoordRecord.parseFrom(op.getValue());
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "a restored system record must be a CoordRecord: "
                    + e.getMessage());
        }
        if (record.getNextSequence() < 0 || record.getLockToken() < 0 || record.getLockTokenFloor() < 0) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "a restored system record's next_sequence and lock_token"
                    + " must be below 2^63");
        }
        return null;
    }

    /** A lock op's holder, lease and token: present where the op needs them, and of sane size. */
    static Error lockOp(WriteOp op) {
        if (op.getHolder().isEmpty() || op.getHolder().size() > Locks.MAX_HOLDER_BYTES) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "lock holder must have 1 to " + Locks.MAX_HOLDER_BYTES
                    + " bytes, got " + op.getHolder().size());
        }
        if (op.getType() != WriteOpType.LOCK_RELEASE
                && (op.getLeaseMs() == 0 || Long.compareUnsigned(op.getLeaseMs(), Locks.MAX_LEASE_MS) > 0)) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "lock lease must be 1 to " + Locks.MAX_LEASE_MS
                    + " ms, got " + Long.toUnsignedString(op.getLeaseMs()));
        }
        if (op.getType() != WriteOpType.LOCK_ACQUIRE && op.getToken() == 0) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "a lock renewal or release needs the holding's fencing token");
        }
        return null;
    }

    /** A compare-and-put group: all its ops follow in this request, are compare-and-puts, and name distinct keys. */
    static Error group(WriteRequest req, int first) {
        WriteOp op = req.getOps(first);
        int size = op.getGroupSize();
        if (op.getType() != WriteOpType.COMPARE_AND_PUT) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "op " + first + ": only compare-and-puts form groups");
        }
        if ((long) first + size > req.getOpsCount()) {
            return Errors.of(ErrorCode.INVALID_ARGUMENT, "op " + first + " opens a group of " + size
                    + " ops, but the request has only " + (req.getOpsCount() - first) + " from there");
        }
        Set<ByteString> keys = new HashSet<>();
        for (int j = first; j < first + size; j++) {
            WriteOp member = req.getOps(j);
            if (member.getType() != WriteOpType.COMPARE_AND_PUT || (j > first && member.getGroupSize() > 1)) {
                return Errors.of(ErrorCode.INVALID_ARGUMENT, "op " + j + " in the group opened by op " + first
                        + " is not a plain compare-and-put");
            }
            if (!keys.add(member.getKey())) {
                return Errors.of(ErrorCode.INVALID_ARGUMENT, "the group opened by op " + first
                        + " names a key twice");
            }
        }
        return null;
    }
}
