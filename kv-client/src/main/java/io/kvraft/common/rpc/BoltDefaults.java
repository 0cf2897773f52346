package io.kvraft.common.rpc;

/**
 * bolt settings this project depends on, applied before bolt creates its executors (they are read
 * once per JVM, from system properties; a value the user set with {@code -D} is kept).
 */
public final class BoltDefaults {

    /**
     * bolt hands every response it receives, and every timed-out call's callback, to one default executor
     * per JVM (20-400 threads, queue 600) and drops what that executor rejects. With thousands of requests
     * in flight a burst of responses overflows it: those calls are never answered and time out, and a
     * write whose answer was dropped ends with an unknown outcome. A deep queue lets the burst wait instead.
     */
    static final String QUEUE_PROPERTY = "bolt.tp.queue";
    static final String QUEUE_SIZE = "65536";

    private BoltDefaults() {
    }

    /** Call before the first bolt client or server of the JVM is created ({@link WireProtocol#register} does). */
    public static void apply() {
        if (System.getProperty(QUEUE_PROPERTY) == null) {
            System.setProperty(QUEUE_PROPERTY, QUEUE_SIZE);
        }
    }
}
