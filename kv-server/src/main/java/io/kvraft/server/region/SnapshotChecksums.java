package io.kvraft.server.region;

import com.alipay.sofa.jraft.entity.LocalFileMetaOutter.LocalFileMeta;
import com.alipay.sofa.jraft.storage.snapshot.SnapshotReader;
import com.google.protobuf.Message;
import io.kvraft.server.store.CorruptSnapshotException;
import io.kvraft.server.store.SnapshotFiles;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The CRC32C of every file of a region snapshot, kept in jraft's snapshot meta ({@code LocalFileMeta.checksum},
 * {@value #PREFIX} and 8 hex digits), so that a flipped byte in any of them, the region state included (a bare
 * protobuf), fails the load naming the file. The meta travels with a snapshot sent to a follower, which checks it
 * too. A file without a checksum (a snapshot written before) is not checked here.
 */
public final class SnapshotChecksums {

    static final String PREFIX = "crc32c:";

    private SnapshotChecksums() {
    }

    /** The meta to add {@code file} to a snapshot with: its checksum. */
    static LocalFileMeta meta(Path file) throws IOException {
        return LocalFileMeta.newBuilder().setChecksum(PREFIX + String.format("%08x", SnapshotFiles.crc32c(file))).build();
    }

    /** Checks every file of {@code reader} that has a checksum in its meta. */
    static void verify(SnapshotReader reader) throws IOException {
        for (String name : reader.listFiles()) {
            Message meta = reader.getFileMeta(name);
            if (meta instanceof LocalFileMeta m) {
                verify(Path.of(reader.getPath(), name), m);
            }
        }
    }

    /**
     * @throws CorruptSnapshotException naming {@code file} when its content does not match the checksum in
     *                                  {@code meta}; nothing when the meta has none (or one of another kind)
     */
    public static void verify(Path file, LocalFileMeta meta) throws IOException {
        if (meta == null || !meta.hasChecksum() || !meta.getChecksum().startsWith(PREFIX)) {
            return;
        }
        int computed;
        try {
            computed = SnapshotFiles.crc32c(file);
        } catch (NoSuchFileException e) {
            throw new CorruptSnapshotException("corrupt snapshot file " + file + ": missing");
        }
        String stored = meta.getChecksum().substring(PREFIX.length());
        if (!stored.equalsIgnoreCase(String.format("%08x", computed))) {
            throw new CorruptSnapshotException(String.format("corrupt snapshot file %s: CRC32C mismatch with the"
                    + " snapshot meta: stored %s, computed %08x", file, stored, computed));
        }
    }
}
