package io.kvraft.server.raft;

/**
 * Which jraft method called into one of our jraft extension points, for the calls jraft makes without saying what
 * they are for (a heartbeat's task on the Raft scheduler, the read-index scanner asking for its period). Written by
 * hand: a stack walk, nothing a library does.
 */
final class JraftCallers {

    private static final StackWalker WALKER = StackWalker.getInstance();

    private JraftCallers() {
    }

    /**
     * Whether the {@code depth} frames below this call (its caller first) hold a method of {@code className} named
     * {@code method}, or any method of that class when {@code method} is null.
     */
    static boolean calledFrom(String className, String method, int depth) {
        return WALKER.walk(frames -> frames.skip(1).limit(depth).anyMatch(f -> f.getClassName().equals(className)
                && (method == null || f.getMethodName().equals(method))));
    }
}
