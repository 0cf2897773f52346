package io.kvraft.server;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Checks a node's data directory before anything is written: it must be writable, and it must
 * have been made for the configured store engine (an ENGINE file records which).
 */
final class DataDir {

    static final String ENGINE_FILE = "ENGINE";

    private DataDir() {
    }

    static void prepare(Path dir, String engine) throws IOException {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new IOException("data directory " + dir + " cannot be created: " + e);
        }
        if (!Files.isWritable(dir)) {
            throw new AccessDeniedException(dir.toString(), null, "data directory is not writable");
        }
        Path marker = dir.resolve(ENGINE_FILE);
        if (Files.exists(marker)) {
            String found = Files.readString(marker).trim();
            if (!found.equals(engine)) {
                throw new IOException("data directory " + dir + " holds a '" + found + "' store but store.engine is '"
                        + engine + "'; use another dataDir or the matching engine (nothing was changed)");
            }
            return;
        }
        try (var entries = Files.list(dir)) {
            if (entries.findAny().isPresent()) {
                throw new IOException("data directory " + dir + " is not empty and has no " + ENGINE_FILE
                        + " file; refusing to use it (nothing was changed)");
            }
        }
        Path tmp = dir.resolve(ENGINE_FILE + ".tmp");
        Files.writeString(tmp, engine + "\n");
        Files.move(tmp, marker, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }
}
