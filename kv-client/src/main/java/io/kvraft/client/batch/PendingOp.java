package io.kvraft.client.batch;

import io.kvraft.common.WriteKind;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.ReadMode;
import io.kvraft.common.proto.KvProto.WriteOp;

import java.util.List;

import java.util.concurrent.CompletableFuture;

/**
 * One operation on its way to one region: a write (put, delete, CAS, get-and-put, put-if-absent, or an
 * all-or-nothing group of CAS ops) or a single-key read, its deadline and its attempts so far. Completes
 * {@code result} with a Boolean (writes), the previous value or null (writes that return one), or a
 * byte[]/null (reads).
 */
public final class PendingOp {

    final WriteOp write;       // null for a read; the first op of a group
    final List<WriteOp> group; // the ops of an all-or-nothing group, else null
    final ByteString readKey;  // null for a write
    final ReadMode readMode;   // null for a write
    final byte[] key;
    final CompletableFuture<Object> result = new CompletableFuture<>();
    final long deadlineNanos;
    int attempts;

    private PendingOp(WriteOp write, List<WriteOp> group, ByteString readKey, ReadMode readMode, byte[] key,
                      long deadlineNanos) {
        this.write = write;
        this.group = group;
        this.readKey = readKey;
        this.readMode = readMode;
        this.key = key;
        this.deadlineNanos = deadlineNanos;
    }

    public static PendingOp write(WriteOp op, long deadlineNanos) {
        return new PendingOp(op, null, null, null, op.getKey().toByteArray(), deadlineNanos);
    }

    /** Compare-and-puts that take effect together or not at all; routed by the first op's key. */
    public static PendingOp group(List<WriteOp> ops, long deadlineNanos) {
        List<WriteOp> grouped = new java.util.ArrayList<>(ops.size());
        grouped.add(ops.get(0).toBuilder().setGroupSize(ops.size()).build());
        grouped.addAll(ops.subList(1, ops.size()));
        return new PendingOp(grouped.get(0), List.copyOf(grouped), null, null, ops.get(0).getKey().toByteArray(),
                deadlineNanos);
    }

    public static PendingOp read(byte[] key, ReadMode mode, long deadlineNanos) {
        return new PendingOp(null, null, ByteString.copyFrom(key), mode, key, deadlineNanos);
    }

    boolean isWrite() {
        return write != null;
    }

    /** The wire ops this operation sends: one, or the group's. */
    int opCount() {
        return group == null ? 1 : group.size();
    }

    /** Whether the answer is the value the key had before (GET_AND_PUT, PUT_IF_ABSENT) rather than a Boolean. */
    boolean returnsPrevious() {
        return write != null && kind().answer() == WriteKind.Answer.PREVIOUS;
    }

    /** Whether the answer is a {@link CoordAnswer} (sequence and lock ops). */
    boolean returnsCoord() {
        return write != null && kind().answer() == WriteKind.Answer.COORD;
    }

    /** Whether it may be sent again after an answer was lost: reads, and the writes {@link WriteKind} says may. */
    boolean idempotent() {
        return write == null || kind().retriedWhenUnknown();
    }

    private WriteKind kind() {
        return WriteKind.of(write.getType());
    }

    int bytes() {
        if (group != null) {
            int bytes = 0;
            for (WriteOp op : group) {
                bytes += op.getSerializedSize();
            }
            return bytes;
        }
        return write != null ? write.getSerializedSize() : readKey.size() + 4;
    }
}
