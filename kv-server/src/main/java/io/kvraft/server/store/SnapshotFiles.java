package io.kvraft.server.store;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.EOFException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The framing shared by both engines' snapshot files: a header of magic, format version and engine
 * tag, CRC32C helpers, and fsync helpers (after a snapshot Raft may drop its log, so the files must be durable).
 */
public final class SnapshotFiles {

    /** "KVSN" in ASCII. */
    static final int MAGIC = 0x4B56534E;
    static final byte FORMAT_VERSION = 1;
    static final int CRC_TRAILER_BYTES = Integer.BYTES;
    private static final int MAX_ENGINE_TAG_BYTES = 32;
    private static final int COPY_BUFFER_BYTES = 64 * 1024;

    private SnapshotFiles() {
    }

    static void writeHeader(DataOutput out, String engine) throws IOException {
        byte[] tag = engine.getBytes(StandardCharsets.US_ASCII);
        out.writeInt(MAGIC);
        out.writeByte(FORMAT_VERSION);
        out.writeByte(tag.length);
        out.write(tag);
    }

    /** Reads and checks the header written by {@link #writeHeader}; any mismatch names {@code file}. */
    static void readHeader(DataInput in, String expectedEngine, Path file) throws IOException {
        int magic = in.readInt();
        if (magic != MAGIC) {
            throw corrupt(file, String.format("bad magic 0x%08x, expected 0x%08x", magic, MAGIC));
        }
        byte version = in.readByte();
        if (version != FORMAT_VERSION) {
            throw corrupt(file, "unknown format version " + version + ", expected " + FORMAT_VERSION);
        }
        int tagBytes = in.readUnsignedByte();
        if (tagBytes > MAX_ENGINE_TAG_BYTES) {
            throw corrupt(file, "engine tag of " + tagBytes + " bytes is too long");
        }
        byte[] tag = new byte[tagBytes];
        in.readFully(tag);
        String engine = new String(tag, StandardCharsets.US_ASCII);
        if (!engine.equals(expectedEngine)) {
            throw corrupt(file, "snapshot of engine '" + engine + "', expected '" + expectedEngine + "'");
        }
    }

    /** Number of bytes {@link #writeHeader} writes for {@code engine}. */
    static int headerBytes(String engine) {
        return Integer.BYTES + 2 + engine.length();
    }

    /** CRC32C of the whole file, streamed. */
    public static int crc32c(Path file) throws IOException {
        CRC32C crc = new CRC32C();
        byte[] buffer = new byte[COPY_BUFFER_BYTES];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                crc.update(buffer, 0, n);
            }
        }
        return (int) crc.getValue();
    }

    static int crc32c(byte[] bytes, int length) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, length);
        return (int) crc.getValue();
    }

    /** Writes {@code bytes} to {@code file} and forces them to disk before returning. */
    static void writeDurably(Path file, byte[] bytes) throws IOException {
        try (FileOutputStream out = new FileOutputStream(file.toFile())) {
            out.write(bytes);
            out.getChannel().force(true);
        }
    }

    static CorruptSnapshotException corrupt(Path file, String why) {
        return new CorruptSnapshotException("corrupt snapshot file " + file + ": " + why);
    }

    static CorruptSnapshotException truncated(Path file, EOFException cause) {
        CorruptSnapshotException e = corrupt(file, "truncated");
        e.initCause(cause);
        return e;
    }
}
