package io.kvraft.benchmark;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code --record-acked FILE}: the keys and values of acknowledged puts, one {@code hexkey hexvalue}
 * line each, for {@code kv-benchmark verify} to read back after a crash drill. With recording on,
 * every put writes a key never written before (index {@code base + n}, {@code base} random per run
 * and far above the preloaded key space), so each recorded key has exactly one expected value.
 * Load threads only enqueue; a writer thread appends and flushes every 100 ms, so a benchmark that is
 * killed loses at most the last moment of records, never records a put that was not acknowledged.
 */
public final class AckedRecorder implements AutoCloseable {

    private static final HexFormat HEX = HexFormat.of();
    private static final long FLUSH_NANOS = 100_000_000L;

    private final Path file;
    private final int keySize;
    private final long base;
    private final AtomicLong next = new AtomicLong();
    private final AtomicLong recorded = new AtomicLong();
    private final ConcurrentLinkedQueue<byte[][]> queue = new ConcurrentLinkedQueue<>();
    private final BufferedWriter writer;
    private final FileChannel channel;
    private final Thread flusher;
    private volatile boolean closing;
    private boolean closed;
    private volatile IOException failure;

    private AckedRecorder(Path file, int keySize) throws IOException {
        this.file = file;
        this.keySize = keySize;
        // 2^32 .. 2^62: never a preloaded index, and two runs collide with negligible probability
        this.base = (1L << 32) + (new SecureRandom().nextLong() >>> 2 & ~0xFFFF_FFFFL);
        this.channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND);
        this.writer = new BufferedWriter(new java.io.OutputStreamWriter(
                java.nio.channels.Channels.newOutputStream(channel), StandardCharsets.US_ASCII), 1 << 16);
        this.flusher = new Thread(this::flushLoop, "acked-recorder");
        this.flusher.setDaemon(true);
        this.flusher.start();
    }

    /** Opens {@code file} for appending (created if absent). */
    public static AckedRecorder open(Path file, int keySize) {
        if (keySize < KeyGenerator.MIN_MIXED_KEY_SIZE) {
            throw new UsageException("--record-acked needs --key-size of at least " + KeyGenerator.MIN_MIXED_KEY_SIZE
                    + " so every recorded key is distinct");
        }
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            return new AckedRecorder(file, keySize);
        } catch (IOException e) {
            throw new UsageException("--record-acked: cannot write " + file + ": " + e.getMessage());
        }
    }

    /** A key no put of this run has used, spread over all regions like the benchmark's other keys. */
    public byte[] uniqueKey() {
        return KeyGenerator.key(base + next.getAndIncrement(), keySize);
    }

    /** Called when a put was acknowledged. */
    public void record(byte[] key, byte[] value) {
        queue.add(new byte[][] {key, value});
    }

    public long recorded() {
        return recorded.get();
    }

    public Path file() {
        return file;
    }

    private void flushLoop() {
        while (!closing) {
            LockSupport.parkNanos(FLUSH_NANOS);
            drain();
        }
    }

    private synchronized void drain() {
        if (failure != null) {
            return;
        }
        try {
            byte[][] r;
            long n = 0;
            while ((r = queue.poll()) != null) {
                writer.write(HEX.formatHex(r[0]));
                writer.write(' ');
                writer.write(HEX.formatHex(r[1]));
                writer.write('\n');
                n++;
            }
            if (n > 0) {
                writer.flush();
                recorded.addAndGet(n);
            }
        } catch (IOException e) {
            failure = e;
        }
    }

    /** Writes what is queued and forces it to disk; throws if any write failed. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        closing = true;
        LockSupport.unpark(flusher);
        try {
            flusher.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        drain();
        try {
            writer.flush();
            channel.force(true);
            writer.close();
        } catch (IOException e) {
            if (failure == null) {
                failure = e;
            }
        }
        if (failure != null) {
            throw new UncheckedIOException("--record-acked: writing " + file + " failed", failure);
        }
    }
}
