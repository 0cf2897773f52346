package io.kvraft.server.launch;

import org.slf4j.LoggerFactory;

/** Applies {@code logging.level} of the YAML to the node's own loggers (io.kvraft.*) in logback. */
final class LogLevels {

    private LogLevels() {
    }

    /** @return false when logging is not logback (e.g. another slf4j backend on the class path) */
    static boolean apply(String level) {
        if (LoggerFactory.getLogger("io.kvraft") instanceof ch.qos.logback.classic.Logger lb) {
            lb.setLevel(ch.qos.logback.classic.Level.toLevel(level.toUpperCase(java.util.Locale.ROOT)));
            return true;
        }
        return false;
    }
}
