package io.kvraft.benchmark;

import io.kvraft.client.KeyValue;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RegionInfo;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An in-memory KvClient: a ConcurrentHashMap, with counters of what it received, optional latency
 * (completions on a scheduler thread), an injected error every Nth put/get, and stalls on demand.
 */
final class FakeKvClient implements KvClient {

    final Map<ByteBuffer, byte[]> map = new ConcurrentHashMap<>();
    final AtomicLong puts = new AtomicLong();
    final AtomicLong gets = new AtomicLong();
    final AtomicLong batchPuts = new AtomicLong();
    final AtomicLong batchPutKeys = new AtomicLong();
    final AtomicLong injectedErrors = new AtomicLong();
    final AtomicLong putErrors = new AtomicLong();
    final AtomicLong getErrors = new AtomicLong();
    final ConcurrentLinkedQueue<CompletableFuture<?>> stalled = new ConcurrentLinkedQueue<>();

    private final long latencyMicros;
    private final long errorEvery;
    private final ErrorCode errorCode;
    private final ScheduledExecutorService scheduler;
    private final AtomicLong opNumber = new AtomicLong();
    private volatile long stallOpNumber = -1;
    private volatile List<RegionInfo> regions = List.of();
    private volatile boolean closed;

    /** Completes every operation at once, no errors. */
    FakeKvClient() {
        this(0, 0, ErrorCode.OK);
    }

    /**
     * @param latencyMicros 0: complete in the caller's thread; else complete on a scheduler after this delay
     * @param errorEvery    0: never; n: every nth put/get fails with {@code errorCode}
     */
    FakeKvClient(long latencyMicros, long errorEvery, ErrorCode errorCode) {
        this.latencyMicros = latencyMicros;
        this.errorEvery = errorEvery;
        this.errorCode = errorCode;
        this.scheduler = latencyMicros > 0 ? Executors.newScheduledThreadPool(2, r -> {
            Thread t = new Thread(r, "fake-kv");
            t.setDaemon(true);
            return t;
        }) : null;
    }

    /** The put/get with this 0-based number (in arrival order) never completes by itself; see {@link #stalled}. */
    void stallOp(long n) {
        stallOpNumber = n;
    }

    void setRegions(List<byte[]> startKeys) {
        List<RegionInfo> list = new ArrayList<>();
        for (int i = 0; i < startKeys.size(); i++) {
            byte[] end = i + 1 < startKeys.size() ? startKeys.get(i + 1) : new byte[0];
            list.add(new RegionInfo(i + 1, startKeys.get(i), end, 0, List.of(), "127.0.0.1:1", 0, 0, "", 0, false, 0,
                    List.of()));
        }
        regions = List.copyOf(list);
    }

    long ops() {
        return puts.get() + gets.get() + scans.get();
    }

    @Override
    public CompletableFuture<Void> put(byte[] key, byte[] value) {
        puts.incrementAndGet();
        return respond(() -> {
            map.put(ByteBuffer.wrap(key), value);
            return null;
        }, putErrors);
    }

    @Override
    public CompletableFuture<byte[]> get(byte[] key) {
        gets.incrementAndGet();
        return respond(() -> map.get(ByteBuffer.wrap(key)), getErrors);
    }

    private <T> CompletableFuture<T> respond(java.util.function.Supplier<T> action, AtomicLong errorCounter) {
        long n = opNumber.getAndIncrement();
        CompletableFuture<T> f = new CompletableFuture<>();
        if (n == stallOpNumber) {
            stalled.add(f);
            return f;
        }
        boolean fail = errorEvery > 0 && (n + 1) % errorEvery == 0;
        Runnable complete = () -> {
            if (fail) {
                injectedErrors.incrementAndGet();
                errorCounter.incrementAndGet();
                f.completeExceptionally(new KvException(errorCode, "injected"));
            } else {
                f.complete(action.get());
            }
        };
        if (scheduler == null) {
            complete.run();
        } else {
            scheduler.schedule(complete, latencyMicros, TimeUnit.MICROSECONDS);
        }
        return f;
    }

    @Override
    public CompletableFuture<Boolean> delete(byte[] key) {
        return CompletableFuture.completedFuture(map.remove(ByteBuffer.wrap(key)) != null);
    }

    @Override
    public CompletableFuture<List<byte[]>> multiGet(List<byte[]> keys) {
        List<byte[]> out = new ArrayList<>();
        for (byte[] k : keys) {
            out.add(map.get(ByteBuffer.wrap(k)));
        }
        return CompletableFuture.completedFuture(out);
    }

    @Override
    public CompletableFuture<Void> batchPut(List<KeyValue> entries) {
        batchPuts.incrementAndGet();
        batchPutKeys.addAndGet(entries.size());
        for (KeyValue kv : entries) {
            map.put(ByteBuffer.wrap(kv.key()), kv.value());
        }
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Boolean> compareAndPut(byte[] key, byte[] expect, byte[] update) {
        return CompletableFuture.failedFuture(new KvException(ErrorCode.INTERNAL, "not in the fake"));
    }

    final AtomicLong scans = new AtomicLong();
    /** The limit of every scan received. */
    final ConcurrentLinkedQueue<Integer> scanLimits = new ConcurrentLinkedQueue<>();
    /** Whether any scan had an end key or asked for keys only (the benchmark's never do). */
    volatile boolean scanWithEndOrKeysOnly;

    @Override
    public CompletableFuture<Boolean> containsKey(byte[] key) {
        return get(key).thenApply(v -> v != null);
    }

    @Override
    public CompletableFuture<byte[]> getAndPut(byte[] key, byte[] value) {
        return CompletableFuture.completedFuture(map.put(ByteBuffer.wrap(key), value));
    }

    @Override
    public CompletableFuture<Void> append(byte[] key, byte[] value) {
        map.merge(ByteBuffer.wrap(key), value, (old, more) -> {
            byte[] joined = java.util.Arrays.copyOf(old, old.length + more.length);
            System.arraycopy(more, 0, joined, old.length, more.length);
            return joined;
        });
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<byte[]> putIfAbsent(byte[] key, byte[] value) {
        return CompletableFuture.completedFuture(map.putIfAbsent(ByteBuffer.wrap(key), value));
    }

    @Override
    public CompletableFuture<Void> deleteBatch(List<byte[]> keys) {
        keys.forEach(k -> map.remove(ByteBuffer.wrap(k)));
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Boolean> compareAndPutAll(List<io.kvraft.client.CasEntry> entries) {
        return CompletableFuture.failedFuture(new KvException(ErrorCode.INTERNAL, "not in the fake"));
    }

    /** The pairs of [start, end) in unsigned key order (reversed when asked), at most limit. */
    private List<KeyValue> range(byte[] start, byte[] end, int limit, boolean reverse, boolean keysOnly) {
        byte[] s = start == null ? new byte[0] : start;
        byte[] e = end == null ? new byte[0] : end;
        java.util.TreeMap<byte[], byte[]> sorted = new java.util.TreeMap<>(java.util.Arrays::compareUnsigned);
        map.forEach((k, v) -> {
            byte[] key = new byte[k.remaining()];
            k.duplicate().get(key);
            if (java.util.Arrays.compareUnsigned(key, s) >= 0 && (e.length == 0 || java.util.Arrays.compareUnsigned(key, e) < 0)) {
                sorted.put(key, v);
            }
        });
        List<KeyValue> out = new ArrayList<>();
        for (Map.Entry<byte[], byte[]> en : (reverse ? sorted.descendingMap() : sorted).entrySet()) {
            if (out.size() >= limit) {
                break;
            }
            out.add(new KeyValue(en.getKey(), keysOnly ? null : en.getValue()));
        }
        return out;
    }

    @Override
    public CompletableFuture<List<KeyValue>> scan(byte[] startKey, byte[] endKey, int limit, boolean keysOnly) {
        scans.incrementAndGet();
        scanLimits.add(limit);
        if ((endKey != null && endKey.length > 0) || keysOnly) {
            scanWithEndOrKeysOnly = true;
        }
        return respond(() -> range(startKey, endKey, limit, false, keysOnly), getErrors);
    }

    @Override
    public CompletableFuture<List<KeyValue>> reverseScan(byte[] startKey, byte[] endKey, int limit, boolean keysOnly) {
        scans.incrementAndGet();
        return respond(() -> range(startKey, endKey, limit, true, keysOnly), getErrors);
    }

    @Override
    public io.kvraft.client.KvIterator iterator(byte[] startKey, byte[] endKey, int pageSize) {
        throw new UnsupportedOperationException("not in the fake");
    }

    @Override
    public io.kvraft.client.KvIterator reverseIterator(byte[] startKey, byte[] endKey, int pageSize) {
        throw new UnsupportedOperationException("not in the fake");
    }

    /** Sequences by key, and the steps asked for. */
    final Map<ByteBuffer, AtomicLong> sequences = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<Long> sequenceSteps = new ConcurrentLinkedQueue<>();

    @Override
    public CompletableFuture<io.kvraft.client.SequenceRange> getSequence(byte[] seqKey, long step) {
        sequenceSteps.add(step);
        long start = sequences.computeIfAbsent(ByteBuffer.wrap(seqKey.clone()), k -> new AtomicLong()).getAndAdd(step);
        return CompletableFuture.completedFuture(new io.kvraft.client.SequenceRange(start, start + step));
    }

    @Override
    public CompletableFuture<Long> getLatestSequence(byte[] seqKey) {
        AtomicLong s = sequences.get(ByteBuffer.wrap(seqKey));
        return CompletableFuture.completedFuture(s == null ? 0L : s.get());
    }

    @Override
    public CompletableFuture<Boolean> resetSequence(byte[] seqKey) {
        throw new UnsupportedOperationException("not in the fake");
    }

    @Override
    public CompletableFuture<io.kvraft.client.LockHandle> tryLock(byte[] key, long leaseMs, long waitMs) {
        throw new UnsupportedOperationException("not in the fake");
    }

    @Override
    public CompletableFuture<io.kvraft.client.LockHandle> lock(byte[] key, long leaseMs) {
        throw new UnsupportedOperationException("not in the fake");
    }

    @Override
    public CompletableFuture<List<io.kvraft.client.LockInfo>> locks(byte[] prefix) {
        throw new UnsupportedOperationException("not in the fake");
    }

    @Override
    public CompletableFuture<io.kvraft.client.LockInfo> lockInfo(byte[] key) {
        throw new UnsupportedOperationException("not in the fake");
    }

    @Override
    public CompletableFuture<Void> deleteRange(byte[] startKey, byte[] endKey) {
        range(startKey, endKey, Integer.MAX_VALUE, false, true).forEach(kv -> map.remove(ByteBuffer.wrap(kv.key())));
        return CompletableFuture.completedFuture(null);
    }

    /** The modes withReadMode was asked for, in order. The view is this client itself: one map, one set of counters. */
    final List<io.kvraft.client.ReadMode> readModesAsked = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override
    public KvClient withReadMode(io.kvraft.client.ReadMode mode) {
        readModesAsked.add(mode);
        return this;
    }

    @Override
    public io.kvraft.client.ReadMode readMode() {
        return io.kvraft.client.ReadMode.READ_INDEX;
    }

    /** An admin view that lists {@link #setRegions}'s regions; its other operations are not in the fake. */
    @Override
    public KvAdmin admin() {
        return (KvAdmin) java.lang.reflect.Proxy.newProxyInstance(KvAdmin.class.getClassLoader(),
                new Class<?>[]{KvAdmin.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "regions" -> CompletableFuture.completedFuture(regions);
                    case "close" -> null;
                    default -> throw new UnsupportedOperationException("not in the fake: " + method.getName());
                });
    }

    @Override
    public void close() {
        closed = true;
        if (scheduler != null) {
            scheduler.shutdownNow();
        }
    }

    boolean isClosed() {
        return closed;
    }
}
