package io.kvraft.benchmark;

import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.LockHandle;
import io.kvraft.client.SequenceAllocator;
import io.kvraft.common.ErrorCode;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.util.Locale;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Drives the load. {@code threads} load threads each own {@code inflight} slots.
 *
 * <p>Closed loop ({@code rate == 0}): a thread sends whenever it has a free slot, so every
 * completion lets the next operation go; {@code threads x inflight} operations are outstanding.
 *
 * <p>Open loop ({@code rate > 0}): operation {@code g} (numbered over all threads) is due at
 * {@code t0 + g / rate}; thread {@code j} sends operations {@code j, j + threads, ...} when they are
 * due and a slot is free, and measures latency from the due time, not the send time. An operation
 * held back by a stalled server or a full pipeline therefore carries the wait it suffered, which
 * corrects coordinated omission as wrk2 does. Operations due before the end but never sent are
 * reported as unsent.
 *
 * <p>The hot path has no locks and no logging: completions record into {@link Results} and bump
 * the owner's free-slot counter, waking it only when it sleeps. The calling thread ticks once a
 * second: progress line, interval histograms.
 *
 * <p>The coordination workloads ({@link WorkloadPreset.Kind}) use the same slots: a sequence op is one
 * getSequence call; an allocator op one {@link SequenceAllocator#next()}, called on the load thread (it
 * returns at memory speed and blocks only when a block runs out, so a thread has one in flight whatever
 * {@code inflight} says); a lock op takes the slot's own lock key with tryLock (no wait) and, once it has
 * it, unlocks it, recording the acquire and the release as two operations, and frees the slot after the
 * release.
 */
public final class LoadRunner {

    private static final long SECOND = 1_000_000_000L;

    private final WorkloadOptions options;
    private final KvClient client;
    private final KeySpace keySpace;
    private final NanoClock clock;
    private final PrintStream progress;
    private final String progressPrefix;
    private AckedRecorder recorder;
    private AdaptiveWarmup warmup;
    private CompilerActivity compilers;
    private String warmupEnd;
    /** Called by the ticker when the measured window starts and when it ends (server CPU for that window). */
    private Runnable atMeasureStart = () -> { };
    private Runnable atMeasureEnd = () -> { };
    /** nanoTime at which the load threads stop early (an adaptive warm-up that has ended); MAX_VALUE until then. */
    private volatile long stopAt = Long.MAX_VALUE;
    /** The allocator workload's allocators, one per sequence key, shared by the load threads. */
    private final ConcurrentHashMap<ByteBuffer, SequenceAllocator> allocators = new ConcurrentHashMap<>();

    /**
     * @param progress where the once-a-second progress line goes; null for none
     */
    public LoadRunner(WorkloadOptions options, KvClient client, KeySpace keySpace, NanoClock clock,
                      PrintStream progress, String progressPrefix) {
        this.options = options;
        // the run's read mode, on a view of the shared client: a sweep's steps may each read another way
        this.client = options.readMode() == null ? client : client.withReadMode(options.readModeValue());
        this.keySpace = keySpace;
        this.clock = clock;
        this.progress = progress;
        this.progressPrefix = progressPrefix == null ? "" : progressPrefix;
    }

    /** Puts write fresh keys and their acknowledgements are recorded (--record-acked). */
    public LoadRunner recordingAcked(AckedRecorder recorder) {
        this.recorder = recorder;
        return this;
    }

    /**
     * This run is an adaptive warm-up: it stops as soon as {@code w} finds the throughput stable (or at
     * the run's end); {@link #warmupEnd()} then says why.
     */
    LoadRunner warmingUp(AdaptiveWarmup w) {
        return warmingUp(w, null);
    }

    /** As {@link #warmingUp(AdaptiveWarmup)}, telling it the JIT compilers' CPU each second ({@code null}: not). */
    LoadRunner warmingUp(AdaptiveWarmup w, CompilerActivity compilers) {
        this.warmup = w;
        this.compilers = compilers;
        return this;
    }

    /**
     * Runs {@code atStart} once the warm-up is over and {@code atEnd} once the measured window is (before the drain),
     * both on the thread that called {@link #run()}, within a millisecond or so of those moments.
     */
    LoadRunner onMeasuredWindow(Runnable atStart, Runnable atEnd) {
        this.atMeasureStart = atStart;
        this.atMeasureEnd = atEnd;
        return this;
    }

    /** Why an adaptive warm-up ended; null before it did or for other runs. */
    String warmupEnd() {
        return warmupEnd;
    }

    /** Runs warm-up, measurement and drain; blocks until done. */
    public RunResult run() {
        long cpu0 = processCpuNanos();
        long wall0 = System.currentTimeMillis();
        long t0 = clock.nanoTime();
        long measureStart = t0 + toNanos(options.warmupSeconds());
        long end = measureStart + toNanos(options.durationSeconds());
        long drainDeadline = end + toNanos(options.drainTimeoutSeconds());
        Results results = new Results(t0, measureStart, end, wall0, options.clientId());

        Thread ticker = Thread.currentThread();
        AtomicInteger running = new AtomicInteger(options.threads());
        SplittableRandom seeds = new SplittableRandom(options.seed());
        double interval = options.openLoop() ? SECOND / options.rate() : 0;
        Worker[] workers = new Worker[options.threads()];
        for (int j = 0; j < workers.length; j++) {
            Workload w = new Workload(keySpace, options.readRatio(), options.scanRatio(), options.appendRatio(), options.valueSize(),
                    seeds.split());
            workers[j] = new Worker(j, w, results, t0, end, drainDeadline, interval, running, ticker);
        }
        for (Worker w : workers) {
            w.thread.start();
        }

        long nextTick = t0 + SECOND;
        long lastTick = t0;
        int windowMarks = 0; // 0: before the measured window, 1: in it, 2: after it
        while (running.get() > 0) {
            long now = clock.nanoTime();
            if (windowMarks == 0 && now >= measureStart) {
                windowMarks = 1;
                atMeasureStart.run();
            }
            if (windowMarks == 1 && now >= end) {
                windowMarks = 2;
                atMeasureEnd.run();
            }
            if (now >= nextTick) {
                Results.Progress p = results.tick(now);
                printProgress(p);
                if (warmup != null && warmupEnd == null) {
                    CompilerActivity.Sample jit = compilers == null ? null : compilers.sample();
                    warmup.observe(p.elapsedSeconds(), p.opsPerSecond(), jit).ifPresent(why -> {
                        warmupEnd = why;
                        stopAt = now;
                    });
                }
                lastTick = now;
                nextTick = t0 + ((now - t0) / SECOND + 1) * SECOND;
            } else {
                long mark = windowMarks == 0 ? measureStart : windowMarks == 1 ? end : Long.MAX_VALUE;
                clock.parkNanos(Math.min(nextTick, mark) - now);
            }
        }
        if (windowMarks < 2) { // the load stopped early: an adaptive warm-up that ended, or every thread gave up
            if (windowMarks == 0) {
                atMeasureStart.run();
            }
            atMeasureEnd.run();
        }
        long unfinished = 0;
        long unsent = 0;
        for (Worker w : workers) {
            joinQuietly(w.thread);
            unfinished += w.unfinished;
            unsent += w.unsent;
        }
        results.close();
        long now = clock.nanoTime();
        Results.Progress last = results.tick(now);
        if (now - lastTick >= SECOND / 5) {
            printProgress(last);
        }
        long cpu1 = processCpuNanos();
        return results.toResult(options, unfinished, unsent, cpu0 < 0 || cpu1 < 0 ? -1 : cpu1 - cpu0);
    }

    private void printProgress(Results.Progress p) {
        if (progress == null) {
            return;
        }
        progress.println(String.format(Locale.ROOT, "%s%6.1fs  %,10.0f ops/s  errors %,d  p99 so far %.3f ms%s",
                progressPrefix, p.elapsedSeconds(), p.opsPerSecond(), p.errors(), p.p99Ms(),
                p.warmup() ? "  (warm-up)" : ""));
    }

    static long toNanos(double seconds) {
        return Math.round(seconds * SECOND);
    }

    private static void joinQuietly(Thread t) {
        boolean interrupted = false;
        while (true) {
            try {
                t.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    static long processCpuNanos() {
        try {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                return os.getProcessCpuTime();
            }
        } catch (RuntimeException | LinkageError ignored) {
            // unknown
        }
        return -1;
    }

    /** What {@link Results#record} counts besides latency: a get's hit (1) or miss (0), a scan's keys. */
    private static long items(OpType op, Object answer) {
        return switch (op) {
            case GET -> answer != null ? 1 : 0;
            case SCAN -> answer instanceof java.util.List<?> l ? l.size() : 0;
            default -> 0;
        };
    }

    /**
     * The lock workload's key of slot {@code slot} (numbered over all threads): distinct per slot, spread over the
     * regions by {@link KeyGenerator}, and salted by the seed and client id, so that two clients running at once
     * do not contend.
     */
    static byte[] lockKey(WorkloadOptions options, long slot) {
        long salt = KeyGenerator.mix64(options.seed() ^ KeyGenerator.mix64(options.clientId().hashCode())) & ~0xFFFFFFFFL;
        return KeyGenerator.key(salt + slot, Math.max(16, options.keySize()));
    }

    /** One load thread and its slots. */
    private final class Worker implements Runnable {
        private final int index;
        private final Workload workload;
        private final Results results;
        private final long t0;
        private final long end;
        private final long drainDeadline;
        private final double intervalNanos;
        private final AtomicInteger running;
        private final Thread ticker;
        private final Thread thread;
        private final AtomicInteger free = new AtomicInteger(options.inflight());
        /** The lock workload: the lock keys of the free slots (a slot's key is its own while it is taken). */
        private final ConcurrentLinkedQueue<byte[]> lockKeys = new ConcurrentLinkedQueue<>();
        private volatile boolean waiting;
        private long unfinished;
        private long unsent;

        Worker(int index, Workload workload, Results results, long t0, long end, long drainDeadline,
               double intervalNanos, AtomicInteger running, Thread ticker) {
            this.index = index;
            this.workload = workload;
            this.results = results;
            this.t0 = t0;
            this.end = end;
            this.drainDeadline = drainDeadline;
            this.intervalNanos = intervalNanos;
            this.running = running;
            this.ticker = ticker;
            this.thread = new Thread(this, "kv-benchmark-load-" + index);
            this.thread.setDaemon(true);
            if (options.kind() == WorkloadPreset.Kind.LOCK) {
                for (int slot = 0; slot < options.inflight(); slot++) {
                    lockKeys.add(lockKey(options, (long) index * options.inflight() + slot));
                }
            }
        }

        @Override
        public void run() {
            try {
                if (intervalNanos > 0) {
                    runOpenLoop();
                } else {
                    runClosedLoop();
                }
                drain();
            } finally {
                if (running.decrementAndGet() == 0) {
                    LockSupport.unpark(ticker);
                }
            }
        }

        private void runClosedLoop() {
            while (true) {
                long now = clock.nanoTime();
                if (now >= end || now >= stopAt) {
                    return;
                }
                if (free.get() == 0) {
                    awaitSlot(now, end);
                    continue;
                }
                free.decrementAndGet(); // the only taker, so this never goes below zero
                issue(now);
            }
        }

        private void runOpenLoop() {
            long g = index;
            int step = options.threads();
            while (true) {
                long due = dueTime(g);
                if (due >= end) {
                    return;
                }
                long now = clock.nanoTime();
                if (now >= stopAt) {
                    return; // an adaptive warm-up that has ended: nothing is measured, nothing unsent
                }
                if (now >= end) {
                    for (long k = g; dueTime(k) < end; k += step) {
                        unsent++;
                    }
                    return;
                }
                if (due > now) {
                    clock.parkNanos(due - now);
                    continue;
                }
                if (free.get() == 0) {
                    awaitSlot(now, end);
                    continue;
                }
                free.decrementAndGet();
                g += step;
                issue(due);
            }
        }

        private long dueTime(long g) {
            return t0 + (long) (g * intervalNanos);
        }

        private void awaitSlot(long now, long deadline) {
            waiting = true;
            if (free.get() == 0) {
                clock.parkNanos(deadline - now);
            }
            waiting = false;
        }

        private void drain() {
            int inflight = options.inflight();
            while (free.get() < inflight) {
                long now = clock.nanoTime();
                if (now >= drainDeadline) {
                    break;
                }
                waiting = true;
                if (free.get() < inflight) {
                    clock.parkNanos(drainDeadline - now);
                }
                waiting = false;
            }
            unfinished = inflight - free.get();
        }

        private void issue(long start) {
            switch (options.kind()) {
                case SEQUENCE -> issueSequence(start);
                case ALLOCATOR -> issueAllocation(start);
                case LOCK -> issueLock(start);
                default -> issueMix(start);
            }
        }

        private void issueSequence(long start) {
            CompletableFuture<?> f;
            try {
                f = client.getSequence(workload.nextKey(), options.sequenceStep());
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            f.whenComplete((r, error) -> complete(OpType.SEQUENCE, start, error, 0));
        }

        /** On this thread: next() returns at once while the block lasts. */
        private void issueAllocation(long start) {
            byte[] key = workload.nextKey();
            Throwable error = null;
            try {
                allocators.computeIfAbsent(ByteBuffer.wrap(key),
                        k -> new SequenceAllocator(client, key, options.sequenceStep())).next();
            } catch (RuntimeException e) {
                error = e;
            }
            complete(OpType.ALLOC, start, error, 0);
        }

        /** The slot's lock: tryLock without waiting (nobody else takes it), then unlock; the slot is free after. */
        private void issueLock(long start) {
            byte[] key = lockKeys.poll(); // never null: a slot is taken only when one is free, and each has a key
            CompletableFuture<LockHandle> f;
            try {
                f = client.tryLock(key, options.lockLeaseMs(), 0);
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            f.whenComplete((handle, error) -> {
                long acquired = clock.nanoTime();
                if (error == null && handle == null) {
                    error = new KvException(ErrorCode.LOCK_NOT_HELD, "lock 0x" + java.util.HexFormat.of().formatHex(key)
                            + " is held by another client: the lock workload's keys must be this run's own");
                }
                if (error != null) {
                    results.record(OpType.ACQUIRE, start, acquired, error, 0);
                    lockKeys.add(key);
                    complete(null, start, null, 0);
                    return;
                }
                results.record(OpType.ACQUIRE, start, acquired, null, 0);
                CompletableFuture<Void> release;
                try {
                    release = handle.unlock();
                } catch (RuntimeException e) {
                    release = CompletableFuture.failedFuture(e);
                }
                release.whenComplete((v, releaseError) -> {
                    lockKeys.add(key);
                    complete(OpType.RELEASE, acquired, releaseError, 0);
                });
            });
        }

        private void issueMix(long start) {
            OpType op = workload.nextOp();
            AckedRecorder rec = recorder;
            byte[] key = op != OpType.PUT || rec == null ? workload.nextKey() : rec.uniqueKey();
            byte[] value = op == OpType.PUT || op == OpType.APPEND ? workload.nextValue() : null;
            CompletableFuture<?> f;
            try {
                f = switch (op) {
                    case PUT -> client.put(key, value);
                    case GET -> client.get(key);
                    case SCAN -> client.scan(key, null, options.scanLength(), false);
                    case APPEND -> client.append(key, value);
                    default -> throw new IllegalStateException("not a mix operation: " + op);
                };
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            f.whenComplete((r, error) -> {
                if (rec != null && op == OpType.PUT && error == null) {
                    rec.record(key, value);
                }
                complete(op, start, error, items(op, r));
            });
        }

        /** Records the op (none when null) and frees its slot. */
        private void complete(OpType op, long start, Throwable error, long items) {
            if (op != null) {
                results.record(op, start, clock.nanoTime(), error, items);
            }
            free.incrementAndGet();
            if (waiting) {
                LockSupport.unpark(thread);
            }
        }
    }
}
