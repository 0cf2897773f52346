package io.kvraft.common.logging;

import ch.qos.logback.core.PropertyDefinerBase;

import java.nio.file.Path;

/**
 * The path of a command's log file, where stack traces go while the console gets one line per event:
 * {@code -Dkv.log.file=PATH} when given, else {@code <java.io.tmpdir>/<name>-<pid>.log}. Used from the
 * logback files as {@code <define name="KV_LOG_FILE" scope="context" class="...LogFile"><name>kv-client</name></define>}.
 */
public final class LogFile extends PropertyDefinerBase {

    /** The logback context property that holds the path, read by {@link OneLineThrowableConverter}. */
    public static final String PROPERTY = "KV_LOG_FILE";

    private String name = "kv";

    public void setName(String name) {
        this.name = name;
    }

    @Override
    public String getPropertyValue() {
        String given = System.getProperty("kv.log.file");
        if (given != null && !given.isBlank()) {
            return given;
        }
        return Path.of(System.getProperty("java.io.tmpdir"), name + "-" + ProcessHandle.current().pid() + ".log").toString();
    }

    /**
     * " [details in PATH]" when this process's logback configuration defines a log file and something was
     * written to it, for a command's one-line error; "" otherwise (or without logback).
     */
    public static String hint() {
        try {
            if (org.slf4j.LoggerFactory.getILoggerFactory() instanceof ch.qos.logback.core.Context ctx) {
                String file = ctx.getProperty(PROPERTY);
                if (file != null && java.nio.file.Files.exists(Path.of(file))) {
                    return " [details in " + file + "]";
                }
            }
        } catch (LinkageError noLogback) {
            // a library user's process without logback: no file of ours
        }
        return "";
    }
}
