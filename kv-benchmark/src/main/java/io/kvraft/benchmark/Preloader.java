package io.kvraft.benchmark;

import io.kvraft.client.KeyValue;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicReference;

/** Writes every key of the key space once with batchPut, so that gets hit; prints progress. */
public final class Preloader {

    /** Batches in flight at once. */
    static final int CONCURRENCY = 8;
    static final int MAX_BATCH = 1000;
    static final int BATCH_BYTES = 256 * 1024;

    private Preloader() {
    }

    /** Thrown when a batch fails; the message is one line. */
    public static final class PreloadException extends RuntimeException {
        PreloadException(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Preloads all keys with random values of {@code valueSize} bytes.
     *
     * @param progress where progress lines go (at most one a second, and a last one); null for none
     * @return the number of keys written
     */
    public static long preload(KvClient client, KeySpace keys, int valueSize, long seed, PrintStream progress) {
        long n = keys.size();
        int keySize = n == 0 ? 0 : keys.keyAt(0).length;
        int batch = (int) Math.max(1, Math.min(MAX_BATCH, BATCH_BYTES / (keySize + valueSize + 16L)));
        SplittableRandom random = new SplittableRandom(seed ^ 0x5DEECE66DL);
        Semaphore slots = new Semaphore(CONCURRENCY);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long started = System.nanoTime();
        long lastPrint = started;
        long sent = 0;
        try {
            while (sent < n && failure.get() == null) {
                int size = (int) Math.min(batch, n - sent);
                List<KeyValue> entries = new ArrayList<>(size);
                for (int i = 0; i < size; i++) {
                    entries.add(new KeyValue(keys.keyAt(sent + i), Workload.randomBytes(random, valueSize)));
                }
                slots.acquire();
                try {
                    client.batchPut(entries).whenComplete((r, t) -> {
                        if (t != null) {
                            failure.compareAndSet(null, t);
                        }
                        slots.release();
                    });
                } catch (RuntimeException e) {
                    slots.release();
                    failure.compareAndSet(null, e);
                }
                sent += size;
                long now = System.nanoTime();
                if (progress != null && now - lastPrint >= 1_000_000_000L) {
                    lastPrint = now;
                    progress.printf(Locale.ROOT, "preload: %,d/%,d keys (%d%%)%n", sent, n, sent * 100 / n);
                }
            }
            slots.acquire(CONCURRENCY);
            slots.release(CONCURRENCY);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PreloadException("preload interrupted");
        }
        Throwable t = failure.get();
        if (t != null) {
            KvException kv = KvException.unwrap(t);
            throw new PreloadException("preload failed after " + sent + " of " + n + " keys: " + kv.getMessage());
        }
        if (progress != null) {
            progress.printf(Locale.ROOT, "preload: %,d keys in %.1f s%n", n, (System.nanoTime() - started) / 1e9);
        }
        return n;
    }
}
