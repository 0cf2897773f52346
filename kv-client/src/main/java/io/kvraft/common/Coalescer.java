package io.kvraft.common;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToIntFunction;

/**
 * Coalesces items into batches without any timer: a batch leaves as soon as fewer than
 * {@code maxInflight} batches are outstanding, carrying everything queued up to the size limits.
 * Under light load every item leaves alone and at once; under heavy load batches grow by
 * themselves while earlier ones are in flight. Used by the client (one RPC per batch) and by the
 * region leader (one Raft log entry per batch).
 *
 * <p>{@link Sender#send} is called on the offering thread or on the thread that completed the
 * previous batch; it must not block, and must call {@code done} exactly once.
 */
public final class Coalescer<T> {

    /** Sends one batch; calls {@code done} once the batch has been answered (successfully or not). */
    @FunctionalInterface
    public interface Sender<T> {
        void send(List<T> batch, Runnable done);
    }

    private final ConcurrentLinkedQueue<T> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger inflight = new AtomicInteger();
    private final AtomicInteger pending = new AtomicInteger();
    private final int maxInflight;
    private final int maxBatchSize;
    private final int maxBatchBytes;
    private final int maxPending;
    private final ToIntFunction<T> sizer;
    private final Sender<T> sender;

    public Coalescer(int maxInflight, int maxBatchSize, int maxBatchBytes, int maxPending,
                     ToIntFunction<T> sizer, Sender<T> sender) {
        this.maxInflight = maxInflight;
        this.maxBatchSize = maxBatchSize;
        this.maxBatchBytes = maxBatchBytes;
        this.maxPending = maxPending;
        this.sizer = sizer;
        this.sender = sender;
    }

    /** Queues {@code item}; false (and nothing queued) when {@code maxPending} items already wait. */
    public boolean offer(T item) {
        if (pending.incrementAndGet() > maxPending) {
            pending.decrementAndGet();
            return false;
        }
        queue.add(item);
        drain();
        return true;
    }

    /** Items queued and not yet handed to the sender. */
    public int pending() {
        return pending.get();
    }

    private void drain() {
        // Order matters against lost wake-ups: offer adds before checking inflight; done decrements before checking the queue.
        while (!queue.isEmpty()) {
            int f = inflight.get();
            if (f >= maxInflight) {
                return;
            }
            if (!inflight.compareAndSet(f, f + 1)) {
                continue;
            }
            List<T> batch = take();
            if (batch.isEmpty()) {
                inflight.decrementAndGet();
                continue;
            }
            sender.send(batch, this::done);
        }
    }

    // synchronized so that peek-then-poll takes the item it measured; held only while moving references
    private synchronized List<T> take() {
        List<T> batch = new ArrayList<>(Math.min(maxBatchSize, Math.max(1, pending.get())));
        long bytes = 0;
        T item;
        while (batch.size() < maxBatchSize && (item = queue.peek()) != null) {
            int size = sizer.applyAsInt(item);
            if (!batch.isEmpty() && bytes + size > maxBatchBytes) {
                break;
            }
            batch.add(queue.poll());
            bytes += size;
        }
        pending.addAndGet(-batch.size());
        return batch;
    }

    private void done() {
        inflight.decrementAndGet();
        drain();
    }
}
