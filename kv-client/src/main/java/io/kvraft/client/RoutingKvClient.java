package io.kvraft.client;

import com.google.protobuf.ByteString;
import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RoutingKvAdmin;
import io.kvraft.client.batch.CoordAnswer;
import io.kvraft.client.batch.Dispatcher;
import io.kvraft.client.batch.PendingOp;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.client.route.Calls;
import io.kvraft.client.route.RouteTable.Route;
import io.kvraft.client.route.Routes;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The client: checks each operation's arguments, builds its wire ops and hands them to the {@link Dispatcher} (one
 * key) or to {@link RangeOps} (a range); multi-key calls split by key and so may span regions. A read-mode view shares
 * everything but its read mode; {@link #admin} is the admin view over the same routes and connections.
 */
final class RoutingKvClient implements KvClient {

    /** The server's limit too ({@code Sequences.MAX_STEP}). */
    static final long MAX_SEQUENCE_STEP = 1L << 40;
    private static final int MAX_CAS_GROUP = 1000;

    private final Calls calls;
    private final Routes routes;
    private final Dispatcher dispatcher;
    private final ReadMode readMode;
    private final KvProto.ReadMode wireMode;
    private final RangeOps ranges;
    private final ClientLocks locks;
    private final KvAdmin admin;

    RoutingKvClient(ClientConfig config, Calls calls, Routes routes, Dispatcher dispatcher) {
        this.calls = calls;
        this.routes = routes;
        this.dispatcher = dispatcher;
        this.readMode = ReadMode.of(config.readMode());
        this.wireMode = Wire.toWire(readMode);
        this.ranges = new RangeOps(routes, calls);
        this.locks = new ClientLocks(new ClientLocks.Backend() {
            @Override
            public CompletableFuture<CoordAnswer> coordOp(WriteOp op, long deadlineNanos) {
                return dispatcher.coordOp(op, deadlineNanos);
            }

            @Override
            public boolean later(Runnable task, long delayNanos) {
                return calls.later(task, delayNanos);
            }

            @Override
            public long deadline() {
                return calls.deadline();
            }
        }, System::nanoTime);
        this.admin = new RoutingKvAdmin(calls, routes, dispatcher);
    }

    /** A view of {@code root} whose reads default to {@code mode}; it shares everything else. */
    private RoutingKvClient(RoutingKvClient root, ReadMode mode) {
        this.calls = root.calls;
        this.routes = root.routes;
        this.dispatcher = root.dispatcher;
        this.readMode = mode;
        this.wireMode = Wire.toWire(mode);
        this.ranges = root.ranges;
        this.locks = root.locks;
        this.admin = root.admin;
    }

    @Override
    public CompletableFuture<Void> put(byte[] key, byte[] value) {
        return submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.PUT).setKey(bytes(key))
                .setValue(bytes(value)).build(), calls.deadline())).thenApply(r -> null);
    }

    @Override
    public CompletableFuture<byte[]> get(byte[] key) {
        return submit(PendingOp.read(Keys.orEmpty(key), wireMode, calls.deadline())).thenApply(r -> (byte[]) r);
    }

    @Override
    public CompletableFuture<Boolean> containsKey(byte[] key) {
        return get(key).thenApply(v -> v != null);
    }

    @Override
    public CompletableFuture<byte[]> getAndPut(byte[] key, byte[] value) {
        return submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.GET_AND_PUT).setKey(bytes(key))
                .setValue(bytes(value)).build(), calls.deadline())).thenApply(r -> (byte[]) r);
    }

    @Override
    public CompletableFuture<Void> append(byte[] key, byte[] value) {
        return submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.APPEND).setKey(bytes(key))
                .setValue(bytes(value)).build(), calls.deadline())).thenApply(r -> {
                    if (!(Boolean) r) {
                        throw new KvException(ErrorCode.INVALID_ARGUMENT, "appending " + bytes(value).size() + " bytes to "
                                + Keys.printable(key) + " would make its value longer than the server's"
                                + " limits.maxValueBytes; nothing was appended");
                    }
                    return null;
                });
    }

    @Override
    public CompletableFuture<byte[]> putIfAbsent(byte[] key, byte[] value) {
        return submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.PUT_IF_ABSENT).setKey(bytes(key))
                .setValue(bytes(value)).build(), calls.deadline())).thenApply(r -> (byte[]) r);
    }

    @Override
    public CompletableFuture<Boolean> delete(byte[] key) {
        return submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.DELETE).setKey(bytes(key)).build(),
                calls.deadline())).thenApply(r -> (Boolean) r);
    }

    @Override
    public CompletableFuture<List<byte[]>> multiGet(List<byte[]> keys) {
        long deadline = calls.deadline();
        List<CompletableFuture<Object>> parts = new ArrayList<>(keys.size());
        for (byte[] k : keys) {
            parts.add(submit(PendingOp.read(Keys.orEmpty(k), wireMode, deadline)));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(v -> {
            List<byte[]> out = new ArrayList<>(parts.size());
            for (CompletableFuture<Object> p : parts) {
                out.add((byte[]) p.join());
            }
            return out;
        });
    }

    @Override
    public CompletableFuture<Void> batchPut(List<KeyValue> entries) {
        long deadline = calls.deadline();
        List<CompletableFuture<Object>> parts = new ArrayList<>(entries.size());
        for (KeyValue kv : entries) {
            parts.add(submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.PUT).setKey(bytes(kv.key()))
                    .setValue(bytes(kv.value())).build(), deadline)));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new));
    }

    @Override
    public CompletableFuture<Void> deleteBatch(List<byte[]> keys) {
        long deadline = calls.deadline();
        List<CompletableFuture<Object>> parts = new ArrayList<>(keys.size());
        for (byte[] k : keys) {
            parts.add(submit(PendingOp.write(WriteOp.newBuilder().setType(WriteOpType.DELETE).setKey(bytes(k)).build(),
                    deadline)));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new));
    }

    @Override
    public CompletableFuture<Boolean> compareAndPut(byte[] key, byte[] expect, byte[] update) {
        return submit(PendingOp.write(casOp(key, expect, update), calls.deadline())).thenApply(r -> (Boolean) r);
    }

    @Override
    public CompletableFuture<Boolean> compareAndPutAll(List<CasEntry> entries) {
        if (entries.isEmpty()) {
            return CompletableFuture.completedFuture(true);
        }
        if (entries.size() > MAX_CAS_GROUP) {
            return invalid("compareAndPutAll takes at most " + MAX_CAS_GROUP + " entries, got " + entries.size());
        }
        List<WriteOp> ops = new ArrayList<>(entries.size());
        Set<ByteString> seen = new HashSet<>();
        Route first = null;
        List<String> elsewhere = new ArrayList<>();
        for (CasEntry e : entries) {
            if (e.key() == null || e.key().length == 0) {
                return invalid("compareAndPutAll: empty key");
            }
            WriteOp op = casOp(e.key(), e.expect(), e.update());
            if (!seen.add(op.getKey())) {
                return invalid("compareAndPutAll names key " + Keys.printable(e.key()) + " twice");
            }
            Route r = routes.table().lookup(e.key());
            if (first == null) {
                first = r;
            } else if (r == null || r.regionId() != first.regionId()) {
                elsewhere.add(Keys.printable(e.key()));
            }
            ops.add(op);
        }
        if (!elsewhere.isEmpty()) {
            return invalid("compareAndPutAll needs all keys in one region; not in the region of the first key ("
                    + (first == null ? "none" : first.regionId()) + "): " + String.join(", ", elsewhere));
        }
        return submit(PendingOp.group(ops, calls.deadline())).thenApply(r -> (Boolean) r);
    }

    private static WriteOp casOp(byte[] key, byte[] expect, byte[] update) {
        WriteOp.Builder op = WriteOp.newBuilder().setType(WriteOpType.COMPARE_AND_PUT).setKey(bytes(key))
                .setValue(bytes(update));
        if (expect == null) {
            op.setExpectAbsent(true);
        } else {
            op.setExpect(ByteString.copyFrom(expect));
        }
        return op.build();
    }

    @Override
    public CompletableFuture<List<KeyValue>> scan(byte[] startKey, byte[] endKey, int limit, boolean keysOnly) {
        return scan(startKey, endKey, limit, false, keysOnly);
    }

    @Override
    public CompletableFuture<List<KeyValue>> reverseScan(byte[] startKey, byte[] endKey, int limit, boolean keysOnly) {
        return scan(startKey, endKey, limit, true, keysOnly);
    }

    private CompletableFuture<List<KeyValue>> scan(byte[] startKey, byte[] endKey, int limit, boolean reverse,
                                                   boolean keysOnly) {
        byte[] start = Keys.orEmpty(startKey);
        byte[] end = Keys.orEmpty(endKey);
        if (limit < 1) {
            return invalid("scan limit must be at least 1, got " + limit);
        }
        String bad = Keys.checkRange(start, end);
        if (bad != null) {
            return invalid(bad);
        }
        if (Keys.isEmptyRange(start, end)) {
            return CompletableFuture.completedFuture(List.of());
        }
        return ranges.scan(start, end, limit, reverse, keysOnly, wireMode, calls.deadline());
    }

    @Override
    public KvIterator iterator(byte[] startKey, byte[] endKey, int pageSize) {
        return iterator(startKey, endKey, pageSize, false);
    }

    @Override
    public KvIterator reverseIterator(byte[] startKey, byte[] endKey, int pageSize) {
        return iterator(startKey, endKey, pageSize, true);
    }

    private KvIterator iterator(byte[] startKey, byte[] endKey, int pageSize, boolean reverse) {
        byte[] start = Keys.orEmpty(startKey);
        byte[] end = Keys.orEmpty(endKey);
        if (pageSize < 1) {
            throw new KvException(ErrorCode.INVALID_ARGUMENT, "iterator page size must be at least 1, got " + pageSize);
        }
        String bad = Keys.checkRange(start, end);
        if (bad != null) {
            throw new KvException(ErrorCode.INVALID_ARGUMENT, bad);
        }
        KvProto.ReadMode mode = wireMode;
        return new KvIterator((s, e, limit, rev, deadline) -> ranges.page(s, e, limit, rev, false, mode, deadline),
                start, end, pageSize, reverse, calls.operationTimeoutMs());
    }

    @Override
    public CompletableFuture<Void> deleteRange(byte[] startKey, byte[] endKey) {
        byte[] start = Keys.orEmpty(startKey);
        byte[] end = Keys.orEmpty(endKey);
        String bad = Keys.checkRange(start, end);
        if (bad != null) {
            return invalid(bad);
        }
        if (Keys.isEmptyRange(start, end)) {
            return CompletableFuture.completedFuture(null);
        }
        return ranges.deleteRange(start, end, calls.deadline());
    }

    @Override
    public KvClient withReadMode(ReadMode mode) {
        if (mode == null) {
            throw new KvException(ErrorCode.INVALID_ARGUMENT, "read mode must be one of READ_INDEX, LEADER_LEASE, FOLLOWER, STALE");
        }
        return new RoutingKvClient(this, mode);
    }

    @Override
    public ReadMode readMode() {
        return readMode;
    }

    @Override
    public CompletableFuture<SequenceRange> getSequence(byte[] seqKey, long step) {
        if (step < 1) {
            return invalid("sequence step must be at least 1, got " + step);
        }
        if (step > MAX_SEQUENCE_STEP) {
            return invalid("sequence step " + step + " exceeds " + MAX_SEQUENCE_STEP);
        }
        return sequenceOp(WriteOpType.GET_SEQUENCE, seqKey, step).thenApply(a -> {
            if (!a.succeeded()) {
                throw new KvException(ErrorCode.INVALID_ARGUMENT, "sequence " + Keys.printable(seqKey) + " is at "
                        + a.result().getStart() + ": " + step + " more would pass " + Long.MAX_VALUE);
            }
            return new SequenceRange(a.result().getStart(), a.result().getEnd());
        });
    }

    @Override
    public CompletableFuture<Long> getLatestSequence(byte[] seqKey) {
        return sequenceOp(WriteOpType.GET_SEQUENCE, seqKey, 0).thenApply(a -> a.result().getStart());
    }

    @Override
    public CompletableFuture<Boolean> resetSequence(byte[] seqKey) {
        return sequenceOp(WriteOpType.RESET_SEQUENCE, seqKey, 0).thenApply(CoordAnswer::succeeded);
    }

    private CompletableFuture<CoordAnswer> sequenceOp(WriteOpType type, byte[] seqKey, long step) {
        return dispatcher.coordOp(WriteOp.newBuilder().setType(type).setKey(bytes(seqKey)).setStep(step).build(),
                calls.deadline());
    }

    @Override
    public CompletableFuture<LockHandle> tryLock(byte[] key, long leaseMs, long waitMs) {
        return locks.tryLock(key, leaseMs, waitMs);
    }

    @Override
    public CompletableFuture<LockHandle> lock(byte[] key, long leaseMs) {
        return locks.tryLock(key, leaseMs, Long.MAX_VALUE);
    }

    @Override
    public CompletableFuture<List<LockInfo>> locks(byte[] prefix) {
        byte[] start = Keys.orEmpty(prefix);
        return ranges.locks(start, Keys.prefixEnd(start), calls.deadline()).thenApply(Wire::lockInfos);
    }

    @Override
    public CompletableFuture<LockInfo> lockInfo(byte[] key) {
        if (key == null || key.length == 0) {
            return invalid("empty lock key");
        }
        return ranges.locks(key, Keys.successor(key), calls.deadline())
                .thenApply(l -> l.isEmpty() ? null : Wire.lockInfo(l.get(0)));
    }

    @Override
    public KvAdmin admin() {
        return admin;
    }

    /** Closes the client; a read-mode view or the admin view closes the client it was made from. */
    @Override
    public void close() {
        calls.close();
    }

    private CompletableFuture<Object> submit(PendingOp op) {
        return dispatcher.submit(op);
    }

    private static <T> CompletableFuture<T> invalid(String why) {
        return CompletableFuture.failedFuture(new KvException(ErrorCode.INVALID_ARGUMENT, why));
    }

    private static ByteString bytes(byte[] b) {
        return b == null ? ByteString.EMPTY : ByteString.copyFrom(b);
    }
}
