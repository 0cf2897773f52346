package io.kvraft.server;

import io.kvraft.server.fs.DurableFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Checks a node's data directory before anything is written: it must be a writable directory, and
 * it must have been made for the configured store engine (an ENGINE file records which). Every
 * failure is an IOException with a one-line message naming the directory; when it is refused for
 * what it holds, nothing in it is changed.
 */
final class DataDir {

    static final String ENGINE_FILE = "ENGINE";
    /** A random id made the first time the directory is used; backups record it to tell clusters apart. */
    static final String STORE_ID_FILE = "STORE_ID";
    private static final String PROBE_FILE = "WRITE_CHECK.tmp";
    private static final int MAX_ENGINE_FILE_BYTES = 64;

    private DataDir() {
    }

    static void prepare(Path dir, String engine) throws IOException {
        createDirectory(dir);
        Path marker = dir.resolve(ENGINE_FILE);
        if (Files.exists(marker)) {
            String found = readMarker(marker);
            if (!found.equals(engine)) {
                throw new IOException("data directory " + dir + " holds a '" + found + "' store but store.engine is '"
                        + engine + "'; use another dataDir or the matching engine (nothing was changed)");
            }
            probeWritable(dir);
            return;
        }
        boolean empty;
        try (var entries = Files.list(dir)) {
            // leftovers of a start that died right here do not count
            empty = entries.map(p -> p.getFileName().toString())
                    .allMatch(n -> n.equals(ENGINE_FILE + ".tmp") || n.equals(PROBE_FILE));
        } catch (IOException e) {
            throw new IOException("data directory " + dir + " cannot be listed: " + describe(e));
        }
        if (!empty) {
            throw new IOException("data directory " + dir + " is not empty and has no " + ENGINE_FILE
                    + " file; refusing to use it (nothing was changed)");
        }
        try {
            DurableFiles.replace(marker, engine + "\n");
        } catch (IOException e) {
            throw new IOException("data directory " + dir + " is not writable: " + describe(e));
        }
    }

    /**
     * The directory's store id: read from {@value #STORE_ID_FILE}, or made (random, 16 hex digits) and written
     * once when there is none (a directory made before store ids existed gets one on its next start).
     */
    static String storeId(Path dir) throws IOException {
        Path file = dir.resolve(STORE_ID_FILE);
        if (Files.exists(file)) {
            String id = readMarker(file);
            if (!id.matches("[0-9a-f]{16}")) {
                throw new IOException("data directory " + dir + ": its " + STORE_ID_FILE + " file holds '" + id
                        + "', not 16 hex digits; refusing to use it (nothing was changed)");
            }
            return id;
        }
        String id = String.format("%016x", new java.security.SecureRandom().nextLong());
        try {
            DurableFiles.replace(file, id + "\n");
        } catch (IOException e) {
            throw new IOException("data directory " + dir + " is not writable: " + describe(e));
        }
        return id;
    }

    private static void createDirectory(Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            if (!Files.isWritable(dir)) {
                throw new IOException("data directory " + dir + " is not writable");
            }
            return;
        }
        if (Files.exists(dir)) {
            throw new IOException("data directory " + dir + " is a file, not a directory");
        }
        for (Path p = dir.toAbsolutePath().getParent(); p != null; p = p.getParent()) {
            if (Files.exists(p) && !Files.isDirectory(p)) {
                throw new IOException("data directory " + dir + " cannot be created: " + p + " is a file");
            }
        }
        try {
            DurableFiles.createDirectories(dir);
        } catch (IOException e) {
            throw new IOException("data directory " + dir + " cannot be created: " + describe(e));
        }
    }

    private static String readMarker(Path marker) throws IOException {
        try {
            if (!Files.isRegularFile(marker) || Files.size(marker) > MAX_ENGINE_FILE_BYTES) {
                throw new IOException("not a small regular file");
            }
            return Files.readString(marker, StandardCharsets.US_ASCII).trim();
        } catch (IOException e) {
            throw new IOException("data directory " + marker.getParent() + ": its " + marker.getFileName() + " file is unreadable ("
                    + describe(e) + "); refusing to use it (nothing was changed)");
        }
    }

    /** Permission bits say little (root ignores them, read-only mounts keep them): try a write. */
    private static void probeWritable(Path dir) throws IOException {
        Path probe = dir.resolve(PROBE_FILE);
        try {
            Files.writeString(probe, "");
            Files.delete(probe);
        } catch (IOException e) {
            throw new IOException("data directory " + dir + " is not writable: " + describe(e));
        }
    }

    /** An IOException in a few words: NIO's messages are often just the path, the class says what happened. */
    static String describe(IOException e) {
        if (e instanceof FileSystemException fse) {
            String kind = switch (e.getClass().getSimpleName()) {
                case "AccessDeniedException" -> "permission denied";
                case "FileAlreadyExistsException" -> "a file is in the way";
                case "NoSuchFileException" -> "no such file or directory";
                case "NotDirectoryException" -> "not a directory";
                default -> fse.getReason() != null ? fse.getReason() : e.getClass().getSimpleName();
            };
            String reason = fse.getReason() != null && !kind.equals(fse.getReason()) ? ": " + fse.getReason() : "";
            return kind + (fse.getFile() != null ? " (" + fse.getFile() + ")" : "") + reason;
        }
        return e.getMessage() != null ? e.getMessage().lines().findFirst().orElse("") : e.getClass().getSimpleName();
    }
}
