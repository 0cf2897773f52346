package io.kvraft.server.fs;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Files and directories that survive a power cut once the call returns. A file's fsync makes its data durable, not
 * its name: a new name (a file or directory made, or a file renamed into place) is durable only after an fsync of
 * the directory that holds it. Java's {@link Files} does neither, so the node's own files go through here.
 */
public final class DurableFiles {

    private DurableFiles() {
    }

    /** Makes {@code dir} and its missing parents, and fsyncs the directory holding each one it made. */
    public static void createDirectories(Path dir) throws IOException {
        Deque<Path> missing = new ArrayDeque<>();
        for (Path p = dir.toAbsolutePath(); p != null && !Files.isDirectory(p); p = p.getParent()) {
            missing.push(p);
        }
        if (missing.isEmpty()) {
            return;
        }
        Files.createDirectories(dir);
        for (Path made : missing) {
            syncDirectory(made.getParent());
        }
    }

    /**
     * Replaces {@code file} with {@code text} all at once: written to a file beside it and fsynced, renamed over it,
     * and the directory fsynced. A cut at any moment leaves the old content or the new one.
     */
    public static void replace(Path file, String text) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            ByteBuffer bytes = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
            while (bytes.hasRemaining()) {
                ch.write(bytes);
            }
            ch.force(true);
        }
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        syncDirectory(file.toAbsolutePath().getParent());
    }

    /** Fsyncs a directory, which makes the names in it durable. */
    public static void syncDirectory(Path dir) throws IOException {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }
}
