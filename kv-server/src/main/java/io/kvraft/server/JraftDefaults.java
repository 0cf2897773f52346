package io.kvraft.server;

/**
 * jraft settings that are system properties, read once when jraft's classes load, so they are set here
 * before that happens (as {@code BoltDefaults} does for bolt's).
 *
 * <p>{@code jraft.closure.threadpool.size.max}: jraft runs closures and replicator wake-ups on one pool per JVM
 * (JRaft-Group-Default) that hands each task over a SynchronousQueue and starts a thread when none is waiting,
 * up to 100 by default; past that it rejects the task. A rejected wake-up is lost: the leader appended new
 * entries but a replicator waiting for them is never told, and its region stops replicating until the
 * leadership moves ("RejectedExecutionException ... pool size = 100", then client timeouts on that region).
 * The cap is raised so that a burst cannot cut a region off. A value set by the user is kept.
 */
public final class JraftDefaults {

    static final String CLOSURE_POOL_MAX = "jraft.closure.threadpool.size.max";
    static final int CLOSURE_POOL_MAX_VALUE = 1024;

    private JraftDefaults() {
    }

    /** Sets the defaults that are not set yet; call before any jraft class loads (first thing in main). */
    public static void apply() {
        if (System.getProperty(CLOSURE_POOL_MAX) == null) {
            System.setProperty(CLOSURE_POOL_MAX, Integer.toString(CLOSURE_POOL_MAX_VALUE));
        }
    }
}
