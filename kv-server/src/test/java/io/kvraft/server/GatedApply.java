package io.kvraft.server;

import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.StoreBatch;

import java.util.concurrent.CountDownLatch;

import static java.util.concurrent.TimeUnit.SECONDS;

/**
 * A node's store that, once armed with {@link #hold}, holds the first apply to one region until released: that
 * region's state machine on this node stops inside the apply while its log goes on (entries are appended and
 * commit behind it). Tests use it to order a log's entries against what the node has applied.
 */
final class GatedApply extends ForwardingStore {
    private volatile int region = -1;
    /** Counted down when the held apply has begun. */
    final CountDownLatch held = new CountDownLatch(1);
    /** Count down to let the held apply finish (always, in a finally: else the node cannot stop). */
    final CountDownLatch release = new CountDownLatch(1);

    GatedApply(KvStore store) {
        super(store);
    }

    void hold(int regionId) {
        region = regionId;
    }

    @Override
    public void apply(int regionId, long appliedIndex, StoreBatch batch) {
        if (regionId == region) {
            region = -1;
            held.countDown();
            try {
                if (!release.await(120, SECONDS)) {
                    throw new IllegalStateException("the test never released the apply");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        store.apply(regionId, appliedIndex, batch);
    }
}
