package io.kvraft.benchmark;

import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code kv-benchmark verify --acked FILE}: reads back every key recorded by {@code --record-acked}
 * and counts those missing or holding another value. The end of a crash drill: record, kill -9 the
 * nodes, restart them, verify.
 */
@Command(name = "verify", mixinStandardHelpOptions = true, sortOptions = false,
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:every recorded write is there", "1:some are missing or wrong, or reads failed",
                "2:bad usage or an unreadable or malformed file"},
        description = "Read back the acknowledged writes recorded by --record-acked and report how many are missing"
                + " or hold another value.")
final class VerifyCommand implements Callable<Integer> {

    private static final int BATCH = 1000;
    private static final int BATCHES_IN_FLIGHT = 8;
    private static final HexFormat HEX = HexFormat.of();

    @ParentCommand
    BenchmarkMain parent;

    @Option(names = "--acked", required = true, paramLabel = "FILE", description = "The file written by --record-acked.")
    Path acked;

    @Mixin
    ClusterOptions cluster;

    @Override
    public Integer call() throws Exception {
        List<byte[][]> records = read(acked);
        if (cluster.embedded()) {
            throw new UsageException("verify needs the cluster to check: --servers HOST:PORT,... or --config FILE");
        }
        try (ClusterSession session = ClusterSession.open(cluster, null, null, parent.connector, parent.stderr)) {
            return check(records, session.client());
        }
    }

    private int check(List<byte[][]> records, KvClient client) throws InterruptedException {
        AtomicLong missing = new AtomicLong();
        AtomicLong wrong = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        List<String> examples = java.util.Collections.synchronizedList(new ArrayList<>());
        Semaphore slots = new Semaphore(BATCHES_IN_FLIGHT);
        List<CompletableFuture<Void>> all = new ArrayList<>();
        long nextProgress = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
        for (int from = 0; from < records.size(); from += BATCH) {
            List<byte[][]> batch = records.subList(from, Math.min(records.size(), from + BATCH));
            slots.acquire();
            List<byte[]> keys = batch.stream().map(r -> r[0]).toList();
            all.add(client.multiGet(keys).handle((values, err) -> {
                try {
                    if (err != null) {
                        failed.addAndGet(batch.size());
                        examples.add("read failed: " + KvException.unwrap(err).getMessage());
                        return null;
                    }
                    for (int i = 0; i < batch.size(); i++) {
                        byte[] got = values.get(i);
                        if (got == null) {
                            missing.incrementAndGet();
                            example(examples, "missing " + HEX.formatHex(batch.get(i)[0]));
                        } else if (!Arrays.equals(got, batch.get(i)[1])) {
                            wrong.incrementAndGet();
                            example(examples, "wrong value for " + HEX.formatHex(batch.get(i)[0]) + ": "
                                    + HEX.formatHex(got) + ", expected " + HEX.formatHex(batch.get(i)[1]));
                        }
                    }
                    return null;
                } finally {
                    slots.release();
                }
            }));
            if (System.nanoTime() > nextProgress) {
                parent.stderr.printf("verify: %,d/%,d keys read%n", Math.min(records.size(), from + BATCH), records.size());
                nextProgress = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            }
        }
        try {
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(10, TimeUnit.MINUTES);
        } catch (ExecutionException | TimeoutException e) {
            parent.stderr.println("verify: reads did not finish: " + e);
            return BenchmarkMain.EXIT_FAILED;
        }
        parent.stdout.printf("checked %,d acknowledged writes from %s: %,d missing, %,d wrong, %,d unreadable%n",
                records.size(), acked, missing.get(), wrong.get(), failed.get());
        synchronized (examples) {
            examples.stream().limit(10).forEach(e -> parent.stdout.println("  " + e));
        }
        return missing.get() + wrong.get() + failed.get() == 0 ? BenchmarkMain.EXIT_OK : BenchmarkMain.EXIT_FAILED;
    }

    private static void example(List<String> examples, String line) {
        if (examples.size() < 10) {
            examples.add(line);
        }
    }

    /** The records, checked line by line; the last line may be cut short by a crash and is then skipped. */
    static List<byte[][]> read(Path file) {
        List<byte[][]> records = new ArrayList<>();
        List<String> lines;
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.US_ASCII)) {
            lines = r.lines().toList();
        } catch (IOException | java.io.UncheckedIOException e) {
            throw new UsageException("verify: cannot read " + file + ": " + e.getMessage());
        }
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            int sp = line.indexOf(' ');
            try {
                if (sp <= 0 || sp != line.lastIndexOf(' ')) {
                    throw new IllegalArgumentException("expected 'hexkey hexvalue'");
                }
                records.add(new byte[][] {HEX.parseHex(line, 0, sp), HEX.parseHex(line, sp + 1, line.length())});
            } catch (IllegalArgumentException e) {
                if (i == lines.size() - 1) {
                    break; // a torn last line from a killed writer: that put's record is simply absent
                }
                throw new UsageException("verify: " + file + " line " + (i + 1) + " is malformed (" + e.getMessage() + ")");
            }
        }
        return records;
    }
}
