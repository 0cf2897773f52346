package io.kvraft.common.logging;

import ch.qos.logback.classic.pattern.ThrowableHandlingConverter;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;

/**
 * Renders a log event's exception as " (Class: message; caused by Class: message) [stack trace in FILE]"
 * on the same line: the libraries below us (bolt, jraft, netty) log expected network errors with stack
 * traces, which would bury a command's own one-line events. The trace goes to the command's log file
 * (the context property {@code KV_LOG_FILE}, see {@link LogFile}). Logback has no such built-in
 * conversion. Start the JVM with {@code -Dkv.log.stackTraces=true} to get full stack traces on the console.
 */
public final class OneLineThrowableConverter extends ThrowableHandlingConverter {

    private static final boolean FULL = Boolean.getBoolean("kv.log.stackTraces");
    private final ch.qos.logback.classic.pattern.ThrowableProxyConverter full =
            new ch.qos.logback.classic.pattern.ThrowableProxyConverter();

    @Override
    public void start() {
        full.setContext(getContext());
        full.start();
        super.start();
    }

    @Override
    public String convert(ILoggingEvent event) {
        IThrowableProxy t = event.getThrowableProxy();
        if (t == null) {
            return "";
        }
        if (FULL) {
            return System.lineSeparator() + full.convert(event);
        }
        StringBuilder sb = new StringBuilder(" (");
        for (int depth = 0; t != null && depth < 4; t = t.getCause(), depth++) {
            if (depth > 0) {
                sb.append("; caused by ");
            }
            String name = t.getClassName();
            sb.append(name.substring(name.lastIndexOf('.') + 1));
            if (t.getMessage() != null) {
                sb.append(": ").append(t.getMessage().lines().findFirst().orElse(""));
            }
        }
        sb.append(')');
        String file = getContext() == null ? null : getContext().getProperty(LogFile.PROPERTY);
        if (file != null) {
            sb.append(" [stack trace in ").append(file).append(']');
        }
        return sb.toString();
    }
}
