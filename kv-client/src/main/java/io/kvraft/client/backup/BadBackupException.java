package io.kvraft.client.backup;

import java.io.IOException;

/** A backup that cannot be used: incomplete, corrupt, foreign or of an unknown format; the message names the file. */
public final class BadBackupException extends IOException {

    public BadBackupException(String message) {
        super(message);
    }
}
