package io.kvraft.benchmark.nemesis;

import io.kvraft.client.KvClient;
import io.kvraft.client.LockHandle;
import io.kvraft.client.SequenceRange;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The nemesis lock workload: several clients (each its own holder) take a few locks with a short lease,
 * hold them for up to two leases (so the watchdog renews), acting on them every few milliseconds while
 * {@link LockHandle#isHeld()} says so, and unlock; now and then one takes numbers from a sequence.
 * Everything seen goes to {@link LockChecker}.
 */
final class LockWorkload {

    static final long LEASE_MS = 1500;
    private static final long ACT_EVERY_MS = 5;

    private final List<KvClient> clients;
    private final List<byte[]> keys;
    private final byte[] sequenceKey;
    private final long seed;
    private final List<Thread> workers = new ArrayList<>();
    private volatile boolean running;
    final ConcurrentLinkedQueue<LockChecker.Hold> holds = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<LockChecker.Range> ranges = new ConcurrentLinkedQueue<>();
    final AtomicLong errors = new AtomicLong();

    LockWorkload(List<KvClient> clients, int lockCount, long seed) {
        this.clients = clients;
        this.keys = new ArrayList<>();
        for (int i = 0; i < lockCount; i++) {
            keys.add(("nemesis-lock-" + i).getBytes(StandardCharsets.UTF_8));
        }
        this.sequenceKey = "nemesis-sequence".getBytes(StandardCharsets.UTF_8);
        this.seed = seed;
    }

    void start() {
        running = true;
        for (int c = 0; c < clients.size(); c++) {
            KvClient client = clients.get(c);
            String holder = "client-" + c;
            Random rnd = new Random(seed * 7_919L + c);
            Thread t = new Thread(() -> loop(client, holder, rnd), "nemesis-lock-" + c);
            t.setDaemon(true);
            workers.add(t);
            t.start();
        }
    }

    void stop() throws InterruptedException {
        running = false;
        for (Thread t : workers) {
            t.interrupt();
            t.join(TimeUnit.SECONDS.toMillis(40));
        }
    }

    private void loop(KvClient client, String holder, Random rnd) {
        while (running) {
            try {
                if (rnd.nextInt(5) == 0) {
                    SequenceRange r = KvClient.sync(client.getSequence(sequenceKey, 1 + rnd.nextInt(10)));
                    ranges.add(new LockChecker.Range(r.start(), r.end()));
                } else {
                    byte[] key = keys.get(rnd.nextInt(keys.size()));
                    LockHandle h = KvClient.sync(client.tryLock(key, LEASE_MS, LEASE_MS));
                    if (h != null) {
                        hold(h, new String(key, StandardCharsets.UTF_8), holder, rnd.nextInt((int) (2 * LEASE_MS)));
                    }
                }
            } catch (RuntimeException | InterruptedException e) {
                if (e instanceof InterruptedException) {
                    return;
                }
                errors.incrementAndGet();
                pause(50);
            }
        }
    }

    /** Acts on the lock every few ms for {@code holdMs} or until it is lost, records the holding, unlocks. */
    private void hold(LockHandle h, String key, String holder, long holdMs) throws InterruptedException {
        long start = System.nanoTime();
        long lastAct = start;
        long until = start + TimeUnit.MILLISECONDS.toNanos(holdMs);
        boolean lost = false;
        try {
            while (true) {
                long now = System.nanoTime(); // read before the check, so the act is never later than the check
                if (!h.isHeld()) {
                    lost = true;
                    break;
                }
                lastAct = now;
                if (now - until >= 0 || !running) {
                    break;
                }
                Thread.sleep(ACT_EVERY_MS); // the holder's "work" between two uses of the lock
            }
        } finally {
            holds.add(new LockChecker.Hold(key, holder, h.token(), start, lastAct, lost));
            if (!lost) {
                try {
                    KvClient.sync(h.unlock());
                } catch (RuntimeException e) {
                    errors.incrementAndGet(); // lost meanwhile, or the outcome is unknown: the lease runs out
                }
            }
        }
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
