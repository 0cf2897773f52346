package io.kvraft.client.backup;

import io.kvraft.client.KvClient;
import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RegionCapture;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.KvException;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;

/**
 * An online backup into a new directory: every region captured on its leader at one applied index (see
 * {@link KvAdmin#captureRegion}) and read page by page into its own file (its pairs, then its sequences' and
 * locks' system records), {@code parallel} regions at a time, paced to the rate limit; the manifest is written
 * last. A region whose session is lost (its node
 * restarted, or the session expired) is started again from a fresh capture.
 *
 * <p>Each region is one consistent point; the regions' points are not one instant of the whole cluster,
 * since regions are separate Raft groups with separate logs and there is no cluster-wide index to stop at.
 */
public final class Backup {

    /**
     * @param rateLimitMbPerSec bytes of keys and values read per second, in MB (10^6); 0 = unlimited
     * @param parallel          regions read at the same time
     * @param pageSize          pairs per page (the server also ends a page at limits.maxScanBytes)
     * @param progressIntervalMs a progress line every this often; 0 = none
     * @param attemptsPerRegion captures of one region before the backup gives up
     */
    public record Options(double rateLimitMbPerSec, int parallel, int pageSize, long progressIntervalMs,
                          int attemptsPerRegion) {
        public Options {
            if (rateLimitMbPerSec < 0 || parallel < 1 || pageSize < 1 || progressIntervalMs < 0 || attemptsPerRegion < 1) {
                throw new IllegalArgumentException("backup: --rate-limit must be 0 or more, --parallel and --page-size 1 or more");
            }
        }

        public static Options defaults() {
            return new Options(0, 2, 1000, 2000, 3);
        }
    }

    /** The manifest written and how long it took. */
    public record Result(BackupManifest manifest, double seconds) {
        public double megabytesPerSecond() {
            return manifest.dataBytes() / 1e6 / seconds;
        }

        public double keysPerSecond() {
            return manifest.keys() / seconds;
        }
    }

    private final KvAdmin admin;
    private final Path dir;
    private final Options options;
    private final RateLimiter limiter;
    private final Progress progress;
    private final int regionCount;
    private final List<RegionInfo> regions;

    private Backup(KvClient client, Path dir, Options options, PrintWriter progressOut) {
        this.admin = client.admin();
        this.dir = dir;
        this.options = options;
        this.limiter = RateLimiter.megabytesPerSecond(options.rateLimitMbPerSec());
        this.regions = KvClient.sync(admin.regions()).stream()
                .sorted((a, b) -> Arrays.compareUnsigned(a.startKey(), b.startKey()))
                .toList();
        this.regionCount = regions.size();
        this.progress = new Progress("backup", regionCount, progressOut, options.progressIntervalMs());
    }

    /**
     * Backs the cluster up into {@code dir}, which must be absent or empty.
     *
     * @throws IllegalArgumentException when {@code dir} is a file or holds anything
     * @throws KvException              when the cluster fails a region {@code attemptsPerRegion} times
     */
    public static Result run(KvClient client, Path dir, Options options, PrintWriter progressOut) throws IOException {
        prepare(dir);
        Backup b = new Backup(client, dir, options, progressOut);
        try (b.progress) {
            return b.run();
        }
    }

    private static void prepare(Path dir) throws IOException {
        if (Files.exists(dir)) {
            if (!Files.isDirectory(dir)) {
                throw new IllegalArgumentException("backup directory " + dir + " is a file");
            }
            try (var entries = Files.list(dir)) {
                if (entries.findAny().isPresent()) {
                    throw new IllegalArgumentException("backup directory " + dir + " is not empty; back up into a new directory");
                }
            }
        }
        Files.createDirectories(dir);
    }

    private Result run() throws IOException {
        String startedAt = Instant.now().toString();
        Map<String, String> storeIds = KvClient.sync(admin.storeIds());
        ExecutorService workers = Executors.newFixedThreadPool(options.parallel(), r -> {
            Thread t = new Thread(r, "kv-backup");
            t.setDaemon(true);
            return t;
        });
        List<BackupManifest.Region> done = new ArrayList<>();
        try {
            List<Future<BackupManifest.Region>> parts = new ArrayList<>();
            for (RegionInfo r : regions) {
                byte[] key = r.startKey();
                parts.add(workers.submit(() -> region(key)));
            }
            for (Future<BackupManifest.Region> f : parts) {
                done.add(f.get());
            }
        } catch (ExecutionException e) {
            throw rethrow(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("backup interrupted");
        } finally {
            workers.shutdownNow();
        }
        long keys = done.stream().mapToLong(BackupManifest.Region::keys).sum();
        long bytes = done.stream().mapToLong(BackupManifest.Region::dataBytes).sum();
        BackupManifest m = new BackupManifest(BackupManifest.FORMAT, BackupManifest.VERSION, UUID.randomUUID().toString(),
                BackupManifest.clusterId(storeIds), storeIds, startedAt, Instant.now().toString(), keys, bytes, done);
        m.write(dir);
        BackupManifest.read(dir); // the regions must tile the key space: a layout that changed mid-way is refused here
        return new Result(m, progress.seconds());
    }

    private static RuntimeException rethrow(Throwable t) throws IOException {
        if (t instanceof IOException io) {
            throw io;
        }
        if (t instanceof UncheckedIOException u) {
            throw u.getCause();
        }
        if (t instanceof RuntimeException r) {
            throw r;
        }
        throw new IOException(t);
    }

    /** One region into its file: capture, pages, rename; again from a fresh capture if the session is lost. */
    private BackupManifest.Region region(byte[] key) throws IOException {
        for (int attempt = 1; ; attempt++) {
            long[] counted = new long[2]; // keys and bytes this attempt added to the progress
            try {
                BackupManifest.Region r = regionOnce(key, counted);
                progress.regionsDone.incrementAndGet();
                return r;
            } catch (KvException e) {
                if (attempt >= options.attemptsPerRegion()) {
                    throw new KvException(e.code(), "backup of the region at key " + BackupManifest.hex(key) + " failed "
                            + attempt + " times; last: " + e.getMessage());
                }
                // a page's keys were counted as they came; the next attempt counts them again
                progress.keys.addAndGet(-counted[0]);
                progress.bytes.addAndGet(-counted[1]);
            }
        }
    }

    private BackupManifest.Region regionOnce(byte[] key, long[] counted) throws IOException {
        try (RegionCapture capture = KvClient.sync(admin.captureRegion(key))) {
            String name = BackupFile.fileName(capture.regionId());
            Path tmp = dir.resolve(name + ".tmp");
            BackupFile.Summary summary;
            try (BackupFile.Writer w = new BackupFile.Writer(tmp, capture.regionId(), capture.appliedIndex())) {
                copy(capture.startKey(), from -> capture.page(from, options.pageSize()), w::write, (pairs, bytes) -> {
                    progress.keys.addAndGet(pairs);
                    progress.bytes.addAndGet(bytes);
                    counted[0] += pairs;
                    counted[1] += bytes;
                });
                // then the region's sequences and locks, from the same capture (so as of the same index)
                copy(capture.startKey(), from -> capture.systemPage(from, options.pageSize()), w::writeSystem,
                        (pairs, bytes) -> { });
                summary = w.finish();
            } catch (RuntimeException | IOException e) {
                Files.deleteIfExists(tmp);
                throw e;
            }
            Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
            return new BackupManifest.Region(capture.regionId(), BackupManifest.hex(capture.startKey()),
                    BackupManifest.hex(capture.endKey()), capture.epoch(), capture.appliedIndex(), capture.term(),
                    capture.node(), capture.storeId(), name, summary.keys(), summary.dataBytes(), summary.systemRecords(),
                    summary.fileBytes(), String.format("%08x", summary.crc32c()));
        }
    }

    /** Writes one pair (or system record) to the region's file. */
    @FunctionalInterface
    private interface PairWriter {
        void write(byte[] key, byte[] value) throws IOException;
    }

    /** Told the pairs and bytes of each page copied. */
    @FunctionalInterface
    private interface PageDone {
        void accept(int pairs, long bytes);
    }

    /** Copies the pages {@code fetch} answers, from {@code from} until the capture has no more, paced to the rate limit. */
    private void copy(byte[] from, Function<byte[], CompletableFuture<RegionCapture.Page>> fetch, PairWriter write,
                      PageDone done) throws IOException {
        while (true) {
            RegionCapture.Page page = KvClient.sync(fetch.apply(from));
            long bytes = 0;
            for (RegionCapture.Pair kv : page.pairs()) {
                write.write(kv.key(), kv.value());
                bytes += kv.key().length + kv.value().length;
            }
            done.accept(page.pairs().size(), bytes);
            limiter.acquire(bytes);
            if (!page.more() || page.pairs().isEmpty()) {
                return;
            }
            byte[] last = page.pairs().get(page.pairs().size() - 1).key();
            from = Arrays.copyOf(last, last.length + 1);
        }
    }
}
