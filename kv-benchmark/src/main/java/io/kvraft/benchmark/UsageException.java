package io.kvraft.benchmark;

/** Bad options or input files: the command prints the one-line message and exits with 2. */
public final class UsageException extends RuntimeException {
    public UsageException(String message) {
        super(message, null, false, false);
    }
}
