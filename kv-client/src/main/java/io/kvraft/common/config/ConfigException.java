package io.kvraft.common.config;

/** A missing, unreadable or invalid configuration file; the message is one line naming the file and key. */
public final class ConfigException extends RuntimeException {
    public ConfigException(String message) {
        super(message, null, false, false);
    }
}
