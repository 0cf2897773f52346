package io.kvraft.server;

import io.kvraft.server.metrics.BoltExecutors;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadPoolExecutor;

/**
 * Shrinks bolt's default executors (one per protocol version and JVM: every node of an in-process cluster and
 * its clients share them) for the length of a test, so that a hang that needs every one of its threads busy
 * shows at once instead of on a loaded machine now and then.
 */
final class BoltDefaultExecutor implements AutoCloseable {

    private record Saved(ThreadPoolExecutor pool, int core, int max) {
    }

    private final List<Saved> saved = new ArrayList<>();

    private BoltDefaultExecutor(int threads) {
        for (ThreadPoolExecutor t : BoltExecutors.defaults()) {
            saved.add(new Saved(t, t.getCorePoolSize(), t.getMaximumPoolSize()));
            t.setCorePoolSize(threads);
            t.setMaximumPoolSize(threads);
        }
        if (saved.isEmpty()) {
            throw new IllegalStateException("bolt has no default executor registered yet: start a cluster first");
        }
    }

    /** Call after bolt is loaded (a cluster is up); the sizes come back on close. */
    static BoltDefaultExecutor shrinkTo(int threads) {
        return new BoltDefaultExecutor(threads);
    }

    @Override
    public void close() {
        for (Saved s : saved) {
            // raise the maximum first: the core may never exceed it
            s.pool().setMaximumPoolSize(Math.max(s.max(), s.pool().getMaximumPoolSize()));
            s.pool().setCorePoolSize(s.core());
            s.pool().setMaximumPoolSize(s.max());
        }
    }
}
