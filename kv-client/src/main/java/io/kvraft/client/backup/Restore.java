package io.kvraft.client.backup;

import com.google.protobuf.InvalidProtocolBufferException;
import io.kvraft.client.KeyValue;
import io.kvraft.client.KvClient;
import io.kvraft.client.admin.KvAdmin;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.client.route.RetryPolicy;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Writes a verified backup into a cluster through the client: the pairs go out in {@code batchPut}s routed by
 * key, so the target may have any number of nodes, regions and either engine; after each region's pairs, its
 * system records (sequences and locks) go out through {@link KvAdmin#restoreSystemRecord}, which only moves
 * the target's counters forward (held locks are not restored). The whole backup is checked first (manifest and
 * every file's CRC32C), so a corrupt backup writes nothing. A cluster that holds any key is refused unless
 * {@code force}; forced, the backup's keys overwrite and other keys stay.
 */
public final class Restore {

    /**
     * @param rateLimitMbPerSec bytes of keys and values written per second, in MB; 0 = unlimited
     * @param force             write into a cluster that already holds keys
     * @param batchKeys         pairs per batchPut
     * @param inflight          batchPuts outstanding at once
     * @param progressIntervalMs a progress line every this often; 0 = none
     */
    public record Options(double rateLimitMbPerSec, boolean force, int batchKeys, int inflight, long progressIntervalMs) {
        public Options {
            if (rateLimitMbPerSec < 0 || batchKeys < 1 || inflight < 1 || progressIntervalMs < 0) {
                throw new IllegalArgumentException("restore: --rate-limit must be 0 or more, --batch and --inflight 1 or more");
            }
        }

        public static Options defaults() {
            return new Options(0, false, 1000, 8, 2000);
        }
    }

    /** What was restored and how long it took (the check of the files included). */
    public record Result(BackupManifest manifest, double seconds) {
        public double megabytesPerSecond() {
            return manifest.dataBytes() / 1e6 / seconds;
        }

        public double keysPerSecond() {
            return manifest.keys() / seconds;
        }
    }

    /**
     * Attempts of one batchPut or system record: putting the same pairs again is harmless, and so is restoring a
     * record again, so unknown outcomes are retried.
     */
    private static final int ATTEMPTS_PER_BATCH = 5;

    private final KvClient client;
    private final Options options;
    private final RateLimiter limiter;
    private final Semaphore inflight;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private Progress progress;

    private Restore(KvClient client, Options options) {
        this.client = client;
        this.options = options;
        this.limiter = RateLimiter.megabytesPerSecond(options.rateLimitMbPerSec());
        this.inflight = new Semaphore(options.inflight());
    }

    /**
     * Restores the backup in {@code dir}.
     *
     * @throws BadBackupException       when the backup is incomplete, corrupt or not ours (nothing is written)
     * @throws TargetNotEmptyException  when the cluster holds keys and {@code force} is off (nothing is written)
     * @throws KvException              when the cluster fails a batch or system record {@value #ATTEMPTS_PER_BATCH} times
     */
    public static Result run(KvClient client, Path dir, Options options, PrintWriter progressOut) throws IOException {
        long start = System.nanoTime();
        BackupManifest manifest = BackupManifest.verify(dir);
        List<KeyValue> any = KvClient.sync(client.scan(null, null, 1, true));
        if (!any.isEmpty() && !options.force()) {
            throw new TargetNotEmptyException("the target cluster is not empty (it holds key 0x"
                    + HexFormat.of().formatHex(any.get(0).key()) + "); restore into an empty cluster, or add --force"
                    + " to write the backup's keys over it");
        }
        Restore r = new Restore(client, options);
        try (Progress p = new Progress("restore", manifest.regions().size(), progressOut, options.progressIntervalMs())) {
            r.progress = p;
            r.restore(dir, manifest);
        }
        return new Result(manifest, (System.nanoTime() - start) / 1e9);
    }

    private void restore(Path dir, BackupManifest manifest) throws IOException {
        for (BackupManifest.Region region : manifest.regions()) {
            List<KeyValue> batch = new ArrayList<>(options.batchKeys());
            long[] bytes = new long[1];
            BackupFile.read(dir.resolve(region.file()), region, (k, v) -> {
                batch.add(new KeyValue(k, v));
                bytes[0] += k.length + v.length;
                if (batch.size() >= options.batchKeys()) {
                    flush(batch, bytes);
                }
            }, (k, record) -> {
                flush(batch, bytes); // the file's pairs are all read: the region's last batch goes first
                sendSystem(k, record);
            });
            flush(batch, bytes);
            checkFailure();
            progress.regionsDone.incrementAndGet();
        }
        inflight.acquireUninterruptibly(options.inflight()); // every batch answered
        inflight.release(options.inflight());
        checkFailure();
    }

    /** Sends the pairs gathered in {@code batch} ({@code bytes[0]} of keys and values), if any, and empties it. */
    private void flush(List<KeyValue> batch, long[] bytes) throws IOException {
        if (!batch.isEmpty()) {
            send(new ArrayList<>(batch), bytes[0]);
            batch.clear();
            bytes[0] = 0;
        }
    }

    private void send(List<KeyValue> batch, long bytes) throws IOException {
        checkFailure();
        limiter.acquire(bytes);
        inflight.acquireUninterruptibly();
        put(batch, bytes);
    }

    /** One system record of the file (a CoordRecord, checked by the read), routed by its key. */
    private void sendSystem(byte[] key, byte[] bytes) throws IOException {
        try {
            CoordRecord.parseFrom(bytes);
        } catch (InvalidProtocolBufferException e) {
            throw new IOException("restore: a system record the check passed is undecodable: " + e.getMessage(), e);
        }
        checkFailure();
        limiter.acquire(key.length + bytes.length);
        inflight.acquireUninterruptibly();
        attempt(() -> client.admin().restoreSystemRecord(key, bytes), () -> progress.systemRecords.incrementAndGet(), 1);
    }

    private void put(List<KeyValue> batch, long bytes) {
        attempt(() -> client.batchPut(batch), () -> {
            progress.keys.addAndGet(batch.size());
            progress.bytes.addAndGet(bytes);
        }, 1);
    }

    /** Makes {@code call} until it succeeds, fails for good or runs out of attempts; frees its in-flight slot then. */
    private void attempt(Supplier<CompletableFuture<Void>> call, Runnable succeeded, int attempt) {
        CompletableFuture<Void> f;
        try {
            f = call.get();
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((v, err) -> {
            if (err == null) {
                succeeded.run();
                inflight.release();
                return;
            }
            KvException e = KvException.unwrap(err);
            boolean again = attempt < ATTEMPTS_PER_BATCH
                    && (RetryPolicy.retriable(e.code()) || RetryPolicy.outcomeUnknown(e.code()));
            if (again) {
                attempt(call, succeeded, attempt + 1);
            } else {
                failure.compareAndSet(null, e);
                inflight.release();
            }
        });
    }

    private void checkFailure() throws IOException {
        Throwable t = failure.get();
        if (t instanceof KvException kv) {
            throw new KvException(kv.code(), "restore failed: " + kv.getMessage());
        }
        if (t != null) {
            throw new IOException("restore failed: " + t, t);
        }
    }
}
