package io.kvraft.server.store;

import java.io.IOException;

/** A snapshot that failed its checksum, was truncated, or belongs to another engine. */
public final class CorruptSnapshotException extends IOException {
    public CorruptSnapshotException(String message) {
        super(message);
    }
}
