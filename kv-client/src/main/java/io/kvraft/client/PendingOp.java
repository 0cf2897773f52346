package io.kvraft.client;

import com.google.protobuf.ByteString;
import io.kvraft.client.proto.KvProto.WriteOp;
import io.kvraft.client.proto.KvProto.WriteOpType;

import java.util.concurrent.CompletableFuture;

/**
 * One single-key operation on its way: a write (put, delete, CAS) or a read, its deadline and its
 * attempts so far. Completes {@code result} with a Boolean (writes) or a byte[]/null (reads).
 */
final class PendingOp {

    final WriteOp write;       // null for a read
    final ByteString readKey;  // null for a write
    final byte[] key;
    final CompletableFuture<Object> result = new CompletableFuture<>();
    final long deadlineNanos;
    int attempts;

    private PendingOp(WriteOp write, ByteString readKey, byte[] key, long deadlineNanos) {
        this.write = write;
        this.readKey = readKey;
        this.key = key;
        this.deadlineNanos = deadlineNanos;
    }

    static PendingOp write(WriteOp op, long deadlineNanos) {
        return new PendingOp(op, null, op.getKey().toByteArray(), deadlineNanos);
    }

    static PendingOp read(byte[] key, long deadlineNanos) {
        return new PendingOp(null, ByteString.copyFrom(key), key, deadlineNanos);
    }

    boolean isWrite() {
        return write != null;
    }

    /** A CAS applied twice could succeed twice; puts and deletes end in the same state. */
    boolean idempotent() {
        return write == null || write.getType() != WriteOpType.COMPARE_AND_PUT;
    }

    int bytes() {
        return write != null ? write.getSerializedSize() : readKey.size() + 4;
    }
}
