package io.kvraft.common.logging;

import ch.qos.logback.core.FileAppender;

/**
 * A FileAppender that creates its file with the first event it writes, so a command that logs nothing
 * (most admin CLI runs) leaves no empty file behind.
 */
public final class LazyFileAppender<E> extends FileAppender<E> {

    private volatile boolean opened;

    @Override
    public void start() {
        if (getFile() == null) {
            addError("no file set for the appender named [" + name + "]");
            return;
        }
        started = true; // the file is opened by the first append
    }

    @Override
    protected void append(E event) {
        if (!opened) {
            synchronized (this) {
                if (!opened) {
                    opened = true;
                    started = false;
                    super.start();
                }
            }
        }
        super.append(event);
    }
}
