package io.kvraft.client;

import com.google.protobuf.ByteString;
import io.kvraft.client.proto.KvProto.WriteOp;

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

    /**
     * Only reads may be sent again after an answer was lost. A write that was applied but whose answer was lost,
     * sent again after another client's write to the key, would apply a second time and undo that write.
     */
    boolean idempotent() {
        return write == null;
    }

    int bytes() {
        return write != null ? write.getSerializedSize() : readKey.size() + 4;
    }
}
