package io.kvraft.benchmark.nemesis;

import io.kvraft.client.KeyValue;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.route.RetryPolicy;
import org.HdrHistogram.Recorder;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * Client threads doing get, put, compare-and-put, scan and range delete on a fixed set of keys, one
 * operation at a time per thread, with unique put values, recording every operation for the checker
 * (a scan or range delete as one read or delete per register key it covered). A share of the puts go to
 * fresh keys instead; those acknowledged are read back at the end (lost-write check). Where the keys and
 * ranges lie: {@link KeySpace}.
 */
final class RegisterWorkload {

    /** How long a caller waits for one operation beyond the client's own deadline, before calling it unknown. */
    private static final long HARD_CAP_SECONDS = 30;

    private final KvClient client;
    private final KeySpace space;
    private final List<byte[]> keys;
    private final List<String> labels;
    private final List<byte[]> freshPrefixes;
    private final int threads;
    private final double ratePerThread;
    private final long seed;
    private final long originNs;

    private final AtomicLong ids = new AtomicLong();
    private final AtomicLong values = new AtomicLong();
    private final AtomicLong freshIds = new AtomicLong();
    private final AtomicLongArray lastSeen;
    final Queue<Op> history = new ConcurrentLinkedQueue<>();
    final Queue<long[]> freshAcked = new ConcurrentLinkedQueue<>(); // {prefix index, fresh id, value}
    final AtomicLong ok = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    final AtomicLong unknown = new AtomicLong();
    final AtomicLong lastErrorNs = new AtomicLong();
    final AtomicLong scansOk = new AtomicLong();
    final AtomicLong scansFailed = new AtomicLong();
    /** Scans whose answer broke the contract itself (a key outside the range, out of order, past the limit). */
    final AtomicLong scansMalformed = new AtomicLong();
    final AtomicLong rangeDeletesOk = new AtomicLong();
    /** Failed with an error saying the last part tried was not applied; an earlier region's part may have been. */
    final AtomicLong rangeDeletesFailed = new AtomicLong();
    final AtomicLong rangeDeletesUnknown = new AtomicLong();
    /**
     * Operations that failed with KEY_OUT_OF_RANGE, STALE_EPOCH or REGION_NOT_FOUND: the client refreshes its
     * routes and retries these itself, so they surface only when its deadline ran out first. They prove the
     * request was not applied, so a write or CAS failing so is left out of the history like any failed one (a
     * range delete failing so stays indeterminate: an earlier region's part may be done).
     */
    final AtomicLong routeErrors = new AtomicLong();
    /** The first few of those: when (seconds from the start), the operation, and the error. */
    final Queue<String> routeErrorSamples = new ConcurrentLinkedQueue<>();
    static final int ROUTE_ERROR_SAMPLES = 5;
    final Recorder latency = new Recorder(3);
    private final List<Thread> workers = new ArrayList<>();
    private volatile boolean running;

    RegisterWorkload(KvClient client, List<byte[]> keys, List<byte[]> freshPrefixes, int threads, double rate,
                     long seed, long originNs) {
        this.client = client;
        this.keys = keys.stream().sorted(Arrays::compareUnsigned).toList();
        this.space = new KeySpace(this.keys, freshPrefixes);
        this.freshPrefixes = freshPrefixes;
        this.labels = this.keys.stream().map(RegisterWorkload::hex).toList();
        this.threads = threads;
        this.ratePerThread = rate / threads;
        this.seed = seed;
        this.originNs = originNs;
        this.lastSeen = new AtomicLongArray(keys.size());
    }

    void start() {
        running = true;
        for (int t = 0; t < threads; t++) {
            Random rnd = new Random(seed * 1_000_003L + t);
            Thread th = new Thread(() -> loop(rnd), "nemesis-client-" + t);
            th.setDaemon(true);
            workers.add(th);
            th.start();
        }
    }

    void stop() throws InterruptedException {
        running = false;
        for (Thread t : workers) {
            t.join(TimeUnit.SECONDS.toMillis(HARD_CAP_SECONDS + 5));
        }
    }

    private void loop(Random rnd) {
        long periodNs = (long) (1e9 / ratePerThread);
        long next = System.nanoTime();
        while (running) {
            next += periodNs;
            int roll = rnd.nextInt(100);
            if (roll < 5) {
                freshPut(rnd);
            } else if (roll < 78) {
                int k = rnd.nextInt(keys.size());
                if (roll < 40) {
                    read(k);
                } else if (roll < 60) {
                    write(k);
                } else {
                    cas(k);
                }
            } else if (roll < 93) {
                scan(space.scan(rnd));
            } else {
                deleteRange(space.deleteRange(rnd));
            }
            long wait = next - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(wait); // pacing to the configured rate
            } else if (wait < -1_000_000_000L) {
                next = System.nanoTime();   // fell behind during a fault: do not burst to catch up
            }
        }
    }

    /** One read of every key, retried until it succeeds or {@code deadlineNs}; recorded like any read. */
    int finalReads(long deadlineNs) {
        int unread = 0;
        for (int k = 0; k < keys.size(); k++) {
            boolean done = false;
            while (!done && System.nanoTime() < deadlineNs) {
                done = read(k);
            }
            if (!done) {
                unread++;
            }
        }
        return unread;
    }

    private boolean read(int k) {
        long inv = System.nanoTime();
        Outcome<byte[]> r = await(client.get(keys.get(k)));
        long done = System.nanoTime();
        if (r.error != null) {
            failed.incrementAndGet();
            errorSeen(r.error, inv);
            return false;
        }
        long v = decode(r.value);
        history.add(Op.read(ids.getAndIncrement(), labels.get(k), v, inv, done));
        lastSeen.set(k, v);
        succeeded(inv, done);
        return true;
    }

    private void write(int k) {
        long v = values.incrementAndGet();
        long id = ids.getAndIncrement();
        long inv = System.nanoTime();
        Outcome<Void> r = await(client.put(keys.get(k), encode(v)));
        long done = System.nanoTime();
        if (r.error == null) {
            history.add(Op.write(id, labels.get(k), v, inv, done));
            lastSeen.set(k, v);
            succeeded(inv, done);
        } else if (r.unknown()) {
            history.add(Op.unknown(id, Op.Kind.WRITE, labels.get(k), 0, v, inv));
            unknown.incrementAndGet();
            errorSeen(r.error, inv);
        } else {
            failed.incrementAndGet();
            errorSeen(r.error, inv);
        }
    }

    private void cas(int k) {
        long expect = lastSeen.get(k);
        long v = values.incrementAndGet();
        long id = ids.getAndIncrement();
        long inv = System.nanoTime();
        Outcome<Boolean> r = await(client.compareAndPut(keys.get(k), expect == 0 ? null : encode(expect), encode(v)));
        long done = System.nanoTime();
        if (r.error == null) {
            history.add(Op.cas(id, labels.get(k), expect, v, r.value, inv, done));
            if (r.value) {
                lastSeen.set(k, v);
            }
            succeeded(inv, done);
        } else if (r.unknown()) {
            history.add(Op.unknown(id, Op.Kind.CAS, labels.get(k), expect, v, inv));
            unknown.incrementAndGet();
            errorSeen(r.error, inv);
        } else {
            failed.incrementAndGet();
            errorSeen(r.error, inv);
        }
    }

    /** Per register key the scan covered, a read of what it found there (absent when it passed over the key). */
    private void scan(KeySpace.Range range) {
        long scanId = ids.getAndIncrement();
        long inv = System.nanoTime();
        Outcome<List<KeyValue>> r = await(range.reverse()
                ? client.reverseScan(range.start(), range.end(), range.limit(), false)
                : client.scan(range.start(), range.end(), range.limit(), false));
        long done = System.nanoTime();
        if (r.error != null) {
            scansFailed.incrementAndGet();
            failed.incrementAndGet();
            errorSeen(r.error, inv);
            return;
        }
        long[] seen = space.readBy(range, r.value);
        if (seen == null) {
            scansMalformed.incrementAndGet();
            return;
        }
        for (int i = 0; i < seen.length; i++) {
            if (seen[i] != KeySpace.NOT_COVERED) {
                int k = range.first() + i;
                history.add(Op.read(ids.getAndIncrement(), labels.get(k), seen[i], inv, done).partOf(scanId));
                lastSeen.set(k, seen[i]);
            }
        }
        scansOk.incrementAndGet();
        succeeded(inv, done);
    }

    /**
     * Per register key in the range, a delete; if the call failed in any way, an indeterminate one, since the
     * regions before the one that failed may have done their part.
     */
    private void deleteRange(KeySpace.Range range) {
        long deleteId = ids.getAndIncrement();
        long inv = System.nanoTime();
        Outcome<Void> r = await(client.deleteRange(range.start(), range.end()));
        long done = System.nanoTime();
        for (int k = range.first(); k <= range.last(); k++) {
            long id = ids.getAndIncrement();
            if (r.error == null) {
                history.add(Op.delete(id, labels.get(k), inv, done).partOf(deleteId));
                lastSeen.set(k, 0);
            } else {
                history.add(Op.unknown(id, Op.Kind.DELETE, labels.get(k), 0, 0, inv).partOf(deleteId));
            }
        }
        if (r.error == null) {
            rangeDeletesOk.incrementAndGet();
            succeeded(inv, done);
        } else {
            (r.unknown() ? rangeDeletesUnknown : rangeDeletesFailed).incrementAndGet();
            unknown.incrementAndGet();
            errorSeen(r.error, inv);
        }
    }

    private void freshPut(Random rnd) {
        int p = rnd.nextInt(freshPrefixes.size());
        long fid = freshIds.incrementAndGet();
        long v = values.incrementAndGet();
        long inv = System.nanoTime();
        Outcome<Void> r = await(client.put(freshKey(p, fid), encode(v)));
        long done = System.nanoTime();
        if (r.error == null) {
            freshAcked.add(new long[]{p, fid, v});
            succeeded(inv, done);
        } else {
            (r.unknown() ? unknown : failed).incrementAndGet();
            errorSeen(r.error, inv);
        }
    }

    byte[] freshKey(int prefix, long fid) {
        byte[] pre = freshPrefixes.get(prefix);
        return ByteBuffer.allocate(pre.length + 8).put(pre).putLong(fid).array();
    }

    private void errorSeen(KvException e, long inv) {
        lastErrorNs.accumulateAndGet(inv, Math::max);
        if (isRouteError(e.code()) && routeErrors.incrementAndGet() <= ROUTE_ERROR_SAMPLES) {
            String op = StackWalker.getInstance().walk(s -> s.skip(1).findFirst().map(StackWalker.StackFrame::getMethodName)
                    .orElse("?"));
            routeErrorSamples.add(String.format(java.util.Locale.ROOT, "%s invoked at %.1f s: %s", op,
                    (inv - originNs) / 1e9, e.getMessage()));
        }
    }

    /**
     * Whether a write that failed with {@code e} may still have been applied: after a timeout or a lost
     * connection, yes, unless the request never left the client; after any answer from a server (route errors
     * included), no.
     */
    static boolean mayHaveApplied(KvException e) {
        return RetryPolicy.outcomeUnknown(e.code()) && !e.unsent();
    }

    /** An answer saying the client's route was out of date (a region split or moved): the request was not applied. */
    static boolean isRouteError(io.kvraft.common.ErrorCode code) {
        return switch (code) {
            case KEY_OUT_OF_RANGE, STALE_EPOCH, REGION_NOT_FOUND -> true;
            default -> false;
        };
    }

    private void succeeded(long inv, long done) {
        ok.incrementAndGet();
        latency.recordValue(Math.max(1, (done - inv) / 1000));
    }

    static byte[] encode(long v) {
        return ByteBuffer.allocate(8).putLong(v).array();
    }

    /** The value's number; 0 for absent, -1 for bytes this workload never writes (a checker failure). */
    static long decode(byte[] b) {
        if (b == null) {
            return 0;
        }
        return b.length == 8 ? ByteBuffer.wrap(b).getLong() : -1;
    }

    static String hex(byte[] b) {
        return java.util.HexFormat.of().formatHex(b);
    }

    private record Outcome<T>(T value, KvException error) {
        /** A write that failed so may still have been applied. */
        boolean unknown() {
            return error != null && mayHaveApplied(error);
        }
    }

    private static <T> Outcome<T> await(CompletableFuture<T> f) {
        try {
            return new Outcome<>(f.get(HARD_CAP_SECONDS, TimeUnit.SECONDS), null);
        } catch (ExecutionException e) {
            return new Outcome<>(null, KvException.unwrap(e.getCause()));
        } catch (TimeoutException e) {
            return new Outcome<>(null, new KvException(io.kvraft.common.ErrorCode.TIMEOUT,
                    "no completion within " + HARD_CAP_SECONDS + " s"));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Outcome<>(null, new KvException(io.kvraft.common.ErrorCode.TIMEOUT, "interrupted"));
        }
    }

    long originNs() {
        return originNs;
    }
}
